//! One request after its stages: the forward to exactly the checked
//! upstream, and the answer stages (the 206 and encoding checks,
//! credential redaction, rehydration and transformations, the echoed
//! secret redacted again).

use std::{
    net::{IpAddr, SocketAddr},
    sync::Arc,
};

use http_body_util::BodyExt as _;
use hyper::{
    HeaderMap, Method, Request, Response, StatusCode, Uri, Version,
    body::{Body as _, Incoming},
    header::{self, HeaderName, HeaderValue},
    http::request,
};

use super::{
    Authority, Conn, Interceptor, answer_checks, content,
    content::ResponsePlan,
    credential, is_upgrade, is_websocket,
    redirects::{self, Follow},
    refusal::Refusal,
    respond,
    respond::Body,
    splice,
    upstream::Key,
};
use crate::{
    audit::Event,
    conn::revoked,
    credentials::{Secret, Transport},
    dns::Admission,
    policy::{
        network::{ConnRequest, NetVerdict},
        raw::Approval,
    },
    proxy::host_address,
    redact::{Needles, RedactedBody},
};

impl Interceptor {
    /// Sends the request the stages let through to exactly the upstream
    /// it was checked against; an upgrade's bytes are spliced once it is
    /// answered 101.
    pub(super) async fn forward(
        &self,
        conn: &Conn,
        request: Request<Body>,
        needles: &Option<Arc<Needles>>,
        sent_token: Option<(String, Arc<Secret>)>,
    ) -> Result<Response<Incoming>, Refusal> {
        let (mut parts, body) = request.into_parts();
        let upgrade = is_upgrade(&parts);
        let websocket = upgrade && is_websocket(&parts);
        // hyper keeps the upgraded connection's future in the extensions.
        let downstream_upgrade = if upgrade {
            parts.extensions.remove::<hyper::upgrade::OnUpgrade>()
        } else {
            None
        };

        let mut response = self
            .send(&conn.key, &conn.authority, parts, body, upgrade)
            .await?;
        if response.status() == StatusCode::UNAUTHORIZED
            && let Some((credential, token)) = &sent_token
        {
            self.credentials.rejected(credential, token);
        }
        if response.status() == StatusCode::SWITCHING_PROTOCOLS
            && let Some(downstream) = downstream_upgrade
        {
            let upstream = hyper::upgrade::on(&mut response);
            // The HTTP connection is done once it hands over its bytes, so
            // the upgraded stream watches for its own revocation.
            let revoked = {
                let (standing, who) = (self.standing.clone(), conn.who.clone());
                let metrics = self.metrics.clone();
                async move { revoked(&*standing, &who, &metrics).await }
            };
            let (needles, held) = (needles.clone(), conn.held.clone());
            tokio::spawn(async move {
                splice::upgraded(downstream, upstream, websocket, needles, revoked).await;
                drop(held);
            });
        }
        Ok(response)
    }

    /// Sends one request to exactly the upstream `key` (a pooled
    /// connection where there is one; a fresh one for an upgrade, which
    /// consumes it) and counts its answer.
    async fn send(
        &self,
        key: &Key,
        authority: &Authority,
        mut parts: request::Parts,
        body: Body,
        upgrade: bool,
    ) -> Result<Response<Incoming>, Refusal> {
        let mut sender = match self.upstreams.sender(key, upgrade).await {
            Ok(sender) => sender,
            Err(failure) => {
                return Err(Refusal::Upstream {
                    reason: failure.reason,
                    upstream: key.authority(),
                    detail: failure.detail,
                });
            }
        };
        respond::strip_hop_by_hop(&mut parts.headers, upgrade);
        // The path as parsed already (a shared copy, not parsed again).
        let path = parts.uri.path_and_query().cloned();
        // The same authority as an HTTP/1 Host (no default port): a
        // signature made by the credential stage (SigV4) covers it.
        let scheme = if key.tls { "https" } else { "http" };
        if sender.is_h2() {
            let path = path.as_ref().map_or("/", |p| p.as_str());
            let authority = &authority.text;
            parts.version = Version::HTTP_2;
            parts.uri = Uri::try_from(format!("{scheme}://{authority}{path}")).unwrap_or_default();
            parts.headers.remove(header::HOST);
        } else {
            parts.version = Version::HTTP_11;
            parts.uri = path.map_or_else(|| Uri::from_static("/"), Uri::from);
            if let Some(host) = &authority.host {
                parts.headers.insert(header::HOST, host.clone());
            }
        }
        let forwarded = Request::from_parts(parts, body);
        let response = sender.send(forwarded).await;
        if !upgrade {
            self.upstreams.give_back(key, sender);
        }
        let response = match response {
            Ok(response) => response,
            Err(err) => {
                return Err(Refusal::Upstream {
                    reason: "upstream_error",
                    upstream: key.authority(),
                    detail: format!("the upstream failed mid-request: {err}"),
                });
            }
        };
        self.count(response.status());
        Ok(response)
    }

