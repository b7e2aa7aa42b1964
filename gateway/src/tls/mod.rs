//! TLS for interception: the CA Sluice signs with (`ca`), the per-name leaf
//! certificates it serves to sandboxes (`mint`), and how it trusts the real
//! upstreams it connects to on their behalf (`upstream`).
//!
//! Every rustls config built here names the ring provider explicitly
//! (`provider`); nothing depends on a process-wide default provider, so
//! another crate installing one cannot change what Sluice accepts.

pub mod ca;
pub mod mint;
#[cfg(test)]
mod tests;
pub mod upstream;

use std::sync::{Arc, LazyLock};

use rustls::crypto::CryptoProvider;

pub use ca::{Ca, CaError};
pub use mint::{MintError, Minter};
pub use upstream::{UpstreamTlsError, client_config, describe};

/// The protocol versions Sluice speaks on both sides: TLS 1.3 first, 1.2 for
/// the clients and upstreams that still need it.
pub(crate) static VERSIONS: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

/// A client config that trusts no certificate: for tests whose TLS must
/// never get through (or never start).
#[cfg(test)]
pub(crate) fn trusting_nothing() -> Arc<rustls::ClientConfig> {
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    Arc::new(config)
}

/// The crypto provider for every config in this module (ring, its defaults).
pub(crate) fn provider() -> Arc<CryptoProvider> {
    // Built once: the provider is immutable and shared by every config.
    static PROVIDER: LazyLock<Arc<CryptoProvider>> =
        LazyLock::new(|| Arc::new(rustls::crypto::ring::default_provider()));
    PROVIDER.clone()
}
