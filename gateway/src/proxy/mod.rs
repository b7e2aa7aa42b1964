//! The steered-connection path: accept, recover who and where, sniff the
//! first bytes for a name, decide, then relay or refuse.
//!
//! Deciding is `policy::network::NetworkPolicy::decide` (pure); this module
//! is the I/O around it. Every denial is counted and audited with the rule
//! that decided; plain HTTP gets a 403 with a JSON body naming it, anything
//! else a reset.

mod ask;
pub mod host_address;
pub mod kernel_relay;
pub mod quota;
pub mod relay;
pub mod sniff;
#[cfg(test)]
mod tests;

use std::{
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::net::{TcpListener, TcpStream};

pub use crate::conn::{Held, Identities, Standing, Who, revoked};
use crate::{
    approvals::Approvals,
    audit::{Audit, Event},
    dns,
    drain::Drain,
    intercept::{Interceptor, prefixed::Prefixed},
    metrics::Metrics,
    policy::network::{ConnRequest, NetVerdict, canonical_name},
    process::Processes,
    refuse,
    resolve::Resolver,
    steer::OrigDstSource,
};
use sniff::{Sniffed, Unreadable};

/// Dials `dst` (within `connect`) and relays `client` to it, `prefix` (the
/// client's first bytes, already read) sent first, until both sides end or
/// `revoked` resolves; the bytes carried are counted. A dial that fails is
/// counted as an error and the client reset: a relay has no status to send.
pub(crate) async fn dial_and_relay(
    client: TcpStream,
    dst: SocketAddr,
    prefix: &[u8],
    connect: Duration,
    revoked: impl Future<Output = ()>,
    relayer: &relay::Relayer,
    metrics: &Metrics,
) {
    let reason = match tokio::time::timeout(connect, TcpStream::connect(dst)).await {
        Ok(Ok(upstream)) => {
            let _ = upstream.set_nodelay(true);
            relayer
                .relay(client, upstream, prefix, revoked, metrics)
                .await;
            return;
        }
        Ok(Err(err)) => {
            tracing::debug!(%dst, %err, "upstream connect failed");
            "upstream_refused"
        }
        Err(_) => "upstream_timeout",
    };
    metrics
        .connections
        .with_label_values(&["error", reason])
        .inc();
    reset(&client);
}

/// Timeouts for one connection.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub sniff: Duration,
    pub connect: Duration,
}

const DNS_PORT: u16 = 53;

/// The reason of an allowed connection whose first bytes were read and
/// decided on.
const RULE_MATCHED: &str = "rule_matched";
/// The reason of an allowed connection relayed without reading anything:
/// no name rule covers its port, nothing is decrypted or checked for ECH,
/// no stage reads HTTP
/// ([`crate::policy::compiled::CompiledPolicy::first_bytes_reader`]).
pub const RELAYED_UNREAD: &str = "relayed_unread";

