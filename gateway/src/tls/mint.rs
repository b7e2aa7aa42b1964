//! Leaf certificates for the names sandboxes connect to: minted on first use,
//! signed by the interception CA, cached, and re-minted before they expire.
//!
//! Minting is single-flight: when many connections ask for a new name at the
//! same moment, one of them mints and the others await its result on the
//! same `tokio::sync::OnceCell`. The std mutex around the LRU is held only to
//! find or insert that cell, never across an await.
//!
//! Minting runs inline on the calling task rather than in `spawn_blocking`:
//! one leaf (P-256 key generation, one signature, rustls loading the key)
//! costs about 75 µs in a release build (`mint_cost_is_small` prints it),
//! the same order as the ECDHE and signature of the TLS handshake that needs
//! the leaf, which tokio-rustls also runs inline, and it happens only for a
//! name not in the cache. A hop to the blocking pool would add a thread
//! switch to every such connection, and would keep minting after the
//! connection that asked for it has gone away.
//!
//! A sandbox that connects to ever-new names makes Sluice sign for each
//! and pushes other sandboxes' leaves out of the cache, so minting for a
//! name not cached is counted per sandbox ([`Minter::leaf_for`]): at most
//! `tls.max_mints_per_second` a second, twice that at once. Names already
//! cached, and leaves re-minted before they expire, cost nothing.

use std::{
    collections::HashMap,
    net::IpAddr,
    num::NonZeroUsize,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant, SystemTime},
};

use lru::LruCache;
use prometheus::IntCounter;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, KeyPair,
    KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType, string::Ia5String,
};
use rustls::{
    ServerConfig,
    pki_types::{DnsName, PrivateKeyDer, PrivatePkcs8KeyDer},
    server::{ClientHello, ResolvesServerCert, ServerSessionMemoryCache},
    sign::{CertifiedKey, SingleCertAndKey},
};
use time::OffsetDateTime;
use tokio::sync::OnceCell;

use super::{Ca, VERSIONS, provider};
use crate::bucket::Bucket;

/// Backdating tolerates sandboxes whose clocks run behind the host's.
const BACKDATE: Duration = Duration::from_secs(60 * 60);
/// The longest CN X.520 allows; longer names go in the SAN only, which is
/// what clients match anyway.
const MAX_COMMON_NAME: usize = 64;
/// Sessions remembered for resumption, shared by every served config (each
/// entry is a few hundred bytes). rustls resumes only for the SNI a session
/// was made for, so sharing across names is safe.
const SESSION_CACHE: usize = 4096;
/// Sandboxes whose mint budgets are kept before idle ones are dropped.
const MAX_BUDGETS: usize = 4096;
/// How much of an invalid name an error repeats: names come from sandboxes.
const MAX_NAME_IN_ERROR: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum MintError {
    #[error(
        "cannot mint a certificate for {0:?}: not a valid DNS name or IP address \
         (wildcards and empty labels are refused)"
    )]
    InvalidName(String),
    #[error("could not sign a leaf certificate with the CA: {0} (check the CA with `sluice ca`)")]
    Sign(String),
    #[error("the sandbox asked for more new names than `tls.max_mints_per_second` allows")]
    RateLimited,
}

/// A minted leaf and when to replace it.
struct Minted {
    key: Arc<CertifiedKey>,
    refresh_at: SystemTime,
}

/// A cache entry: empty while its first caller is minting.
type Slot = Arc<OnceCell<Minted>>;

type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// Mints, caches and serves leaf certificates signed by the CA.
pub struct Minter {
    ca: Arc<Ca>,
    validity: Duration,
    minted: IntCounter,
    cache: Mutex<LruCache<String, Slot>>,
    /// Everything a served config has but its certificate.
    base: ServerConfig,
    /// Wall-clock time: leaf validity is wall-clock, so refreshing follows it.
    now: Clock,
    /// Mints for names not cached, per sandbox and second; `None`: no limit.
    mint_rate: Option<u32>,
    /// Each sandbox's budget of mints ([`Minter::leaf_for`]).
    budgets: Mutex<HashMap<Arc<str>, Bucket>>,
}

