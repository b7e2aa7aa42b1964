//! The interception CA: creating it once, loading it at start-up, and the
//! environment that makes clients inside a sandbox trust it.
//!
//! The CA lives in a directory as `ca.pem` (the certificate, world-readable,
//! handed to sandboxes) and `ca.key` (its PKCS#8 private key, owner-only).
//! Sluice never overwrites either file: losing a CA that sandboxes already
//! trust is worse than refusing to start.
//!
//! Where the CA lives inside the daemon's `state_dir` (the default), its
//! key is sealed under the state key like every other secret kept there
//! (`credentials::sealed`): created sealed, and a key an earlier version
//! wrote in the clear is rewritten sealed (the same key, so nothing that
//! trusts the CA changes). A CA elsewhere is the operator's and stays as
//! written; a sealed key is opened wherever it is.

use std::{
    fmt,
    fs::{self, DirBuilder, File, OpenOptions},
    io::{self, Read as _, Write as _},
    os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _},
    path::{Path, PathBuf},
};

use zeroize::Zeroizing;

use crate::credentials::sealed::{self, StateKey};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    PKCS_ECDSA_P256_SHA256, PublicKeyData as _,
};
use rustls::pki_types::{CertificateDer, pem::PemObject as _};
use time::{Duration, OffsetDateTime};
use x509_parser::{
    certificate::X509Certificate, oid_registry::OID_X509_EXT_SUBJECT_KEY_IDENTIFIER,
    prelude::FromDer,
};

const CERT_FILE: &str = "ca.pem";
const KEY_FILE: &str = "ca.key";
const COMMON_NAME: &str = "Sluice interception CA";
const CERT_MODE: u32 = 0o644;
const KEY_MODE: u32 = 0o600;
const DIR_MODE: u32 = 0o700;
/// Group and other permission bits; a key with any of them set is refused.
const KEY_FORBIDDEN_BITS: u32 = 0o077;
/// About ten years: the CA is installed into sandbox images, and rotating it
/// means rebuilding them.
const VALIDITY: Duration = Duration::days(3653);
/// Backdating tolerates sandboxes whose clocks run behind the host's.
const BACKDATE: Duration = Duration::hours(1);

#[derive(Debug, thiserror::Error)]
pub enum CaError {
    #[error("{0} already exists; Sluice never overwrites a CA (remove it first if you mean to)")]
    Exists(PathBuf),
    #[error("{0} does not exist; create a CA with `sluice ca init --dir <dir>`")]
    Missing(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("could not generate the CA: {0}")]
    Generate(String),
}

/// The interception CA: its certificate, and the key and subject rcgen needs
/// to sign leaves under it.
pub struct Ca {
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
    /// Whether leaves carry an authority key identifier: only when the CA
    /// certificate has a subject key identifier for it to point at (OpenSSL
    /// refuses a chain whose identifiers disagree).
    key_id: bool,
}

impl fmt::Debug for Ca {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key stays out of logs and test output.
        f.debug_struct("Ca")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

impl Ca {
    /// Creates an ECDSA P-256 self-signed CA ("Sluice interception CA",
    /// CA:true with path length 0, keyCertSign + cRLSign, ten years) and
    /// writes it to `dir/ca.pem` (0644) and `dir/ca.key` (0600, created with
    /// that mode so the key is never briefly readable by others). Creates
    /// `dir` (0700) if needed; refuses if either file already exists.
    pub fn init(dir: &Path) -> Result<Ca, CaError> {
        Self::init_sealed(dir, None)
    }

    /// [`Ca::init`], the key sealed under `seal` when one is given.
    pub fn init_sealed(dir: &Path, seal: Option<&StateKey>) -> Result<Ca, CaError> {
        let (cert_path, key_path) = (Self::cert_path(dir), Self::key_path(dir));
        for path in [&key_path, &cert_path] {
            if fs::symlink_metadata(path).is_ok() {
                return Err(CaError::Exists(path.clone()));
            }
        }
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)
            .map_err(|source| io_error(dir, source))?;

        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)
            .map_err(|e| CaError::Generate(e.to_string()))?;
        let params = ca_params();
        let cert = params
            .self_signed(&key)
            .map_err(|e| CaError::Generate(e.to_string()))?;

