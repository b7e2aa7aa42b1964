//! How Sluice trusts the upstreams it connects to for a sandbox: which roots
//! it verifies them against, and how a failed upstream handshake is told
//! back to the sandbox (a 502 body) and to operators (a metric label).
//!
//! Upstreams are always verified: the sandbox trusts Sluice's CA for every
//! name, so Sluice is the only party left that can notice a bad upstream
//! certificate.

use std::{
    fs, io,
    path::{Path, PathBuf},
    sync::Arc,
};

use rustls::{
    CertificateError, ClientConfig, RootCertStore,
    pki_types::{CertificateDer, pem::PemObject as _},
};

use super::{VERSIONS, provider};

#[derive(Debug, thiserror::Error)]
pub enum UpstreamTlsError {
    #[error("cannot read upstream CA file {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{0} holds no PEM certificates; upstream_ca_files entries must be PEM bundles")]
    NoCertificates(PathBuf),
    #[error("{path}: {message}; upstream_ca_files entries must be PEM bundles of CA certificates")]
    Invalid { path: PathBuf, message: String },
    #[error("no trusted roots: enable system_roots or give upstream_ca_files")]
    NoRoots,
    #[error(
        "the TLS provider rejected the protocol versions: {0} (a build problem, not a config one)"
    )]
    Provider(rustls::Error),
}

/// A client config for upstream connections. Roots are the system's
/// (rustls-native-certs; certificates that fail to parse are logged and
/// skipped) when `system_roots`, plus every certificate in the `extra` PEM
/// files, where any bad certificate is an error: an operator named it.
/// ALPN is as given (e.g. `["h2", "http/1.1"]` or `["http/1.1"]`).
///
/// Build it once and share it: the config holds the session cache that lets
/// reconnects to the same upstream resume.
pub fn client_config(
    system_roots: bool,
    extra: &[PathBuf],
    alpn: Vec<Vec<u8>>,
) -> Result<Arc<ClientConfig>, UpstreamTlsError> {
    let mut roots = RootCertStore::empty();
    if system_roots {
        add_system_roots(&mut roots);
    }
    for path in extra {
        add_pem_file(&mut roots, path)?;
    }
    if roots.is_empty() {
        return Err(UpstreamTlsError::NoRoots);
    }
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(VERSIONS)
        .map_err(UpstreamTlsError::Provider)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn;
    Ok(Arc::new(config))
}

fn add_system_roots(roots: &mut RootCertStore) {
    let found = rustls_native_certs::load_native_certs();
    for err in &found.errors {
        tracing::warn!(error = %err, "skipping unreadable system root certificates");
    }
    let (added, ignored) = roots.add_parsable_certificates(found.certs);
    if ignored > 0 {
        tracing::warn!(
            added,
            ignored,
            "skipped system root certificates that do not parse"
        );
    }
    if added == 0 {
        tracing::warn!("no system root certificates found; only upstream_ca_files are trusted");
    }
}

fn add_pem_file(roots: &mut RootCertStore, path: &Path) -> Result<(), UpstreamTlsError> {
    let pem = fs::read(path).map_err(|source| UpstreamTlsError::Io {
        path: path.to_owned(),
        source,
    })?;
    let invalid = |message: String| UpstreamTlsError::Invalid {
        path: path.to_owned(),
        message,
    };
    let mut count = 0;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| invalid(format!("bad PEM ({e})")))?;
        roots
            .add(cert)
            .map_err(|e| invalid(format!("certificate {} is unusable ({e})", count + 1)))?;
        count += 1;
    }
    if count == 0 {
        return Err(UpstreamTlsError::NoCertificates(path.to_owned()));
    }
    Ok(())
}

/// A short, stable reason for a failed upstream connection or handshake, for
/// a 502 body and a metric label, with a sentence for people.
pub fn describe(err: &io::Error, name: &str) -> (&'static str, String) {
    match find_tls_error(err) {
        Some(tls) => describe_tls(tls, name),
        None => ("connect_failed", err.to_string()),
    }
}

/// tokio-rustls reports a handshake failure as an `io::Error` wrapping the
/// `rustls::Error`; other layers may wrap that again. `io::Error::source`
/// skips the error it wraps, so each io::Error is opened with `get_ref`.
fn find_tls_error(err: &io::Error) -> Option<&rustls::Error> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = next {
        if let Some(tls) = current.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match current.downcast_ref::<io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => current.source(),
        };
    }
    None
}

fn describe_tls(err: &rustls::Error, name: &str) -> (&'static str, String) {
    let rustls::Error::InvalidCertificate(cert) = err else {
        let text = match err {
            rustls::Error::AlertReceived(alert) => {
                format!("the upstream ended the TLS handshake with alert {alert:?}")
            }
            other => format!("the TLS handshake with the upstream failed: {other}"),
        };
        return ("tls_error", text);
    };
    match cert {
        CertificateError::UnknownIssuer => (
            "untrusted_certificate",
            "the upstream's certificate is not signed by a trusted CA".to_owned(),
        ),
        CertificateError::NotValidForName => (
            "certificate_name_mismatch",
            format!("the upstream's certificate is not valid for {name}"),
        ),
        CertificateError::NotValidForNameContext { presented, .. } => (
            "certificate_name_mismatch",
            format!(
                "the upstream's certificate is not valid for {name} (it names {})",
                names(presented)
            ),
        ),
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => (
            "certificate_expired",
            "the upstream's certificate has expired".to_owned(),
        ),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => (
            "certificate_expired",
            "the upstream's certificate is not valid yet (or Sluice's clock is wrong)".to_owned(),
        ),
        other => (
            "bad_certificate",
            format!("the upstream's certificate was rejected: {other}"),
        ),
    }
}

/// The first few names a certificate presents; the rest are counted.
fn names(presented: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut text = presented
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if presented.is_empty() {
        text.push_str("no names");
    } else if presented.len() > SHOWN {
        text.push_str(&format!(" and {} more", presented.len() - SHOWN));
    }
    text
}