    /// The answer stages over the upstream's answer; `Err` refuses it.
    pub(super) fn answer(
        &self,
        conn: &Conn,
        plan: ResponsePlan,
        needles: Option<Arc<Needles>>,
        response: Response<Incoming>,
    ) -> Result<Response<Body>, Refusal> {
        let upstream = || conn.key.authority();
        if let Some(refusal) = answer_checks::range(response.status(), needles.is_some(), upstream)
        {
            return Err(refusal);
        }
        let (mut parts, body) = response.into_parts();
        // An HTTP/1.1 upstream's own reason phrase would be written back
        // as it came (hyper keeps it in the extensions), unread by any
        // stage: one that carried an echoed secret would pass redaction.
        // The sandbox gets the standard phrase of the status.
        parts.extensions.remove::<hyper::ext::ReasonPhrase>();
        respond::strip_hop_by_hop(
            &mut parts.headers,
            parts.status == StatusCode::SWITCHING_PROTOCOLS,
        );
        // Credential redaction first: no answer stage (a transformation
        // of a header or the body, rehydration) sees the echoed secret, so
        // none can rewrite part of it out of redaction's reach.
        if let Some(needles) = &needles {
            needles.redact_headers(&mut parts.headers);
        }
        let stages = self.answer_stages(conn, plan, &mut parts.headers);
        // Compressed anyway, and rewritten: decoded as it streams, so the
        // stages read what the sandbox would, and forwarded decoded.
        let body = if stages.is_some() || needles.is_some() {
            let redacting = needles.is_some();
            if let Some(refusal) =
                answer_checks::encoding(parts.status, &parts.headers, redacting, upstream)
            {
                return Err(refusal);
            }
            content::decoded(&mut parts.headers, body)
                .map_err(|why| answer_checks::undecodable(redacting, why.to_string(), upstream()))?
        } else {
            body.map_err(Into::into).boxed()
        };
        let Some(needles) = needles else {
            let body = match stages {
                Some(stages) => stages.wrap(&mut parts.headers, body),
                None => body,
            };
            return Ok(Response::from_parts(parts, body));
        };
        // The upstream may echo the secret (or an encoding of it): every
        // form is redacted, in headers and streaming through the body,
        // before the answer stages and, where there are some, after them
        // too: a rewrite could join pieces of it into the whole.
        let mut body = RedactedBody::new(body, needles.clone()).boxed();
        if let Some(stages) = stages {
            body = stages.wrap(&mut parts.headers, body);
            needles.redact_headers(&mut parts.headers);
            body = RedactedBody::new(body, needles).boxed();
        }
        parts.headers.remove(header::CONTENT_LENGTH);
        parts.headers.insert(
            HeaderName::from_static("x-sluice-redacted"),
            HeaderValue::from_static("credential"),
        );
        Ok(Response::from_parts(parts, body))
    }
}

/// A request as it went upstream, for a redirect Sluice follows: where,
/// how, with what head (the credential injected) and what body.
pub(super) struct Sent {
    url: redirects::Url,
    method: Method,
    headers: HeaderMap,
    held: redirects::Held,
}

