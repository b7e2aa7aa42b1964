//! Interception: TLS terminated with a certificate minted for the name the
//! sandbox asked for, HTTP/1.1 and HTTP/2 served with hyper, every request
//! checked (`hygiene`) and forwarded to exactly the checked address over TLS
//! verified against that name (`upstream`), responses streamed back.
//!
//! A request meets hygiene, then the request stages in their one order
//! (`stages`), the forward and the answer stages (`exchange`); a refusal
//! from any of them is one `Refusal`, counted, audited and answered as
//! JSON by `Interceptor::refuse`.

mod answer_checks;
pub mod content;
pub mod credential;
mod exchange;
pub mod hygiene;
pub mod idle;
pub mod prefixed;
mod redactors;
mod redirects;
mod refusal;
pub mod respond;
mod serve;
mod splice;
mod stages;
pub mod upstream;
mod ws_close;

#[cfg(test)]
mod in_process;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use hyper::{
    Request, Response, StatusCode, Version,
    header::{self, HeaderValue},
};
use tokio::net::TcpStream;

use crate::{
    audit::{Audit, Event},
    conn::{Held, Standing, Who},
    credentials::Transport,
    drain::Drain,
    metrics::{Metrics, Series},
    policy::network::RequestRule,
    tls::mint::{MintError, Minter},
};
use idle::{Idle, InFlight};
use prefixed::Prefixed;
use refusal::{Counter, Refusal};
use respond::Body;
use upstream::{Key, Upstreams};

/// How long requests in flight on a revoked connection may take to finish.
const REVOKED_GRACE: Duration = Duration::from_secs(5);

/// Limits of intercepted connections.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read: Duration,
    /// A connection with nothing read or written for this long is closed.
    pub idle: Duration,
    pub max_header_bytes: usize,
}

pub struct Interceptor {
    /// Whether a connection's sandbox and policy still hold: one that no
    /// longer does closes after its requests in flight (an upgraded
    /// stream at once).
    pub standing: Arc<dyn Standing>,
    pub minter: Arc<Minter>,
    /// Placeholders swapped for secrets, last, and secrets redacted back.
    pub credentials: Arc<credential::Credentials>,
    /// App catalogue and parked requests (the apps stage).
    pub approvals: Arc<crate::approvals::Approvals>,
    /// The body stages: PII, prompt injection, transformations, rehydration.
    pub content: content::Content,
    pub upstreams: Upstreams,
    pub metrics: Arc<Metrics>,
    pub audit: Audit,
    pub limits: Limits,
    /// When the daemon drains, a connection finishes its request in flight
    /// and closes instead of waiting for another.
    pub drain: Drain,
}

/// One intercepted connection: who, where, and the name it was decided on.
/// Shared by its requests (`Arc`), never copied per request.
struct Conn {
    who: Who,
    key: Key,
    /// The TLS server name, when the connection was TLS.
    sni: Option<String>,
    /// TLS, or plain HTTP to an address the name resolves to (Sluice's
    /// resolver) or elsewhere: what a secret sent over it relies on (over
    /// TLS the upstream's certificate vouches for the name).
    transport: Transport,
    /// What the connection holds while open, kept by an upgraded stream
    /// too ([`Held`]).
    held: Held,
    /// What its requests may ask for, where the `allow_out` rule that
    /// allowed the connection has methods or paths (the `network_rule`
    /// stage).
    request_rule: Option<Arc<RequestRule>>,
    /// The `Host` its requests go upstream with, made once for all of them.
    authority: Authority,
    /// The series its injections are counted in (`credential_injections`,
    /// by credential), resolved at the first.
    injections: Series,
}

/// The authority an upstream request names: as an HTTP/1 `Host` (no
/// default port; what a SigV4 signature covers) and as a header value.
pub(super) struct Authority {
    text: String,
    /// `None` when the text is no valid header value (then no `Host` is set).
    host: Option<HeaderValue>,
}

impl Authority {
    fn of(key: &Key) -> Authority {
        let text = host_header(key);
        let host = HeaderValue::from_str(&text).ok();
        Authority { text, host }
    }
}

