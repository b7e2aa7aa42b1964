//! The steered-connection path: accept, recover who and where, sniff the
//! first bytes for a name, decide, then relay or reset.
//!
//! Deciding is `allow::Allowlist::decide` (pure); this module is the I/O
//! around it. Every verdict is counted and audited; a refused connection is
//! reset, never half-served.

pub mod relay;
pub mod sniff;
#[cfg(test)]
mod tests;

use std::{
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::{
    io::AsyncReadExt as _,
    net::{TcpListener, TcpStream},
};

use crate::{
    allow::{Allowlist, Decision},
    audit::{Audit, Event},
    metrics::Metrics,
    resolve::Resolver,
    steer::OrigDstSource,
};
use sniff::{MAX_SNIFF_BYTES, Sniffed};

/// The sandbox (and session) behind a registered cgroup, with its policy.
#[derive(Clone)]
pub struct Who {
    pub sandbox: Arc<str>,
    pub session: Option<Arc<str>>,
    pub allow: Arc<Allowlist>,
}

/// Maps a registered cgroup id to its owner.
pub trait Identities: Send + Sync + 'static {
    fn who(&self, identity: u64) -> Option<Who>;
}

/// Timeouts for one connection.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub sniff: Duration,
    pub connect: Duration,
}

/// Everything a connection handler needs; shared by all listeners.
pub struct Proxy {
    pub orig: Arc<dyn OrigDstSource>,
    pub identities: Arc<dyn Identities>,
    pub resolver: Arc<Resolver>,
    pub metrics: Arc<Metrics>,
    pub audit: Audit,
    pub limits: Limits,
}

/// What the first bytes told us.
#[derive(Debug, Default)]
struct FirstBytes {
    buf: Vec<u8>,
    sni: Option<String>,
    host: Option<String>,
    /// The bytes were neither TLS nor HTTP, or were malformed.
    opaque: bool,
}