impl Sent {
    /// The request about to be forwarded on `conn` (`bodiless`: it came
    /// without a body); `None` for an upgrade (never followed).
    pub(super) fn of(
        conn: &Conn,
        parts: &request::Parts,
        body: &Body,
        bodiless: bool,
        follow: &Follow,
    ) -> Option<Sent> {
        if is_upgrade(parts) {
            return None;
        }
        let held = match (&follow.whole, bodiless || body.is_end_stream()) {
            (Some(_), _) => redirects::Held::Whole,
            (None, true) => redirects::Held::Empty,
            (None, false) => redirects::Held::Streaming,
        };
        let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        Some(Sent {
            url: redirects::Url {
                tls: conn.key.tls,
                host: conn.key.name.clone(),
                port: conn.key.addr.port(),
                path_and_query: path_and_query.to_owned(),
            },
            method: parts.method.clone(),
            headers: parts.headers.clone(),
            held,
        })
    }
}

/// What describes a body, dropped with it when a redirect becomes a GET.
const BODY_HEADERS: [HeaderName; 6] = [
    header::CONTENT_LENGTH,
    header::CONTENT_TYPE,
    header::CONTENT_ENCODING,
    header::CONTENT_LANGUAGE,
    header::CONTENT_LOCATION,
    header::TRANSFER_ENCODING,
];

impl Interceptor {
    /// Follows the upstream's redirects for a request whose credential's
    /// binding says so (`follow_redirects`, at most that many), each hop
    /// checked as the sandbox's own request to it would be and the
    /// credential injected again for it; returns the last answer and what
    /// to redact from it. A redirect that may not be followed (see
    /// `redirects::next` and [`Interceptor::hop`]) is answered as it came.
    pub(super) async fn follow(
        &self,
        conn: &Conn,
        follow: Follow,
        mut sent: Sent,
        mut response: Response<Incoming>,
        mut needles: Option<Arc<Needles>>,
    ) -> Result<(Response<Incoming>, Option<Arc<Needles>>), Refusal> {
        let policy = conn.who.policy.clone();
        let bindings = &policy.bindings;
        let credential = follow.credential.as_str();
        let plain = bindings.allows_plain_http(credential);
        let sends_to = |host: &str| bindings.sends_to(credential, host);
        let mut body = follow.whole;
        for _ in 0..bindings.follow_redirects(credential) {
            if !response.status().is_redirection() {
                break;
            }
            let locations: Vec<&HeaderValue> = response
                .headers()
                .get_all(header::LOCATION)
                .iter()
                .collect();
            let status = response.status();
            let next = redirects::next(
                status,
                &locations,
                &sent.url,
                &sent.method,
                sent.held,
                &sends_to,
                plain,
            );
            let next = match next {
                Ok(next) => next,
                Err(why) => {
                    tracing::debug!(why, %status, "redirect answered unfollowed");
                    break;
                }
            };
            let key = match self.hop(conn, &next).await {
                Ok(key) => key,
                Err(why) => {
                    tracing::debug!(why, to = %next.url.shown(), "redirect answered unfollowed");
                    break;
                }
            };
            let mut headers = sent.headers.clone();
            let mut held = sent.held;
            if !next.keep_body {
                for name in &BODY_HEADERS {
                    headers.remove(name);
                }
                body = None;
                held = redirects::Held::Empty;
            }
            if next.url.host != sent.url.host {
                // Cookies are the sandbox's for the host it asked.
                headers.remove(header::COOKIE);
            }
            let Ok(mut uri) = Uri::try_from(next.url.path_and_query.as_str()) else {
                break;
            };
            let authority = Authority::of(&key);
            let request = credential::Request {
                sandbox: &conn.who.sandbox,
                policy: &policy,
                host: &key.name,
                transport: if key.tls {
                    Transport::Tls
                } else {
                    Transport::Plain
                },
                method: &next.method,
                authority: &authority.text,
            };
            let (outcome, hop_body) = self
                .credentials
                .reinject(request, credential, &mut headers, &mut uri, body.clone())
                .await;
            let credential::Outcome::Injected {
                needles: injected,
                token,
                ..
            } = outcome
            else {
                tracing::debug!(to = %next.url.shown(), "redirect answered unfollowed: not injected");
                break;
            };
            self.metrics
                .credential_injections
                .with_label_values(&[credential])
                .inc();
            self.followed(conn, &sent.url, &key, &next.url);
            let (mut parts, ()) = Request::new(()).into_parts();
            parts.method = next.method.clone();
            parts.uri = uri;
            parts.headers = headers.clone();
            let answer = self.send(&key, &authority, parts, hop_body, false).await?;
            if answer.status() == StatusCode::UNAUTHORIZED
                && let Some(token) = &token
            {
                self.credentials.rejected(credential, token);
            }
            response = answer;
            needles = Some(injected);
            sent = Sent {
                url: next.url,
                method: next.method,
                headers,
                held,
            };
        }
        Ok((response, needles))
    }