impl Minter {
    /// `capacity` names are cached (at least one); leaves are valid for
    /// `validity` from minting. `minted` is bumped once per certificate
    /// actually minted (metric `sluice_certificates_minted_total`).
    pub fn new(ca: Arc<Ca>, capacity: usize, validity: Duration, minted: IntCounter) -> Minter {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        let mut base = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(VERSIONS)
            // Not input: ring ships TLS 1.2 and 1.3 suites, so this holds
            // for every build (`server_config_offers_both_versions_and_alpn`).
            .expect("the ring provider supports TLS 1.2 and 1.3")
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(NoCertificate));
        base.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        base.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
        Minter {
            ca,
            validity,
            minted,
            cache: Mutex::new(LruCache::new(capacity)),
            base,
            now: Arc::new(SystemTime::now),
            mint_rate: None,
            budgets: Mutex::new(HashMap::new()),
        }
    }

    /// Limits mints for names not cached to `per_second` per sandbox
    /// (twice that at once), in [`Minter::leaf_for`].
    pub fn with_mint_rate(mut self, per_second: u32) -> Self {
        self.mint_rate = Some(per_second);
        self
    }

    /// [`Minter::leaf`] for a connection of `sandbox`: a name not in the
    /// cache is minted only within the sandbox's budget
    /// ([`MintError::RateLimited`] beyond it).
    pub async fn leaf_for(
        &self,
        sandbox: &Arc<str>,
        name: &str,
    ) -> Result<Arc<CertifiedKey>, MintError> {
        self.leaf_charged(name, Some(sandbox)).await
    }

    /// The leaf for `name` (a DNS name, or an IP literal for an IP SAN),
    /// with the chain served as [leaf, CA].
    ///
    /// Minted at most once even when many connections ask at the same
    /// moment, cached (LRU), and re-minted once less than a quarter of its
    /// validity is left. The leaf is ECDSA P-256 with SAN and CN = the name,
    /// valid from an hour ago (clock skew) for `validity`, EKU serverAuth.
    pub async fn leaf(&self, name: &str) -> Result<Arc<CertifiedKey>, MintError> {
        self.leaf_charged(name, None).await
    }

    async fn leaf_charged(
        &self,
        name: &str,
        sandbox: Option<&Arc<str>>,
    ) -> Result<Arc<CertifiedKey>, MintError> {
        let (key, san) = canonical(name)?;
        let now = (self.now)();
        let slot = {
            let mut cache = self.lock();
            match cache.get(&key) {
                Some(slot) if slot.get().is_none_or(|m| now < m.refresh_at) => slot.clone(),
                // A name new to the cache: the sandbox pays (a leaf due for
                // refresh is the clock's doing, not the sandbox's).
                None if !self.within_budget(sandbox) => return Err(MintError::RateLimited),
                _ => {
                    let slot = Slot::default();
                    cache.put(key.clone(), slot.clone());
                    slot
                }
            }
        };
        let minted = slot
            .get_or_try_init(|| async { self.mint(&key, san, now) })
            .await;
        match minted {
            Ok(minted) => Ok(minted.key.clone()),
            Err(err) => {
                // Drop the empty slot so the cache holds only usable leaves;
                // a later caller tries afresh.
                let mut cache = self.lock();
                if cache
                    .peek(&key)
                    .is_some_and(|s| Arc::ptr_eq(s, &slot) && s.get().is_none())
                {
                    cache.pop(&key);
                }
                Err(err)
            }
        }
    }

    /// A server config (TLS 1.2 and 1.3, ALPN `h2`, `http/1.1`) that serves
    /// exactly `leaf`. Configs share one session cache, so a sandbox that
    /// reconnects to the same name can resume.
    pub fn server_config(&self, leaf: Arc<CertifiedKey>) -> Arc<ServerConfig> {
        let mut config = self.base.clone();
        config.cert_resolver = Arc::new(SingleCertAndKey::from(leaf));
        Arc::new(config)
    }

    /// Names in the cache, including any being minted right now.
    /// The CA certificate (PEM) the leaves chain to.
    pub fn ca_pem(&self) -> &str {
        self.ca.cert_pem()
    }

    pub fn cached(&self) -> usize {
        self.lock().len()
    }

    /// Replaces the wall clock, so tests can age leaves without waiting.
    #[cfg(test)]
    pub(super) fn with_clock(
        mut self,
        now: impl Fn() -> SystemTime + Send + Sync + 'static,
    ) -> Self {
        self.now = Arc::new(now);
        self
    }

    /// Spends one mint of `sandbox`'s budget, if the rate is limited.
    fn within_budget(&self, sandbox: Option<&Arc<str>>) -> bool {
        let (Some(rate), Some(sandbox)) = (self.mint_rate, sandbox) else {
            return true;
        };
        let mut budgets = self.budgets.lock().unwrap_or_else(PoisonError::into_inner);
        if budgets.len() >= MAX_BUDGETS && !budgets.contains_key(sandbox) {
            // Sandboxes come and go; a full bucket is one that has not
            // minted for two seconds and loses nothing by being dropped.
            let now = Instant::now();
            budgets.retain(|_, bucket| !bucket.is_full(now, rate));
        }
        let bucket = budgets.entry(sandbox.clone()).or_default();
        bucket.take(Instant::now(), rate)
    }

    fn lock(&self) -> MutexGuard<'_, LruCache<String, Slot>> {
        // Nothing panics while the lock is held, and the LRU is consistent
        // between calls, so a poisoned lock still guards a usable cache.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn mint(&self, name: &str, san: SanType, now: SystemTime) -> Result<Minted, MintError> {
        let sign = |e: &dyn std::fmt::Display| MintError::Sign(e.to_string());
        let not_after = now
            .checked_add(self.validity)
            .ok_or_else(|| sign(&"the configured leaf validity is too long"))?;
        let not_before = now.checked_sub(BACKDATE).unwrap_or(now);

        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|e| sign(&e))?;
        let mut params = CertificateParams::default();
        params.subject_alt_names = vec![san];
        params.distinguished_name = DistinguishedName::new();
        if name.len() <= MAX_COMMON_NAME {
            params.distinguished_name.push(DnType::CommonName, name);
        }
        params.not_before = OffsetDateTime::from(not_before);
        params.not_after = OffsetDateTime::from(not_after);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = self.ca.leaf_key_id();
        let cert = params
            .signed_by(&key, self.ca.issuer())
            .map_err(|e| sign(&e))?;

        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let signer = provider()
            .key_provider
            .load_private_key(der)
            .map_err(|e| sign(&e))?;
        let chain = vec![cert.der().clone(), self.ca.cert_der().clone()];
        self.minted.inc();
        Ok(Minted {
            key: Arc::new(CertifiedKey::new(chain, signer)),
            // Re-mint once less than a quarter of the validity is left.
            refresh_at: not_after.checked_sub(self.validity / 4).unwrap_or(now),
        })
    }
}

/// The cache key and SAN for `name`: IP literals in their canonical text,
/// DNS names lowercased without a trailing dot (both spellings reach the
/// same host, so they share one leaf).
fn canonical(name: &str) -> Result<(String, SanType), MintError> {
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Ok((ip.to_string(), SanType::IpAddress(ip)));
    }
    let invalid = || MintError::InvalidName(name.chars().take(MAX_NAME_IN_ERROR).collect());
    let dns = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    // DnsName enforces label syntax and lengths (and refuses `*`, so a
    // sandbox cannot obtain a wildcard leaf).
    DnsName::try_from(dns.as_str()).map_err(|_| invalid())?;
    let san = Ia5String::try_from(dns.as_str()).map_err(|_| invalid())?;
    Ok((dns, SanType::DnsName(san)))
}

/// The resolver of the template config; every served config replaces it.
#[derive(Debug)]
struct NoCertificate;

impl ResolvesServerCert for NoCertificate {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        None
    }
}
