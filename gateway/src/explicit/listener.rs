//! The explicit-proxy connection path: read the proxy request head, verify
//! the capability token, check the target against the token's connections
//! and the sandbox's network policy, then hand the connection to the same
//! interceptor steered connections use (TLS terminated with a minted
//! certificate after CONNECT; absolute-form HTTP served as plain HTTP).
//! Refusals: 407 for the token, 403 naming the rule for the target.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use hyper::StatusCode;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
    sync::{OwnedSemaphorePermit, Semaphore},
};

use super::decide::{NoDns, Refusal, carried, not_looked_up};
use super::head::{Target, parse_head};
use super::token::{self, Claims, TokenError, Verifier};
use crate::proxy::host_address;
use crate::{
    audit::{Audit, Event, Fold},
    dns::{Admission, Gate},
    drain::Drain,
    intercept::{Interceptor, prefixed::Prefixed},
    metrics::Metrics,
    policy::{
        network::{ConnRequest, NetVerdict, canonical_name},
        store::PolicyStore,
    },
    proxy::{
        Held, Who,
        quota::{Quota, Slot},
        sniff::{self, Sniffed},
    },
    refuse,
    resolve::Resolver,
};

/// Everything the listener needs; shared by its connections.
pub struct ExplicitProxy {
    pub verifier: Verifier,
    /// Sandbox id → policy name.
    pub sandboxes: HashMap<String, String>,
    /// Remote sessions ended: their tokens are refused.
    pub ended: Arc<token::EndedSessions>,
    /// Sandbox id → its DNS gate: the names its requests and tunnels name
    /// are looked up through it, under the same name rules and caps as a
    /// steered sandbox's queries, so a name carries no data to a name
    /// server past the DNS policy (fresh subdomains under a wildcard the
    /// token grants included).
    pub lookups: HashMap<String, Arc<dyn Gate>>,
    pub policies: Arc<PolicyStore>,
    pub resolver: Arc<Resolver>,
    pub interceptor: Arc<Interceptor>,
    pub metrics: Arc<Metrics>,
    pub audit: Audit,
    /// For the proxy request head, and the first bytes after CONNECT.
    pub header_timeout: Duration,
    pub connect_timeout: Duration,
    pub max_header_bytes: usize,
    pub drain: Drain,
    /// Places for connections that have not shown a valid token yet
    /// (`explicit_proxy.max_pending_connections`), and each source
    /// address's share of them (`max_pending_per_source`).
    pub pending: Arc<Semaphore>,
    pub pending_per_source: Quota<IpAddr>,
    /// Refusals past those caps, audited at most once a second
    /// ([`Fold`]): a flood must not flood the audit log too.
    pub pending_refusals: std::sync::Mutex<Fold>,
    /// Open connections per sandbox, shared with the steering listeners.
    pub quota: Quota,
    /// In the kernel or in user space, as for steered connections.
    pub relayer: crate::proxy::relay::Relayer,
}

/// What refuses a connection past the pending cap, or its source's share
/// of it, and one past its sandbox's connection limit.
const PENDING_RULE: &str = "config:explicit_proxy.max_pending_connections";
const PENDING_SOURCE_RULE: &str = "config:explicit_proxy.max_pending_per_source";
const QUOTA_RULE: &str = "config:limits.max_connections_per_sandbox";

/// A connection's place among those without a valid token yet: in the
/// whole, and in its source address's share.
type Pending = (OwnedSemaphorePermit, Slot<IpAddr>);

/// The source a connection's share of the pending places is counted
/// under: an IPv4 address (also when it arrives IPv4-mapped on a dual-stack
/// listener), or an IPv6 address's /64. A single IPv6 host is routinely
/// given a whole /64, so counted by address one client could take every
/// place from a new address each time.
fn source_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}

/// A connection the token and the policy let through: who, the address
/// checked (the one dialled), and what it holds while open.
struct Admitted {
    who: Who,
    dst: SocketAddr,
    held: Held,
}