    /// The upstream of one hop, held to what the sandbox's own request to
    /// it would meet: the name looked up through the sandbox's DNS gate
    /// and the daemon's resolver, the network policy on that name, port
    /// and address (the SSRF guard with it), decrypted (a credential goes
    /// only where Sluice reads the answer), the methods and paths of the
    /// rule that allows it, and, where the policy's apps
    /// cover the request, an `auto` decision within a token's `tools`.
    /// `Err` says why not.
    async fn hop(&self, conn: &Conn, next: &redirects::Next) -> Result<Key, &'static str> {
        let policy = &conn.who.policy;
        let (name, url) = (next.url.host.as_str(), &next.url);
        let addrs = match name.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => {
                if let Admission::Refuse(..) = conn.who.dns.admit_lookup(name) {
                    return Err("dns_refused");
                }
                self.upstreams.lookup(name).await
            }
        };
        let ip = *addrs.first().ok_or("unresolvable")?;
        let dst = SocketAddr::new(ip, url.port);
        let network = conn.who.network();
        let verdict = network.decide(&ConnRequest {
            dst,
            sni: url.tls.then_some(name),
            host: (!url.tls).then_some(name),
            name_addrs: Some(&addrs),
            host_address: host_address::for_policy(network, ip),
            ech: false,
            exe: conn.who.process.as_deref().and_then(|p| p.exe.as_deref()),
        });
        match verdict {
            NetVerdict::Deny { reason, .. } => return Err(reason.as_str()),
            // A person is asked about a connection the sandbox makes, not
            // about a hop Sluice would make for it.
            NetVerdict::Ask { .. } => return Err("asked_destination"),
            NetVerdict::Allow { .. }
            | NetVerdict::WouldDeny { .. }
            | NetVerdict::WouldAsk { .. } => {}
        }
        if url.tls && !network.intercepts(Some(name)) {
            return Err("not_intercepted");
        }
        // The methods and paths of the rule that allows the hop, as its
        // `network_rule` stage would hold the sandbox's own request.
        if let Some(rule) = network.request_rule(Some(name), dst)
            && let Err(why) = rule.decide(next.method.as_str(), &url.path_and_query, false)
        {
            return Err(why.as_str());
        }
        let decision = policy
            .app_lookup
            .decide(name, &next.method, &url.path_and_query);
        if let Some(decision) = decision {
            let auto = decision.mode == Approval::Auto && decision.refusal.is_none();
            let action = decision
                .action
                .as_ref()
                .map(|a| format!("{}.{a}", decision.app));
            let in_tools = conn.who.tools.as_deref().is_none_or(|tools| {
                tools
                    .iter()
                    .any(|t| *t == decision.app || Some(t) == action.as_ref())
            });
            if !(auto && in_tools) {
                return Err("app_not_auto");
            }
        }
        Ok(Key {
            sandbox: conn.key.sandbox.clone(),
            name: name.to_owned(),
            addr: dst,
            tls: url.tls,
        })
    }

    /// Counts and audits one followed hop (the paths without their query).
    fn followed(&self, conn: &Conn, from: &redirects::Url, key: &Key, to: &redirects::Url) {
        self.metrics
            .connections
            .with_label_values(&["allow", "redirect_followed"])
            .inc();
        let audit = &conn.who.policy.audit;
        if !(audit.enabled && audit.log_allowed) {
            return;
        }
        let rule = format!("{}:credentials", conn.who.policy.name);
        self.audit.record(&Event {
            event: "redirect",
            verdict: "allow",
            reason: "redirect_followed",
            rule: Some(&rule),
            sandbox: Some(&conn.who.sandbox),
            session: conn.who.session.as_deref(),
            dst: Some(key.addr.to_string()),
            host: Some(&key.name),
            detail: Some(format!("followed from {} to {}", from.shown(), to.shown())),
            process: conn.who.process.as_deref(),
            ..Event::default()
        });
    }
}