/// Everything a connection handler needs; shared by all listeners.
pub struct Proxy {
    pub orig: Arc<dyn OrigDstSource>,
    /// Terminates TLS and proxies HTTP for policies that intercept.
    pub interceptor: Option<Arc<Interceptor>>,
    pub identities: Arc<dyn Identities>,
    /// Whether a relayed connection's sandbox and policy still hold.
    pub standing: Arc<dyn Standing>,
    pub resolver: Arc<Resolver>,
    pub metrics: Arc<Metrics>,
    pub audit: Audit,
    pub limits: Limits,
    /// Counts connections in flight, so a drain can wait for them.
    pub drain: Drain,
    /// Connections open per sandbox, each sandbox (its sessions included)
    /// at most `limits.max_connections_per_sandbox` of the config; more
    /// are refused, `connection_limit`.
    pub quota: quota::Quota,
    /// Names the program behind each connection (`/proc`, cached).
    pub processes: Arc<Processes>,
    /// Where connections the network policy asks about are parked.
    pub approvals: Arc<Approvals>,
    /// In the kernel or in user space (`relay.in_kernel`).
    pub relayer: relay::Relayer,
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
        // Every writer here (relay, TLS records, hyper) sends whole
        // messages; with Nagle the tail of each large response waited for
        // the client's delayed ACK (1 MiB bodies ran at a sixth of direct).
        let _ = client.set_nodelay(true);
        self.metrics.active_connections.inc();
        let active = Active(self.metrics.clone());
        let tracked = self.drain.track();
        let Some(steered) = self.orig.take(netns, peer) else {
            // Not steered by our programs (e.g. a direct connection to the
            // listener, or an entry evicted under pressure): nothing to relay to.
            self.deny(&client, None, "no_original_destination");
            return;
        };
        let dst = steered.dst;
        let Some(mut who) = self.identities.who(steered.identity) else {
            self.deny(&client, Some(dst), "unknown_identity");
            return;
        };
        who.process = self.processes.lookup(steered.process).await;
        let Some(slot) = self.quota.take(&who.sandbox) else {
            let rule = "config:limits.max_connections_per_sandbox";
            self.record_denial(
                Some(&who),
                Some(dst),
                "connection_limit",
                Some(rule),
                None,
                None,
            );
            reset(&client);
            return;
        };
        let held: Held = Arc::new((active, tracked, slot));
        if dst.port() == DNS_PORT {
            // DNS over TCP gets the same policy and caps as over UDP.
            let (resolver, metrics) = (self.resolver.clone(), self.metrics.clone());
            // Ended, like any connection, once its sandbox or policy goes.
            // Boxed, as every long or rare state here is: a connection's
            // task keeps room for the largest state of this function, and
            // an intercepted connection (over a kilobyte parked) would
            // carry a relay's or a lookup's room for hours.
            tokio::select! {
                () = Box::pin(dns::serve_tcp(client, resolver, metrics, who.dns.clone())) => {}
                () = revoked(&*self.standing, &who, &self.metrics) => {}
            }
            return;
        }
        let mut client = client;
        let network = who.network();
        let host_address = host_address::for_policy(network, dst.ip());
        let by_address = network.decide(&ConnRequest {
            dst,
            sni: None,
            host: None,
            name_addrs: None,
            host_address,
            ech: false,
            exe: who.process.as_deref().and_then(|p| p.exe.as_deref()),
        });
        // What in the policy reads the first bytes, if anything does (a
        // session's dry run reads each request too).
        let reader = who.first_bytes_reader(dst.port());
        if reader.is_none()
            && let NetVerdict::Allow { rule } = &by_address
        {
            // Nothing would read what the client says: relayed unread, at
            // once (protocols whose server speaks first keep working).
            self.record_allow(&who, dst, rule, RELAYED_UNREAD, None, None);
            return self.forward(client, &who, dst, &[]).await;
        }
        // Read where the policy reads; and where the address alone refuses,
        // so that a plain-HTTP client gets a 403 naming the rule instead of
        // a reset.
        let mut buf = Vec::new();
        let deadline = Instant::now() + self.limits.sniff;
        let Some(sniffed) = sniff::first_bytes(&mut client, &mut buf, deadline).await else {
            // Closed before saying anything: not worth a log line.
            self.metrics
                .connections
                .with_label_values(&["closed", "client_closed_early"])
                .inc();
            return;
        };
        let (sni, host, ech, tls) = match &sniffed {
            Sniffed::Tls { sni, ech } => (sni.as_deref(), None, *ech, true),
            Sniffed::Http { host } => (None, host.as_deref(), false, false),
            Sniffed::Unreadable(why) => {
                let why = *why;
                return self
                    .unreadable(client, &who, dst, &buf, why, reader, by_address)
                    .await;
            }
            // Never returned by `first_bytes`; judged as bytes cut short.
            Sniffed::NeedMore => {
                let why = Unreadable::cut_short(&buf);
                return self
                    .unreadable(client, &who, dst, &buf, why, reader, by_address)
                    .await;
            }
        };
        let http = !tls;
        let addrs = match sni.or(host) {
            Some(name) if network.wants_resolution(name) => {
                self.resolve_as(&who, &canonical_name(name)).await
            }
            _ => Vec::new(),
        };
        let verdict = network.decide(&ConnRequest {
            dst,
            sni,
            host,
            name_addrs: Some(&addrs),
            host_address,
            ech: ech && !network.intercepts(sni),
            exe: who.process.as_deref().and_then(|p| p.exe.as_deref()),
        });
        let policy = &who.policy.name;
        // A refusal (by a rule, or by the person asked): why, and the rule.
        let refused = match verdict {
            NetVerdict::Deny { reason, rule } => {
                Some((reason.as_str(), format!("{policy}:{rule}")))
            }
            NetVerdict::Allow { rule } => {
                self.record_allow(&who, dst, &rule, RULE_MATCHED, sni, host);
                None
            }
            NetVerdict::WouldDeny { reason, rule } => {
                self.record_would_deny(&who, dst, reason.as_str(), &rule, sni, host);
                None
            }
            NetVerdict::WouldAsk { rule } => {
                self.record_admitted(&who, dst, ("would_ask", "ask"), &rule, true, (sni, host));
                None
            }
            NetVerdict::Ask { rule } => {
                let asked = sni
                    .or(host)
                    .map_or_else(|| dst.ip().to_string(), canonical_name);
                let asked = Box::pin(self.ask(&who, dst, &rule, &asked, (sni, host))).await;
                asked.err().map(|refused| (refused.reason, refused.rule))
            }
        };
        if let Some((reason, rule)) = refused {
            self.record_denial(Some(&who), Some(dst), reason, Some(&rule), sni, host);
            if http {
                forbidden(client, &who, dst, 403, reason, &rule).await;
            } else {
                reset(&client);
            }
            return;
        }
        let name = sni.or(host);
        // Plain HTTP has nothing to decrypt, and is always served request
        // by request: relayed, a kept-alive connection could name another
        // host behind the same address (virtual hosting) once its first
        // request was let through.
        if tls && !network.intercepts(name) {
            // Passthrough: decided on the SNI, not decrypted.
            return self.forward(client, &who, dst, &buf).await;
        }
        let Some(interceptor) = self.interceptor.clone() else {
            // Only an in-process test builds a proxy without one; what the
            // policy reads is never relayed unread for want of it.
            self.record_denial(Some(&who), Some(dst), "no_interceptor", None, sni, host);
            return reset(&client);
        };
        let name = name.map_or_else(|| dst.ip().to_string(), canonical_name);
        let sni = sni.map(canonical_name);
        let stream = Prefixed::new(buf, client);
        if tls {
            interceptor.tls(stream, who, dst, name, sni, held).await;
        } else {
            let named = self.named_address(&who, &name, dst, &addrs).await;
            interceptor.plain(stream, who, dst, name, named, held).await;
        }
    }

    /// First bytes that are neither a TLS hello nor an HTTP head: relayed
    /// in learn mode where only the catch-all would refuse the address and
    /// nothing in the policy reads them (another protocol, one whose
    /// server speaks first after the sniff timeout), refused otherwise.
    #[allow(clippy::too_many_arguments)]
    async fn unreadable(
        &self,
        client: TcpStream,
        who: &Who,
        dst: SocketAddr,
        read: &[u8],
        why: Unreadable,
        reader: Option<&'static str>,
        by_address: NetVerdict,
    ) {
        if let (None, NetVerdict::WouldDeny { reason, rule }) = (reader, &by_address) {
            self.record_would_deny(who, dst, reason.as_str(), rule, None, None);
            return self.forward(client, who, dst, read).await;
        }
        if let (None, NetVerdict::WouldAsk { rule }) = (reader, &by_address) {
            self.record_admitted(who, dst, ("would_ask", "ask"), rule, true, (None, None));
            return self.forward(client, who, dst, read).await;
        }
        self.refuse_unreadable(client, who, dst, why, reader, by_address)
            .await
    }

    /// Refuses a connection whose first bytes cannot be read: where the
    /// policy reads them (`reader`, its key), with why (a 400 naming it
    /// where they are recognisably HTTP, else a reset); where only the
    /// address's refusal had them read, with that refusal.
    async fn refuse_unreadable(
        &self,
        client: TcpStream,
        who: &Who,
        dst: SocketAddr,
        why: Unreadable,
        reader: Option<&'static str>,
        by_address: NetVerdict,
    ) {
        let policy = &who.policy.name;
        let (status, reason, rule) = match (reader, by_address) {
            (_, NetVerdict::Deny { reason, rule }) => {
                (403, reason.as_str(), format!("{policy}:{rule}"))
            }
            // Read only for `reader` when the address allows; an asked
            // destination is asked about by the name its first bytes carry,
            // so bytes that carry none are refused for what they are.
            (
                reader,
                NetVerdict::Allow { .. }
                | NetVerdict::WouldDeny { .. }
                | NetVerdict::Ask { .. }
                | NetVerdict::WouldAsk { .. },
            ) => (
                400,
                why.as_str(),
                format!("{policy}:{}", reader.unwrap_or("network")),
            ),
        };
        self.record_denial(Some(who), Some(dst), reason, Some(&rule), None, None);
        if why.is_http() {
            forbidden(client, who, dst, status, reason, &rule).await;
        } else {
            reset(&client);
        }
    }

    /// Counts and (where the policy logs allows) audits an allowed
    /// connection: `reason` says whether its first bytes were read.
    fn record_allow(
        &self,
        who: &Who,
        dst: SocketAddr,
        rule: &str,
        reason: &'static str,
        sni: Option<&str>,
        host: Option<&str>,
    ) {
        let audit = &who.policy.audit;
        let audited = audit.enabled && audit.log_allowed;
        self.record_admitted(who, dst, ("allow", reason), rule, audited, (sni, host));
    }

    /// Counts and audits (always: it is what learn mode is for) a
    /// connection let through in learn mode that `rule` would refuse.
    fn record_would_deny(
        &self,
        who: &Who,
        dst: SocketAddr,
        reason: &str,
        rule: &str,
        sni: Option<&str>,
        host: Option<&str>,
    ) {
        self.record_admitted(who, dst, ("would_deny", reason), rule, true, (sni, host));
    }

    /// Counts a connection let through under `(verdict, reason)`, and
    /// audits it where `audited`.
    fn record_admitted(
        &self,
        who: &Who,
        dst: SocketAddr,
        (verdict, reason): (&str, &str),
        rule: &str,
        audited: bool,
        (sni, host): (Option<&str>, Option<&str>),
    ) {
        self.metrics
            .connections
            .with_label_values(&[verdict, reason])
            .inc();
        self.metrics
            .sandbox_connections
            .with_label_values(&[&who.sandbox, verdict])
            .inc();
        if audited {
            self.audit.record(&Event {
                event: "connection",
                verdict,
                reason,
                rule: Some(&format!("{}:{rule}", who.policy.name)),
                sandbox: Some(&who.sandbox),
                session: who.session.as_deref(),
                dst: Some(dst.to_string()),
                sni,
                host,
                process: who.process.as_deref(),
                ..Event::default()
            });
        }
    }

    /// What `name` resolves to, asked as the sandbox's own DNS question:
    /// through its gate, so a name its policy would not resolve is never
    /// looked up, and a lookup made for a connection counts against the
    /// same name and unique-name caps as a query (it cannot carry data to
    /// a name server past the DNS policy); not against the query rate,
    /// which would refuse a client for opening connections.
    async fn resolve_as(&self, who: &Who, name: &str) -> Vec<IpAddr> {
        if let dns::Admission::Refuse(..) = who.dns.admit_lookup(name) {
            return Vec::new();
        }
        // Boxed: see `handle`.
        Box::pin(self.resolver.lookup_ip(name))
            .await
            .unwrap_or_default()
    }

    /// Whether `dst` is an address of `name` (canonical): the name is that
    /// address written out, or Sluice's resolver gives it for the name
    /// (`resolved`, when the network decision already asked, else asked
    /// now, as the sandbox's own DNS question: through its gate, so a Host
    /// the policy would not resolve is never looked up, and cannot carry
    /// data to a name server past the DNS policy). A secret sent over plain
    /// HTTP depends on it: nothing else ties the `Host` a sandbox writes to
    /// the address it dials.
    async fn named_address(
        &self,
        who: &Who,
        name: &str,
        dst: SocketAddr,
        resolved: &[IpAddr],
    ) -> bool {
        let ip = dst.ip().to_canonical();
        if let Ok(named) = name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            return named.to_canonical() == ip;
        }
        let asked;
        let addrs = if resolved.is_empty() {
            asked = self.resolve_as(who, name).await;
            &asked
        } else {
            resolved
        };
        addrs.iter().any(|addr| addr.to_canonical() == ip)
    }

    async fn forward(&self, client: TcpStream, who: &Who, dst: SocketAddr, prefix: &[u8]) {
        let revoked = revoked(&*self.standing, who, &self.metrics);
        // Boxed: see `handle`.
        Box::pin(dial_and_relay(
            client,
            dst,
            prefix,
            self.limits.connect,
            revoked,
            &self.relayer,
            &self.metrics,
        ))
        .await;
    }

    /// Counts and audits a denial (the caller answers the client). `rule` is
    /// the policy rule that decided, when one did.
    fn record_denial(
        &self,
        who: Option<&Who>,
        dst: Option<SocketAddr>,
        reason: &str,
        rule: Option<&str>,
        sni: Option<&str>,
        host: Option<&str>,
    ) {
        self.metrics
            .connections
            .with_label_values(&["deny", reason])
            .inc();
        self.metrics
            .sandbox_connections
            .with_label_values(&[who.map_or("", |w| &*w.sandbox), "deny"])
            .inc();
        self.audit.record(&Event {
            event: "connection",
            verdict: "deny",
            reason,
            rule,
            sandbox: who.map(|w| &*w.sandbox),
            session: who.and_then(|w| w.session.as_deref()),
            dst: dst.map(|d| d.to_string()),
            sni,
            host,
            process: who.and_then(|w| w.process.as_deref()),
            ..Event::default()
        });
    }

    /// Counts, audits and resets a connection refused before any policy
    /// applies (no record of it, or no owner).
    fn deny(&self, client: &TcpStream, dst: Option<SocketAddr>, reason: &str) {
        self.record_denial(None, dst, reason, None, None, None);
        reset(client);
    }
}