        // Key first: a crash in between leaves a key without a certificate,
        // which `load_or_init` reports instead of silently minting a new CA.
        let key_pem = Zeroizing::new(key.serialize_pem());
        let key_bytes = match seal {
            Some(state_key) => Zeroizing::new(
                sealed::seal(state_key, KEY_FILE, key_pem.as_bytes())
                    .map_err(|source| io_error(&key_path, source))?,
            ),
            None => Zeroizing::new(key_pem.as_bytes().to_vec()),
        };
        write_new(&key_path, KEY_MODE, &key_bytes)?;
        let cert_pem = cert.pem();
        if let Err(err) = write_new(&cert_path, CERT_MODE, cert_pem.as_bytes()) {
            // We created this key a moment ago; removing it is not an overwrite.
            let _ = fs::remove_file(&key_path);
            return Err(err);
        }
        Ok(Ca {
            cert_pem,
            cert_der: cert.der().clone(),
            issuer: Issuer::new(params, key),
            key_id: true,
        })
    }

    /// Loads the CA from `dir`, refusing a key file that group or others can
    /// access and a key that does not belong to the certificate.
    pub fn load(dir: &Path) -> Result<Ca, CaError> {
        Self::load_sealed(dir, None).map(|(ca, _)| ca)
    }

    /// [`Ca::load`], opening a sealed key with `key`. Also says whether the
    /// key file was in the clear.
    pub fn load_sealed(dir: &Path, key: Option<&StateKey>) -> Result<(Ca, bool), CaError> {
        let (cert_path, key_path) = (Self::cert_path(dir), Self::key_path(dir));
        let cert_pem = read_text(&cert_path, None)?;
        let key_bytes = read_bytes(&key_path, Some(KEY_FORBIDDEN_BITS))?;
        let clear = !sealed::is_sealed(&key_bytes);
        let key_pem = match (clear, key) {
            (true, _) => key_bytes,
            (false, Some(state_key)) => {
                sealed::open(state_key, KEY_FILE, &key_bytes).map_err(|e| CaError::Invalid {
                    path: key_path.clone(),
                    message: format!("{e}; give the daemon the state key it was sealed with"),
                })?
            }
            (false, None) => {
                return Err(CaError::Invalid {
                    path: key_path.clone(),
                    message: "sealed under the daemon's state key; only the daemon opens it"
                        .to_owned(),
                });
            }
        };
        let key_pem = std::str::from_utf8(&key_pem).map_err(|_| CaError::Invalid {
            path: key_path.clone(),
            message: "not a PEM file (not UTF-8 text)".to_owned(),
        })?;

        let invalid = |path: &Path, message: String| CaError::Invalid {
            path: path.to_owned(),
            message,
        };
        let cert_der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| invalid(&cert_path, format!("no PEM certificate in the file ({e})")))?;
        let key = KeyPair::from_pem(key_pem).map_err(|e| {
            invalid(
                &key_path,
                format!(
                    "not a usable PKCS#8 private key ({e}); convert one with \
                     `openssl pkcs8 -topk8 -nocrypt`"
                ),
            )
        })?;
        let (_, cert) = X509Certificate::from_der(&cert_der)
            .map_err(|e| invalid(&cert_path, format!("not an X.509 certificate ({e})")))?;
        if !cert.is_ca() {
            return Err(invalid(
                &cert_path,
                "not a CA certificate (basicConstraints CA:true is missing)".to_owned(),
            ));
        }
        if key.subject_public_key_info() != cert.public_key().raw {
            return Err(invalid(
                &key_path,
                format!("this key does not belong to {}", cert_path.display()),
            ));
        }
        // Leaves carry an authority key identifier only when the CA has a
        // (non-empty) subject key identifier to point at.
        let has_key_id = cert
            .extensions()
            .iter()
            .any(|ext| ext.oid == OID_X509_EXT_SUBJECT_KEY_IDENTIFIER && ext.value.len() > 2);
        let issuer = Issuer::from_ca_cert_der(&cert_der, key)
            .map_err(|e| invalid(&cert_path, format!("cannot sign with this CA ({e})")))?;
        check_issuer_name(&issuer, cert.subject().as_raw())
            .map_err(|message| invalid(&cert_path, message))?;
        let ca = Ca {
            cert_pem,
            cert_der: cert_der.into_owned(),
            issuer,
            key_id: has_key_id,
        };
        Ok((ca, clear))
    }

    /// Loads the CA from `dir`, or creates it there when neither file exists
    /// (the daemon's start-up). Returns whether it was created. Exactly one
    /// of the two files existing is an error: something removed half a CA.
    ///
    /// With `seal`, the key is kept sealed under it: created so, and
    /// rewritten so when found in the clear. Without, a sealed key still
    /// opens with `key`.
    pub fn load_or_init(
        dir: &Path,
        key: Option<&StateKey>,
        seal: bool,
    ) -> Result<(Ca, bool), CaError> {
        let (cert_path, key_path) = (Self::cert_path(dir), Self::key_path(dir));
        let exists = |path: &Path| fs::symlink_metadata(path).is_ok();
        let seal = key.filter(|_| seal);
        match (exists(&cert_path), exists(&key_path)) {
            (false, false) => Self::init_sealed(dir, seal).map(|ca| (ca, true)),
            (true, true) => {
                let (ca, clear) = Self::load_sealed(dir, key)?;
                if let (true, Some(state_key)) = (clear, seal) {
                    let pem = Zeroizing::new(ca.issuer.key().serialize_pem());
                    sealed::write(dir, KEY_FILE, state_key, pem.as_bytes())
                        .map_err(|source| io_error(&key_path, source))?;
                    tracing::info!(key = %key_path.display(), "sealed the CA key kept in the clear by an earlier version");
                }
                Ok((ca, false))
            }
            (has_cert, _) => {
                let (present, absent) = if has_cert {
                    (cert_path, key_path)
                } else {
                    (key_path, cert_path)
                };
                Err(CaError::Invalid {
                    message: format!(
                        "missing, but {} exists: the CA is incomplete; restore the \
                         missing file, or remove both and run `sluice ca init --dir {}`",
                        present.display(),
                        dir.display()
                    ),
                    path: absent,
                })
            }
        }
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    pub fn cert_der(&self) -> &CertificateDer<'static> {
        &self.cert_der
    }

    /// The CA certificate in `dir` (PEM), checked to be one, without
    /// reading the key.
    pub fn cert_pem_in(dir: &Path) -> Result<String, CaError> {
        let path = Self::cert_path(dir);
        let pem = read_text(&path, None)?;
        let der = CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|e| CaError::Invalid {
            path: path.clone(),
            message: format!("no PEM certificate in the file ({e})"),
        })?;
        match X509Certificate::from_der(&der) {
            Ok((_, cert)) if cert.is_ca() => Ok(pem),
            _ => Err(CaError::Invalid {
                path,
                message: "not a CA certificate".to_owned(),
            }),
        }
    }

    pub fn cert_path(dir: &Path) -> PathBuf {
        dir.join(CERT_FILE)
    }

    pub fn key_path(dir: &Path) -> PathBuf {
        dir.join(KEY_FILE)
    }

    /// Environment that makes common clients trust the CA at `ca_file`:
    /// OpenSSL and Go (`SSL_CERT_FILE`), Python requests, curl, Node, git,
    /// pip, the AWS SDKs and CLI, cargo and httplib2.
    ///
    /// These replace the system bundle for most of those clients, so
    /// `ca_file` should be a bundle (system roots plus the CA) when the
    /// sandbox also reaches hosts that pass through uninspected; Node's
    /// `NODE_EXTRA_CA_CERTS` adds to its roots instead. Java ignores all of
    /// these: it needs a truststore (`-Djavax.net.ssl.trustStore=…`), which
    /// is not produced here.
    pub fn env(ca_file: &Path) -> Vec<(&'static str, String)> {
        let file = ca_file.to_string_lossy().into_owned();
        [
            "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
            "NODE_EXTRA_CA_CERTS",
            "GIT_SSL_CAINFO",
            "PIP_CERT",
            "AWS_CA_BUNDLE",
            "CARGO_HTTP_CAINFO",
            "HTTPLIB2_CA_CERTS",
        ]
        .into_iter()
        .map(|var| (var, file.clone()))
        .collect()
    }

    pub(super) fn issuer(&self) -> &Issuer<'static, KeyPair> {
        &self.issuer
    }

    /// Whether leaves should carry an authority key identifier.
    pub(super) fn leaf_key_id(&self) -> bool {
        self.key_id
    }
}