impl Interceptor {
    /// Terminates TLS for `name` (the SNI, or the address when there was
    /// none) and serves HTTP on the decrypted stream.
    pub async fn tls(
        self: Arc<Self>,
        stream: Prefixed<TcpStream>,
        who: Who,
        dst: SocketAddr,
        name: String,
        sni: Option<String>,
        held: Held,
    ) {
        let leaf = match self.minter.leaf_for(&who.sandbox, &name).await {
            Ok(leaf) => leaf,
            Err(MintError::RateLimited) => {
                self.mint_refused(&who, dst, &name);
                return;
            }
            Err(err) => {
                tracing::warn!(%name, %err, "cannot mint a certificate; connection dropped");
                return;
            }
        };
        // The acceptor (and the config made for this connection) goes
        // once the handshake is done: the session needs neither after it.
        let accept =
            tokio_rustls::TlsAcceptor::from(self.minter.server_config(leaf)).accept(stream);
        // Boxed: the stream is moved into each layer that serves it, and
        // every async layer keeps room for what it was given (its TLS
        // session is over a kilobyte) for as long as the connection is
        // open; a box moves as a pointer.
        let mut tls = match tokio::time::timeout(self.limits.header_read, accept).await {
            Ok(Ok(tls)) => Box::new(tls),
            // A client that does not trust the CA ends here; its TLS alert
            // already told it why.
            Ok(Err(err)) => {
                tracing::debug!(%name, %err, "client TLS handshake failed");
                return;
            }
            Err(_) => return,
        };
        // The rule the listener allowed the connection by: decided once,
        // on the same name, address and port.
        let request_rule = who.network().request_rule(Some(&name), dst);
        let key = Key {
            sandbox: who.sandbox.clone(),
            name,
            addr: dst,
            tls: true,
        };
        let conn = Conn {
            authority: Authority::of(&key),
            injections: Series::default(),
            key,
            who,
            sni,
            transport: Transport::Tls,
            held,
            request_rule,
        };
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        let head = if h2 {
            Vec::new()
        } else {
            match self.first_head(&mut tls, &conn).await {
                Some(head) => head,
                None => return,
            }
        };
        // As for plain HTTP: hyper's header read timeout ends an idle
        // HTTP/1 connection, but HTTP/2 has no timer of its own.
        let in_flight = InFlight::default();
        let h1 = serve::parkable(h2, &head);
        let io = Idle::new(
            Prefixed::new(head, tls),
            self.limits.idle,
            in_flight.clone(),
        );
        self.serve(io, conn, in_flight, h1).await;
    }