impl ExplicitProxy {
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        loop {
            match listener.accept().await {
                Ok((stream, peer)) => {
                    let pending = match self.take_pending(peer.ip()) {
                        Ok(pending) => pending,
                        Err(rule) => {
                            self.refuse_pending(peer.ip(), rule);
                            crate::proxy::reset(&stream);
                            continue;
                        }
                    };
                    let proxy = self.clone();
                    tokio::spawn(async move { proxy.handle(stream, pending).await });
                }
                Err(err) => {
                    tracing::warn!(%err, "explicit proxy: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    /// A place among the connections without a valid token yet, or the
    /// rule of the cap that is full.
    fn take_pending(&self, source: IpAddr) -> Result<Pending, &'static str> {
        let of_source = self
            .pending_per_source
            .take(&source_key(source))
            .ok_or(PENDING_SOURCE_RULE)?;
        let place = self
            .pending
            .clone()
            .try_acquire_owned()
            .map_err(|_| PENDING_RULE)?;
        Ok((place, of_source))
    }

    /// Counts a connection refused past a pending cap, and audits it
    /// unless one was audited less than a second ago (the next event then
    /// says how many were folded into it).
    fn refuse_pending(&self, source: IpAddr, rule: &'static str) {
        self.metrics
            .connections
            .with_label_values(&["deny", "pending_limit"])
            .inc();
        let admitted = self
            .pending_refusals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .admit(Instant::now());
        let Some(folded) = admitted else {
            return;
        };
        let mut detail = format!("too many connections without a valid token yet (from {source})");
        if folded > 0 {
            detail.push_str(&format!("; {folded} more refused since the last event"));
        }
        self.audit.record(&Event {
            event: "explicit_proxy",
            verdict: "deny",
            reason: "pending_limit",
            rule: Some(rule),
            detail: Some(detail),
            ..Event::default()
        });
    }

    /// Serves one connection; `pending` is its place among those without a
    /// valid token yet, given back once its token is verified.
    async fn handle(&self, mut client: TcpStream, pending: Pending) {
        // As on the steered listener: whole messages, no Nagle delay.
        let _ = client.set_nodelay(true);
        if self.drain.is_draining() {
            return;
        }
        let tracked = self.drain.track();
        let (buf, head_len) = match self.read_head(&mut client).await {
            HeadRead::Read(buf, head_len) => (buf, head_len),
            // A client that left or stalled: nothing to answer.
            HeadRead::Ended => return,
            HeadRead::TooLong => {
                let refusal = Refusal {
                    status: 431,
                    reason: "proxy_head_too_large",
                    rule: None,
                    detail: format!(
                        "the proxy request head is over {} bytes",
                        self.max_header_bytes
                    ),
                };
                return self.refuse(client, None, None, refusal).await;
            }
        };
        let head = match parse_head(&buf[..head_len]) {
            Ok(head) => head,
            Err(detail) => {
                let refusal = Refusal {
                    status: 400,
                    reason: "bad_proxy_request",
                    rule: None,
                    detail: detail.to_owned(),
                };
                return self.refuse(client, None, None, refusal).await;
            }
        };
        let claims = match self.authenticate(head.token.as_deref()) {
            Ok(claims) => claims,
            Err(err) => {
                let refusal = Refusal {
                    status: 407,
                    reason: err.reason(),
                    rule: None,
                    detail: err.to_string(),
                };
                return self.refuse(client, None, Some(&head.target), refusal).await;
            }
        };
        drop(pending);
        let target = &head.target;
        let admitted = self.admit(&claims, target).await.and_then(|(who, dst)| {
            let slot = self.quota.take(&who.sandbox).ok_or_else(|| Refusal {
                status: 429,
                reason: "connection_limit",
                rule: Some(QUOTA_RULE.to_owned()),
                detail: format!("sandbox {} has its most connections open", who.sandbox),
            })?;
            Ok((who, dst, slot))
        });
        match admitted {
            Ok((who, dst, slot)) => {
                let held: Held = Arc::new((tracked, slot));
                self.metrics
                    .connections
                    .with_label_values(&["allow", "capability_token"])
                    .inc();
                self.audit.record(&Event {
                    event: "explicit_proxy",
                    verdict: "allow",
                    reason: "capability_token",
                    sandbox: Some(&who.sandbox),
                    session: who.session.as_deref(),
                    dst: Some(dst.to_string()),
                    host: Some(&target.host),
                    ..Event::default()
                });
                if target.tunnel {
                    let established = b"HTTP/1.1 200 Connection established\r\n\r\n";
                    if client.write_all(established).await.is_err() {
                        return;
                    }
                    let rest = buf[head_len..].to_vec();
                    let admitted = Admitted { who, dst, held };
                    self.tunnel(client, rest, &claims, target, admitted).await;
                } else {
                    // The whole request, head included, is the interceptor's;
                    // `dst` is Sluice's own resolution of the name.
                    let stream = Prefixed::new(buf, client);
                    let name = canonical_name(&target.host);
                    let interceptor = self.interceptor.clone();
                    interceptor.plain(stream, who, dst, name, true, held).await;
                }
            }
            Err(refusal) => {
                self.refuse(client, Some(&claims), Some(target), refusal)
                    .await
            }
        }
    }

    fn authenticate(&self, token: Option<&str>) -> Result<Claims, TokenError> {
        let token = token.ok_or(TokenError::Missing)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let claims = self.verifier.verify(token, now)?;
        if !self.sandboxes.contains_key(&claims.sub) {
            return Err(TokenError::UnknownSandbox(claims.sub));
        }
        if self.ended.ended(&claims) {
            return Err(TokenError::SessionEnded(claims.session.unwrap_or_default()));
        }
        Ok(claims)
    }

    /// The token's connections, then the sandbox's network policy, decide
    /// on the target; on success, who is asking and exactly which address
    /// was checked (the one dialled).
    async fn admit(&self, claims: &Claims, target: &Target) -> Result<(Who, SocketAddr), Refusal> {
        if !token::allows(claims, &target.host, target.port) {
            return Err(Refusal {
                status: 403,
                reason: "connection_not_in_token",
                rule: Some("token:connections".to_owned()),
                detail: format!(
                    "the capability token does not grant {}:{}",
                    target.host, target.port
                ),
            });
        }
        let policy_name = &self.sandboxes[&claims.sub];
        let Some(policy) = self.policies.current().get(policy_name).cloned() else {
            return Err(Refusal {
                status: 403,
                reason: "no_policy",
                rule: None,
                detail: format!("policy `{policy_name}` is not loaded"),
            });
        };
        let name = canonical_name(&target.host);
        let addrs: Vec<IpAddr> = match name.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => {
                let gate = self.lookups.get(&claims.sub);
                if let Some(Admission::Refuse(..)) | None = gate.map(|g| g.admit_lookup(&name)) {
                    return Err(not_looked_up(&policy, &name));
                }
                self.resolver.lookup_ip(&name).await.unwrap_or_default()
            }
        };
        let Some(&ip) = addrs.first() else {
            return Err(Refusal {
                status: 502,
                reason: "unresolvable",
                rule: None,
                detail: format!("{name} does not resolve"),
            });
        };
        let dst = SocketAddr::new(ip, target.port);
        let verdict = policy.network.decide(&ConnRequest {
            dst,
            sni: target.tunnel.then_some(name.as_str()),
            host: (!target.tunnel).then_some(name.as_str()),
            name_addrs: Some(&addrs),
            host_address: host_address::for_policy(&policy.network, ip),
            // Decided again on the first bytes after CONNECT ([`carried`]).
            ech: false,
            exe: None,
        });
        match verdict {
            NetVerdict::Deny { reason, rule } => {
                return Err(Refusal {
                    status: 403,
                    reason: reason.as_str(),
                    rule: Some(format!("{}:{rule}", policy.name)),
                    detail: format!("{name}:{} is refused by the network policy", target.port),
                });
            }
            NetVerdict::Ask { rule } => return Err(super::decide::asked(&policy, &rule, &name)),
            NetVerdict::Allow { .. }
            | NetVerdict::WouldDeny { .. }
            | NetVerdict::WouldAsk { .. } => {}
        }
        let who = Who {
            identity: None,
            sandbox: Arc::from(claims.sub.as_str()),
            session: claims.session.as_deref().map(Arc::from),
            policy,
            dns: Arc::new(NoDns),
            dry_run: claims.dry_run,
            tools: claims.tools.clone().map(Arc::from),
            process: None,
            overlay: None,
        };
        Ok((who, dst))
    }

    /// After CONNECT: TLS is terminated with a minted certificate when the
    /// policy intercepts, plain HTTP is served, and anything else is
    /// spliced once the network policy allows what it starts with.
    async fn tunnel(
        &self,
        mut client: TcpStream,
        mut buf: Vec<u8>,
        claims: &Claims,
        target: &Target,
        admitted: Admitted,
    ) {
        let Admitted { who, dst, held } = admitted;
        let deadline = Instant::now() + self.header_timeout;
        // Gone before saying anything: nothing to dial for.
        let Some(sniffed) = sniff::first_bytes(&mut client, &mut buf, deadline).await else {
            return;
        };
        if let Sniffed::Unreadable(why) = sniffed {
            // What the policy reads is never spliced unread; where nothing
            // reads it (an address rule, nothing decrypted, no stage), the
            // address decides below as for a steered connection.
            if let Some(reader) = who.first_bytes_reader(dst.port()) {
                let refusal = Refusal {
                    status: 400,
                    reason: why.as_str(),
                    rule: Some(format!("{}:{reader}", who.policy.name)),
                    detail: format!(
                        "{reader} reads what the tunnel carries, and its first bytes are not a well-formed TLS ClientHello or HTTP/1 request head"
                    ),
                };
                if why.is_http() {
                    return self
                        .refuse(client, Some(claims), Some(target), refusal)
                        .await;
                }
                self.record_refusal(Some(claims), Some(target), &refusal);
                return crate::proxy::reset(&client);
            }
        }
        let name = canonical_name(&target.host);
        let intercepts = who.network().intercepts(Some(&name));
        let http = matches!(sniffed, Sniffed::Http { .. });
        if let Sniffed::Tls { .. } = sniffed
            && intercepts
        {
            let stream = Prefixed::new(buf, client);
            // The tunnel was granted for this name: requests on it must
            // name it too (hygiene compares Host with it).
            let sni = Some(name.clone());
            let interceptor = self.interceptor.clone();
            return interceptor.tls(stream, who, dst, name, sni, held).await;
        }
        // Not decrypted: what the tunnel carries is decided as a steered
        // connection's first bytes are (plain HTTP under an intercepting
        // policy is not: each request's Host is checked against the
        // tunnel's name instead, as with decrypted TLS).
        if !(http && intercepts)
            && let Err(refusal) = carried(&who, dst, &name, &sniffed)
        {
            if http {
                return self
                    .refuse(client, Some(claims), Some(target), refusal)
                    .await;
            }
            // The client speaks TLS (or bytes of its own) past the 200:
            // refused by closing.
            return self.record_refusal(Some(claims), Some(target), &refusal);
        }
        if http {
            // Plain HTTP is served whether or not the policy decrypts TLS:
            // spliced, the requests after the first could name other hosts
            // behind the same address. `dst` is Sluice's own resolution of
            // the tunnel's name.
            let stream = Prefixed::new(buf, client);
            let interceptor = self.interceptor.clone();
            return interceptor.plain(stream, who, dst, name, true, held).await;
        }
        // TLS not decrypted, other bytes, or none within the timeout (a
        // protocol whose server speaks first): relayed, as when steered.
        let standing = &*self.interceptor.standing;
        let revoked = crate::proxy::revoked(standing, &who, &self.metrics);
        crate::proxy::dial_and_relay(
            client,
            dst,
            &buf,
            self.connect_timeout,
            revoked,
            &self.relayer,
            &self.metrics,
        )
        .await;
    }

    /// Reads the proxy request head.
    async fn read_head(&self, client: &mut TcpStream) -> HeadRead {
        let deadline = Instant::now() + self.header_timeout;
        let mut buf = Vec::with_capacity(2048);
        // Where the search resumes: a head sent a byte at a time is read
        // once, not once per byte (quadratic, and before any token).
        let mut from = 0;
        loop {
            if let Some(end) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
                return HeadRead::Read(buf, from + end + 4);
            }
            from = buf.len().saturating_sub(3);
            if buf.len() >= self.max_header_bytes {
                return HeadRead::TooLong;
            }
            let room = (self.max_header_bytes - buf.len()) as u64;
            match tokio::time::timeout_at(
                deadline.into(),
                (&mut *client).take(room).read_buf(&mut buf),
            )
            .await
            {
                Ok(Ok(n)) if n > 0 => {}
                _ => return HeadRead::Ended,
            }
        }
    }

    /// Counts and audits a refusal.
    fn record_refusal(&self, claims: Option<&Claims>, target: Option<&Target>, refusal: &Refusal) {
        self.metrics
            .connections
            .with_label_values(&["deny", refusal.reason])
            .inc();
        self.audit.record(&Event {
            event: "explicit_proxy",
            verdict: "deny",
            reason: refusal.reason,
            rule: refusal.rule.as_deref(),
            sandbox: claims.map(|c| c.sub.as_str()),
            session: claims.and_then(|c| c.session.as_deref()),
            host: target.map(|t| t.host.as_str()),
            detail: Some(refusal.detail.clone()),
            ..Event::default()
        });
    }

    /// Counts, audits and answers a refusal, then closes.
    async fn refuse(
        &self,
        client: TcpStream,
        claims: Option<&Claims>,
        target: Option<&Target>,
        refusal: Refusal,
    ) {
        self.record_refusal(claims, target, &refusal);
        let destination = target.map(|t| format!("{}:{}", t.host, t.port));
        let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN);
        let body = serde_json::json!({
            "error": refuse::error_label(status),
            "reason": refusal.reason,
            "rule": refusal.rule,
            "destination": destination,
            "detail": refusal.detail,
        });
        let extra: &[(&str, &str)] = match status {
            StatusCode::PROXY_AUTHENTICATION_REQUIRED => {
                &[("proxy-authenticate", "Bearer realm=\"sluice\"")]
            }
            _ => &[],
        };
        refuse::answer(client, status, extra, refusal.reason, &body).await;
    }
}

/// How reading a proxy request head ended.
enum HeadRead {
    /// The bytes read, and where the head ends in them.
    Read(Vec<u8>, usize),
    /// The client closed or stalled first.
    Ended,
    /// No end within the configured size.
    TooLong,
}

#[cfg(test)]
#[path = "listener_tests.rs"]
mod tests;