/// Clients chain a leaf to the CA by comparing the leaf's issuer bytes with
/// the CA's subject bytes, so the subject rebuilt from a loaded certificate
/// must encode exactly as the original. A throwaway certificate signed by the
/// rebuilt issuer shows what leaves will carry.
fn check_issuer_name(issuer: &Issuer<'_, KeyPair>, subject_der: &[u8]) -> Result<(), String> {
    let probe = CertificateParams::default()
        .signed_by(issuer.key(), issuer)
        .map_err(|e| format!("cannot sign with this CA: {e}"))?;
    let (_, probe) = X509Certificate::from_der(probe.der()).map_err(|e| e.to_string())?;
    if probe.issuer().as_raw() != subject_der {
        return Err(
            "its subject name cannot be reproduced exactly in the leaves Sluice \
                    signs; use a CA made by `sluice ca init`"
                .to_owned(),
        );
    }
    Ok(())
}

fn ca_params() -> CertificateParams {
    let now = OffsetDateTime::now_utc();
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, COMMON_NAME);
    // Path length 0: this CA signs leaves only, never another CA.
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = now - BACKDATE;
    params.not_after = now + VALIDITY;
    params
}

fn io_error(path: &Path, source: io::Error) -> CaError {
    CaError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Creates `path` with `mode` (failing if it exists) and writes `contents`
/// durably: a CA lost to a crash right after creation would be re-created,
/// and sandboxes trusting the old one would break.
fn write_new(path: &Path, mode: u32, contents: &[u8]) -> Result<(), CaError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|source| match source.kind() {
            io::ErrorKind::AlreadyExists => CaError::Exists(path.to_owned()),
            _ => io_error(path, source),
        })?;
    // The umask may have narrowed the certificate's mode; it is public, so
    // widen it to what sandboxes need. The key is never chmod-ed: its
    // creation mode is already the narrowest.
    if mode == CERT_MODE {
        file.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(|source| io_error(path, source))?;
    }
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .map_err(|source| io_error(path, source))
}