    /// Reads the first request head of an HTTP/1 connection before hyper
    /// does, to refuse what hyper would silently normalize
    /// (`hygiene::check_raw_head`). Returns the bytes read, for hyper to read
    /// again; `None` when the connection was answered or ended.
    async fn first_head<S>(&self, stream: &mut S, conn: &Conn) -> Option<Vec<u8>>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        use tokio::io::AsyncReadExt as _;
        let mut buf = Vec::with_capacity(4096);
        let deadline = tokio::time::Instant::now() + self.limits.header_read;
        while head_end(&buf).is_none() && buf.len() < self.limits.max_header_bytes {
            let room = (self.limits.max_header_bytes - buf.len()) as u64;
            match tokio::time::timeout_at(deadline, (&mut *stream).take(room).read_buf(&mut buf))
                .await
            {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
                Ok(Ok(_)) => {}
            }
        }
        if let Some(end) = head_end(&buf)
            && let Err(violation) = hygiene::check_raw_head(&buf[..end])
        {
            let refusal = Refusal::Hygiene(violation);
            self.account(conn, &refusal);
            let (status, reason) = (refusal.status(), refusal.reason());
            crate::refuse::answer(stream, status, &[], reason, &refusal.body()).await;
            return None;
        }
        // Anything else, even a head too large or cut short, is hyper's to answer.
        Some(buf)
    }

    /// Serves plain HTTP (decided on its Host) on the connection.
    pub async fn plain(
        self: Arc<Self>,
        stream: Prefixed<TcpStream>,
        who: Who,
        dst: SocketAddr,
        host: String,
        named_address: bool,
        held: Held,
    ) {
        let request_rule = who.network().request_rule(Some(&host), dst);
        let key = Key {
            sandbox: who.sandbox.clone(),
            name: host,
            addr: dst,
            tls: false,
        };
        let conn = Conn {
            authority: Authority::of(&key),
            injections: Series::default(),
            key,
            who,
            sni: None,
            transport: if named_address {
                Transport::Plain
            } else {
                Transport::PlainElsewhere
            },
            held,
            request_rule,
        };
        // As over TLS: refuse what hyper would silently normalize.
        let mut stream = stream;
        let Some(head) = self.first_head(&mut stream, &conn).await else {
            return;
        };
        let h1 = serve::parkable(false, &head);
        let stream = Prefixed::new(head, stream);
        let in_flight = InFlight::default();
        let io = Idle::new(stream, self.limits.idle, in_flight.clone());
        self.serve(io, conn, in_flight, h1).await;
    }

    /// Drops what is kept for a removed session (`Some`) or sandbox
    /// (`None`): its PII vaults, since ids are the caller's and one
    /// registered again must start with none, and a sandbox's pooled
    /// upstream connections.
    pub fn forget(&self, sandbox: &str, session: Option<&str>) {
        self.content.vaults.forget(sandbox, session);
        if session.is_none() {
            self.upstreams.forget_sandbox(sandbox);
        }
    }

    /// One request: hygiene and the request stages (credentials last),
    /// the forward to the checked upstream, then the answer stages.
    async fn handle(&self, request: Request<Body>, conn: &Conn) -> Response<Body> {
        let exchange = match self.request_stages(request, conn).await {
            Ok(exchange) => exchange,
            Err(answer) => return answer,
        };
        let (plan, needles) = (exchange.plan, exchange.needles);
        // Where the credential's binding follows redirects: the request
        // as it goes, to send again toward a Location.
        let follow = exchange.follow.and_then(|follow| {
            let (parts, body) = (&exchange.parts, &exchange.body);
            let sent = exchange::Sent::of(conn, parts, body, exchange.bodiless, &follow)?;
            Some((follow, sent))
        });
        let request = Request::from_parts(exchange.parts, exchange.body);
        let forwarded = self
            .forward(conn, request, &needles, exchange.sent_token)
            .await;
        let followed = match (forwarded, follow) {
            (Ok(response), Some((follow, sent))) => {
                self.follow(conn, follow, sent, response, needles).await
            }
            (forwarded, _) => forwarded.map(|response| (response, needles)),
        };
        let answered = match followed {
            Ok((response, needles)) => self.answer(conn, plan, needles, response),
            Err(refusal) => Err(refusal),
        };
        answered.unwrap_or_else(|refusal| self.refuse(conn, refusal))
    }

    /// Sluice's answer to a request it refused, from any stage: counted
    /// (by status class, and by reason where a counter keeps reasons),
    /// audited with the rule, and answered as JSON.
    fn refuse(&self, conn: &Conn, refusal: Refusal) -> Response<Body> {
        self.account(conn, &refusal);
        let mut body = refusal.body();
        crate::refuse::name_process(&mut body, conn.who.process.as_deref());
        respond::json(refusal.status(), body)
    }

    /// Counts a refusal (by status class, and by reason where a counter
    /// keeps reasons) and audits it with the rule.
    fn account(&self, conn: &Conn, refusal: &Refusal) {
        self.count(refusal.status());
        let reason = refusal.reason();
        match refusal.counter() {
            Counter::None => {}
            Counter::CredentialRefusals => self
                .metrics
                .credential_refusals
                .with_label_values(&[reason])
                .inc(),
            Counter::UpstreamErrors => self
                .metrics
                .upstream_errors
                .with_label_values(&[reason])
                .inc(),
            Counter::InjectionBlocked => self
                .metrics
                .injection_detections
                .with_label_values(&[&conn.who.sandbox, "block"])
                .inc(),
        }
        self.audit.record(&Event {
            event: refusal.event(),
            verdict: refusal.verdict(),
            reason,
            rule: refusal.rule(),
            sandbox: Some(&conn.who.sandbox),
            session: conn.who.session.as_deref(),
            dst: Some(conn.key.addr.to_string()),
            host: Some(&conn.key.name),
            by: refusal.by(),
            detail: refusal.audit_detail(),
            process: conn.who.process.as_deref(),
            ..Event::default()
        });
    }

    /// One audit event about a request on `conn` (who, where and the name
    /// come from the connection).
    fn record(
        &self,
        conn: &Conn,
        event: &str,
        verdict: &str,
        reason: &str,
        rule: Option<&str>,
        detail: Option<String>,
    ) {
        self.audit.record(&Event {
            event,
            verdict,
            reason,
            rule,
            sandbox: Some(&conn.who.sandbox),
            session: conn.who.session.as_deref(),
            dst: Some(conn.key.addr.to_string()),
            host: Some(&conn.key.name),
            detail,
            process: conn.who.process.as_deref(),
            ..Event::default()
        });
    }

    /// A connection to a name new to the certificate cache, beyond its
    /// sandbox's mint budget: closed before the handshake (there is no
    /// certificate to answer with), counted and audited.
    fn mint_refused(&self, who: &Who, dst: SocketAddr, name: &str) {
        const REASON: &str = "mint_rate_limited";
        self.metrics
            .connections
            .with_label_values(&["deny", REASON])
            .inc();
        self.audit.record(&Event {
            event: "connection",
            verdict: "deny",
            reason: REASON,
            rule: Some("tls.max_mints_per_second"),
            sandbox: Some(&who.sandbox),
            session: who.session.as_deref(),
            dst: Some(dst.to_string()),
            host: Some(name),
            process: who.process.as_deref(),
            ..Event::default()
        });
    }

    fn count(&self, status: StatusCode) {
        const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];
        let class = match status.as_u16() {
            100..=199 => 0,
            200..=299 => 1,
            300..=399 => 2,
            400..=499 => 3,
            _ => 4,
        };
        self.metrics.intercepted_by_class[class]
            .inc(&self.metrics.intercepted_requests, CLASSES[class]);
    }
}

