//! Who is talking on a connection, and whether what it was admitted under
//! still holds. Every listener (steered, explicit proxy) finds its
//! [`Who`] when a connection opens; the interception stages read it, and
//! [`revoked`] ends the connection once its sandbox, session or policy
//! changes.

use std::sync::Arc;

use crate::{
    dns,
    metrics::Metrics,
    policy::{compiled::CompiledPolicy, network::NetworkPolicy, overlay::Overlaid},
    process::Process,
};

/// The sandbox (and session) behind a registered cgroup, with the policy in
/// force when the connection arrived.
#[derive(Clone)]
pub struct Who {
    pub sandbox: Arc<str>,
    pub session: Option<Arc<str>>,
    pub policy: Arc<CompiledPolicy>,
    /// The sandbox's DNS gate, for DNS over TCP.
    pub dns: Arc<dyn dns::Gate>,
    /// Answer writes with a preview whatever the policy says (a capability
    /// token's dry-run flag).
    pub dry_run: bool,
    /// The catalogued apps (`app`) or actions (`app.action`) the
    /// connection's requests may use, where a capability token narrows
    /// them (`tools`); `None`: whatever the policy allows.
    pub tools: Option<Arc<[String]>>,
    /// The cgroup id the connection came from; `None` on the explicit
    /// proxy, whose token names the sandbox.
    pub identity: Option<u64>,
    /// The program that opened the connection, where the kernel saw it
    /// (steered connections); `None` on the explicit proxy.
    pub process: Option<Arc<Process>>,
    /// The sandbox's network policy with its overlay's allow rules
    /// (`policy::overlay`), where it has some; decisions use
    /// [`Who::network`].
    pub overlay: Option<Arc<Overlaid>>,
}

impl Who {
    /// The network policy this connection is decided by: the policy's,
    /// or the sandbox's overlay compiled with it.
    pub fn network(&self) -> &NetworkPolicy {
        Overlaid::or_policy(self.overlay.as_deref(), &self.policy)
    }

    /// What reads the first bytes of this sandbox's connections to
    /// `port`: its policy ([`CompiledPolicy::first_bytes_reader`]), or a
    /// dry run its token asks for (each request is previewed). `None`:
    /// nothing does, and the bytes may be relayed unread.
    pub fn first_bytes_reader(&self, port: u16) -> Option<&'static str> {
        let by_overlay = self
            .overlay
            .as_ref()
            .is_some_and(|overlaid| overlaid.network.name_rules_apply(port));
        let reader = match by_overlay {
            true => Some("overlay.allow_out"),
            false => self.policy.first_bytes_reader(port),
        };
        reader.or(self.dry_run.then_some("dry_run"))
    }
}

/// Maps a registered cgroup id to its owner.
pub trait Identities: Send + Sync + 'static {
    fn who(&self, identity: u64) -> Option<Who>;
}

/// Whether what a connection was admitted under still holds. A connection
/// is decided once, at its start; a policy reload or the removal of its
/// sandbox (or session) must still reach one kept open, so every
/// connection Sluice carries watches for changes ([`revoked`]) and closes
/// when its owner or policy is no longer current: an intercepted one once
/// its requests in flight are answered, a relayed or upgraded stream at
/// once. Clients reconnect, and the new connection is decided afresh.
pub trait Standing: Send + Sync + 'static {
    /// Ticks after every change that may revoke a connection.
    fn changes(&self) -> tokio::sync::watch::Receiver<u64>;
    /// Whether `who`'s sandbox and session are still registered under the
    /// same cgroup and its policy is the one in force.
    fn holds(&self, who: &Who) -> bool;
}

/// Resolves once what `who` was admitted under no longer holds (a policy
/// reload, its sandbox or session removed), counted as a connection closed
/// for that reason: the caller closes the connection then.
pub async fn revoked(standing: &dyn Standing, who: &Who, metrics: &Metrics) {
    // Subscribed before the first check: a change made since `who` was
    // looked up (while the connection was sniffed, dialled or handshaken)
    // is caught by the check, any later one by the channel.
    let mut changes = standing.changes();
    loop {
        if !standing.holds(who) {
            break;
        }
        if changes.changed().await.is_err() {
            // The sender is gone with the daemon: nothing changes any more.
            return std::future::pending().await;
        }
    }
    tracing::debug!(sandbox = %who.sandbox, policy = %who.policy.name,
        "policy or registration changed; closing a connection admitted under it");
    metrics
        .connections
        .with_label_values(&["closed", "revoked"])
        .inc();
}

/// What an open connection holds until it ends (its count among the
/// active connections, its place in the drain, its sandbox's connection
/// slot): shared with the stream an HTTP upgrade hands over, which lives
/// on after the HTTP connection, so a WebSocket is counted and capped as
/// long as it is open.
pub type Held = Arc<dyn Send + Sync>;