/// Reads a key file whole, as [`read_text`] checks it, into a buffer
/// wiped when dropped.
fn read_bytes(path: &Path, forbidden_bits: Option<u32>) -> Result<Zeroizing<Vec<u8>>, CaError> {
    let mut file = open_checked(path, forbidden_bits)?;
    let mut bytes = Zeroizing::new(Vec::new());
    file.read_to_end(&mut bytes)
        .map_err(|source| io_error(path, source))?;
    Ok(bytes)
}

/// Reads a PEM file. With `forbidden_bits`, refuses a file whose mode has any
/// of them set, checked on the opened file so a swap cannot slip in between.
fn read_text(path: &Path, forbidden_bits: Option<u32>) -> Result<String, CaError> {
    let mut file = open_checked(path, forbidden_bits)?;
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|source| match source.kind() {
            io::ErrorKind::InvalidData => CaError::Invalid {
                path: path.to_owned(),
                message: "not a PEM file (not UTF-8 text)".to_owned(),
            },
            _ => io_error(path, source),
        })?;
    Ok(text)
}

fn open_checked(path: &Path, forbidden_bits: Option<u32>) -> Result<File, CaError> {
    let file = File::open(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => CaError::Missing(path.to_owned()),
        _ => io_error(path, source),
    })?;
    if let Some(bits) = forbidden_bits {
        let mode = file
            .metadata()
            .map_err(|source| io_error(path, source))?
            .permissions()
            .mode();
        if mode & bits != 0 {
            return Err(CaError::Invalid {
                path: path.to_owned(),
                message: format!(
                    "mode {:04o} lets group or others read the CA key; run `chmod 600 {}`",
                    mode & 0o7777,
                    path.display()
                ),
            });
        }
    }
    Ok(file)
}