/// Where a request head ends (after its blank line), if it has.
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Host header for an HTTP/1 upstream request: the port only when not the
/// scheme's default.
fn host_header(key: &Key) -> String {
    let default = if key.tls { 443 } else { 80 };
    if key.addr.port() == default {
        match key.name.parse::<std::net::Ipv6Addr>() {
            Ok(_) => format!("[{}]", key.name),
            Err(_) => key.name.clone(),
        }
    } else {
        key.authority()
    }
}

/// Whether an upgrade is to WebSocket (the one protocol whose frames
/// Sluice reads after the 101).
fn is_websocket(parts: &hyper::http::request::Parts) -> bool {
    parts.headers.get_all(header::UPGRADE).iter().all(|v| {
        v.to_str().is_ok_and(|v| {
            v.split(',')
                .all(|protocol| protocol.trim().eq_ignore_ascii_case("websocket"))
        })
    })
}

/// Whether a request asks for an HTTP/1.1 protocol upgrade (WebSocket).
fn is_upgrade(parts: &hyper::http::request::Parts) -> bool {
    parts.version == Version::HTTP_11
        && parts.headers.contains_key(header::UPGRADE)
        && parts
            .headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|token| token.trim().eq_ignore_ascii_case("upgrade"))
}

/// Whether the request names the host its connection was decided on,
/// `name` (its Host header, or the URI's authority). One naming no host
/// (HTTP/1.0 allows that) goes upstream with `name` as its Host: the same.
fn same_host(parts: &hyper::http::request::Parts, name: &str) -> bool {
    let named = parts.uri.host().or_else(|| {
        parts
            .headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
    });
    let bare = |host: &str| {
        let host = crate::policy::network::canonical_name(host);
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned()
    };
    named.is_none_or(|host| bare(host) == bare(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_host_table() {
        let cases: &[(&str, Option<&str>, &str, bool)] = &[
            // (target, Host header, the connection's name, same)
            ("/", Some("api.test"), "api.test", true),
            ("/", Some("API.test.:8080"), "api.test", true),
            ("/", Some("other.test"), "api.test", false),
            ("/", Some("api.test.evil"), "api.test", false),
            ("http://other.test/", Some("api.test"), "api.test", false),
            ("http://api.test:81/", None, "api.test", true),
            ("/", Some("[::1]:8080"), "::1", true),
            ("/", Some("127.0.0.1"), "::1", false),
            // HTTP/1.0 without Host: forwarded with the connection's Host.
            ("/", None, "api.test", true),
        ];
        for &(target, host, name, same) in cases {
            let mut request = Request::builder().uri(target);
            if let Some(host) = host {
                request = request.header(header::HOST, host);
            }
            let (parts, ()) = request.body(()).expect("request").into_parts();
            assert_eq!(same_host(&parts, name), same, "{target} {host:?} {name}");
        }
    }
}
