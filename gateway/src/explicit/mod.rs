//! The explicit-proxy listener for sandboxes that are not on this node
//! (remote VMs): they cannot be steered by eBPF, so they reach Sluice as an
//! HTTP proxy (CONNECT, and absolute-form plain HTTP), and identify with a
//! capability token (`token`) in `Proxy-Authorization`.

mod decide;
pub mod head;
pub mod listener;
pub mod token;

use std::{net::SocketAddr, path::PathBuf};

use serde::Deserialize;

/// The daemon config's `explicit_proxy:` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplicitProxyConfig {
    /// Where the proxy listens; port 0 picks a free one (`sluice status`
    /// reports it).
    pub listen: SocketAddr,
    /// The Ed25519 public key (PEM, `PUBLIC KEY`) capability tokens are
    /// verified with; `sluice token keygen` writes a pair.
    pub public_key_file: PathBuf,
    /// The sandboxes served here: a token naming any other is refused.
    pub sandboxes: Vec<RemoteSandbox>,
    /// The longest a token may have left to live, in seconds: one minted
    /// with a farther expiry is refused (`token_lifetime`), so a leaked
    /// token cannot outlast it.
    #[serde(default = "default_max_token_lifetime")]
    pub max_token_lifetime_secs: u64,
    /// This node's name for tokens' `aud`: a token naming an audience is
    /// taken only where it names this one (unset: none is).
    #[serde(default)]
    pub audience: Option<String>,
    /// Connections open at once that have not shown a valid token yet:
    /// past it, new ones are closed at once, so clients without a token
    /// cannot hold every socket and head buffer the daemon has.
    #[serde(default = "default_max_pending_connections")]
    pub max_pending_connections: usize,
    /// Of those, how many one source address may hold (an IPv6 source's
    /// /64 counted as one), so one client cannot take them all from the
    /// others.
    #[serde(default = "default_max_pending_per_source")]
    pub max_pending_per_source: usize,
}

fn default_max_pending_per_source() -> usize {
    64
}

fn default_max_pending_connections() -> usize {
    1024
}

fn default_max_token_lifetime() -> u64 {
    token::MAX_LIFETIME_SECS
}

/// A sandbox off this node: its id (the token's `sub`) and its policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteSandbox {
    pub id: String,
    pub policy: String,
}

impl ExplicitProxyConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.max_pending_connections == 0 || self.max_pending_per_source == 0 {
            return Err(
                "explicit_proxy.max_pending_connections and max_pending_per_source must be at least 1"
                    .to_owned(),
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for sandbox in &self.sandboxes {
            crate::registry::valid_id(&sandbox.id)
                .map_err(|e| format!("explicit_proxy.sandboxes: {e}"))?;
            if !seen.insert(&sandbox.id) {
                return Err(format!(
                    "explicit_proxy.sandboxes: id `{}` appears twice",
                    sandbox.id
                ));
            }
        }
        Ok(())
    }
}