impl Proxy {
    /// Accepts connections on one listener of the namespace `netns` until the
    /// task is dropped.
    pub async fn serve(self: Arc<Self>, listener: TcpListener, netns: u64) {
        loop {
            match listener.accept().await {
                Ok((stream, peer)) => {
                    let proxy = self.clone();
                    tokio::spawn(async move { proxy.handle(stream, peer, netns).await });
                }
                Err(err) => {
                    // EMFILE and friends: back off a little instead of spinning.
                    tracing::warn!(%err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    async fn handle(&self, client: TcpStream, peer: SocketAddr, netns: u64) {
        self.metrics.active_connections.inc();
        let _active = scopeguard(&self.metrics);
        let Some(steered) = self.orig.take(netns, peer) else {
            // Not steered by our programs (e.g. a direct connection to the
            // listener, or an entry evicted under pressure): nothing to relay to.
            self.deny(&client, None, None, "no_original_destination", None, None);
            return;
        };
        let dst = steered.dst;
        let Some(who) = self.identities.who(steered.identity) else {
            self.deny(&client, None, Some(dst), "unknown_identity", None, None);
            return;
        };
        let mut client = client;

        // A name only matters when the address alone does not already allow
        // the connection; server-first protocols then go through at once.
        let by_address = who.allow.decide(dst, None, &[]);
        let first = if matches!(by_address, Decision::Allow { .. }) {
            FirstBytes::default()
        } else {
            match self.read_first_bytes(&mut client).await {
                Some(first) => first,
                None => {
                    // Closed before saying anything: not worth a log line.
                    self.metrics
                        .connections
                        .with_label_values(&["closed", "client_closed_early"])
                        .inc();
                    return;
                }
            }
        };

        let decision = if first.opaque {
            by_address
        } else {
            let name = first.sni.as_deref().or(first.host.as_deref());
            let addrs = match name {
                Some(name) if who.allow.names_host(name) => {
                    self.resolver.lookup_ip(name).await.unwrap_or_default()
                }
                _ => Vec::new(),
            };
            who.allow.decide(dst, name, &addrs)
        };

        match decision {
            Decision::Deny { reason } => {
                self.deny(
                    &client,
                    Some(&who),
                    Some(dst),
                    reason.as_str(),
                    first.sni.as_deref(),
                    first.host.as_deref(),
                );
            }
            Decision::Allow { rule } => {
                self.metrics
                    .connections
                    .with_label_values(&["allow", "rule_matched"])
                    .inc();
                self.audit.record(&Event {
                    event: "connection",
                    verdict: "allow",
                    reason: "rule_matched",
                    rule: Some(&rule),
                    sandbox: Some(&who.sandbox),
                    session: who.session.as_deref(),
                    dst: Some(dst.to_string()),
                    sni: first.sni.as_deref(),
                    host: first.host.as_deref(),
                    ..Event::default()
                });
                self.forward(client, dst, &first.buf).await;
            }
        }
    }

    /// Reads until the first bytes name a destination (or cannot), the buffer
    /// is full, or the sniff timeout passes. `None`: the client closed first.
    async fn read_first_bytes(&self, client: &mut TcpStream) -> Option<FirstBytes> {
        let deadline = Instant::now() + self.limits.sniff;
        let mut first = FirstBytes {
            buf: Vec::with_capacity(4096),
            ..FirstBytes::default()
        };
        loop {
            match sniff::sniff(&first.buf) {
                Sniffed::NeedMore if first.buf.len() < MAX_SNIFF_BYTES => {}
                Sniffed::NeedMore | Sniffed::Opaque => {
                    first.opaque = true;
                    return Some(first);
                }
                Sniffed::Tls { sni } => {
                    first.sni = sni;
                    return Some(first);
                }
                Sniffed::Http { host } => {
                    first.host = host;
                    return Some(first);
                }
            }
            let room = MAX_SNIFF_BYTES - first.buf.len();
            let read = tokio::time::timeout_at(
                deadline.into(),
                (&mut *client).take(room as u64).read_buf(&mut first.buf),
            )
            .await;
            match read {
                Ok(Ok(0)) if first.buf.is_empty() => return None,
                Ok(Ok(0)) | Err(_) => {
                    // EOF mid-hello, or silence: decide on the address alone.
                    first.opaque = true;
                    return Some(first);
                }
                Ok(Ok(_)) => {}
                Ok(Err(_)) => return None,
            }
        }
    }

    async fn forward(&self, client: TcpStream, dst: SocketAddr, prefix: &[u8]) {
        let upstream =
            match tokio::time::timeout(self.limits.connect, TcpStream::connect(dst)).await {
                Ok(Ok(upstream)) => upstream,
                Ok(Err(err)) => {
                    tracing::debug!(%dst, %err, "upstream connect failed");
                    self.upstream_failed(&client, "upstream_refused");
                    return;
                }
                Err(_) => {
                    self.upstream_failed(&client, "upstream_timeout");
                    return;
                }
            };
        let _ = upstream.set_nodelay(true);
        let _ = client.set_nodelay(true);
        let (up, down) = relay::relay(client, upstream, prefix).await;
        self.metrics
            .relay_bytes
            .with_label_values(&["upstream"])
            .inc_by(up);
        self.metrics
            .relay_bytes
            .with_label_values(&["downstream"])
            .inc_by(down);
    }

    fn upstream_failed(&self, client: &TcpStream, reason: &str) {
        self.metrics
            .connections
            .with_label_values(&["error", reason])
            .inc();
        reset(client);
    }

    fn deny(
        &self,
        client: &TcpStream,
        who: Option<&Who>,
        dst: Option<SocketAddr>,
        reason: &str,
        sni: Option<&str>,
        host: Option<&str>,
    ) {
        self.metrics
            .connections
            .with_label_values(&["deny", reason])
            .inc();
        self.audit.record(&Event {
            event: "connection",
            verdict: "deny",
            reason,
            sandbox: who.map(|w| &*w.sandbox),
            session: who.and_then(|w| w.session.as_deref()),
            dst: dst.map(|d| d.to_string()),
            sni,
            host,
            ..Event::default()
        });
        reset(client);
    }
}

/// Makes the close a reset: the sandbox sees the refusal at once instead of
/// an orderly end of a stream it may take for a reply.
#[expect(
    deprecated,
    reason = "tokio warns that SO_LINGER blocks on drop; a zero linger does not block, it resets"
)]
fn reset(stream: &TcpStream) {
    let _ = stream.set_linger(Some(Duration::ZERO));
}

/// Decrements the active-connection gauge when the handler ends, however it ends.
fn scopeguard(metrics: &Arc<Metrics>) -> impl Drop + '_ {
    struct Guard<'a>(&'a Metrics);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            self.0.active_connections.dec();
        }
    }
    Guard(metrics)
}