/// Answers a refused plain-HTTP request with `status` (403: a rule
/// refused it; 400: it cannot be read) and a JSON body naming the reason
/// and rule, then closes; the sandbox's code sees why instead of a bare
/// reset.
async fn forbidden(
    client: TcpStream,
    who: &Who,
    dst: SocketAddr,
    status: u16,
    reason: &str,
    rule: &str,
) {
    let status = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::FORBIDDEN);
    let mut body = serde_json::json!({
        "error": refuse::error_label(status),
        "reason": reason,
        "rule": rule,
        "sandbox": &*who.sandbox,
        "destination": dst.to_string(),
    });
    refuse::name_process(&mut body, who.process.as_deref());
    refuse::answer(client, status, &[], reason, &body).await;
}

/// Makes the close a reset: the sandbox sees the refusal at once instead of
/// an orderly end of a stream it may take for a reply.
#[expect(
    deprecated,
    reason = "tokio warns that SO_LINGER blocks on drop; a zero linger does not block, it resets"
)]
pub(crate) fn reset(stream: &TcpStream) {
    let _ = stream.set_linger(Some(Duration::ZERO));
}

/// Decrements the active-connection gauge when the handler ends, however it ends.
/// A connection's count in `sluice_active_connections`, until dropped.
struct Active(Arc<Metrics>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active_connections.dec();
    }
}
