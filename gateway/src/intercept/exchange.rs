//! One request through interception: the request stages in their order
//! (hygiene, the host pin, the policy's head stages, approvals, dry run,
//! the content stages, credentials last), the forward to exactly the
//! checked upstream, and the answer stages (the 206 and encoding checks,
//! rehydration and transformations, the echoed secret redacted).

use std::sync::Arc;

use http_body_util::BodyExt as _;
use hyper::{
    Method, Request, Response, StatusCode, Uri, Version,
    body::Incoming,
    header::{self, HeaderName, HeaderValue},
    http::request,
};

use super::{
    Conn, Interceptor, content, content::ResponsePlan, credential, host_header, hygiene,
    is_upgrade, is_websocket, refusals, respond, respond::Body, respond::bad_request, splice,
};
use crate::{
    conn::revoked,
    credentials::Secret,
    pipeline::{RequestHead, Verdict},
    redact::{Needles, RedactedBody},
};

/// A request the request stages let through, as it goes upstream, with
/// what the answer stages need.
pub(super) struct Admitted {
    pub(super) parts: request::Parts,
    pub(super) body: Body,
    pub(super) plan: ResponsePlan,
    /// The injected secret's forms, to redact from the answer.
    pub(super) needles: Option<Arc<Needles>>,
    /// An access token sent, so a 401 to it can drop it from the cache.
    pub(super) sent_token: Option<(String, Arc<Secret>)>,
    /// The upstream's authority as an HTTP/1 Host writes it.
    pub(super) authority: String,
}

impl Interceptor {
    /// The request stages, in order; `Err` is Sluice's answer.
    pub(super) async fn request_stages(
        &self,
        request: Request<Incoming>,
        conn: &Conn,
    ) -> Result<Admitted, Response<Body>> {
        let (mut parts, mut body) = request.into_parts();
        if let Err(violation) = hygiene::check(&parts, conn.sni.as_deref()) {
            // A Host other than the SNI is a request for another origin on
            // this connection: 421 tells clients to open a new one.
            if violation == hygiene::Violation::HostNotSni {
                self.count(StatusCode::MISDIRECTED_REQUEST);
                return Err(respond::json(
                    StatusCode::MISDIRECTED_REQUEST,
                    serde_json::json!({
                        "error": "misdirected_request",
                        "reason": violation.as_str(),
                        "detail": violation.message(),
                    }),
                ));
            }
            self.count(StatusCode::BAD_REQUEST);
            return Err(bad_request(violation.as_str(), violation.message()));
        }
        if let Some(refusal) = refusals::host_changed(conn.key.tls, &parts, &conn.key.name) {
            self.count(refusal.status());
            let reason = refusal.reason();
            self.record(
                conn,
                "request",
                "deny",
                reason,
                None,
                Some(refusal.detail()),
            );
            return Err(respond::json(
                refusal.status(),
                serde_json::json!({
                    "error": "misdirected_request",
                    "reason": reason,
                    "detail": "this connection was allowed for another host; open a new connection",
                }),
            ));
        }
        let mut head = RequestHead {
            sandbox: &conn.who.sandbox,
            session: conn.who.session.as_deref(),
            policy: &conn.who.policy,
            host: &conn.key.name,
            method: &parts.method,
            uri: &parts.uri,
            headers: &mut parts.headers,
        };
        match self.pipeline.run(&mut head) {
            (_, Verdict::Continue) => {}
            (
                stage,
                Verdict::Deny {
                    status,
                    reason,
                    rule,
                },
            ) => {
                self.count(status);
                self.record(
                    conn,
                    "request",
                    "deny",
                    reason,
                    Some(&rule),
                    stage.map(|s| format!("stage {s}")),
                );
                return Err(respond::json(
                    status,
                    serde_json::json!({ "error": "forbidden", "reason": reason, "rule": rule }),
                ));
            }
            (_, Verdict::Respond { status, body }) => {
                self.count(status);
                let mut response = Response::new(respond::full(body.into()));
                *response.status_mut() = status;
                return Err(response);
            }
        }
        if let Some(answer) = self.approve(conn, &parts, &mut body).await {
            return Err(answer);
        }
        let dry_run = conn.who.policy.dry_run || conn.who.dry_run;
        if dry_run && !matches!(parts.method, Method::GET | Method::HEAD) {
            return Err(self.dry_run(parts, body, conn).await);
        }
        let (body, plan) = match self.content_request(conn, &mut parts, body).await {
            Ok(forward) => forward,
            Err(answer) => return Err(answer),
        };
        // Credentials last: no stage above ever saw the real secret.
        let authority = host_header(&conn.key);
        let request = credential::Request {
            sandbox: &conn.who.sandbox,
            policy: &conn.who.policy,
            host: &conn.key.name,
            transport: conn.transport,
            method: &parts.method,
            authority: &authority,
        };
        let body: Body = body.map_err(Into::into).boxed();
        let (outcome, body) = self
            .credentials
            .apply(request, &mut parts.headers, &mut parts.uri, body)
            .await;
        // An access token sent, so a 401 to it can drop it from the cache.
        let mut sent_token = None;
        let needles = match outcome {
            credential::Outcome::Untouched => None,
            credential::Outcome::Injected {
                credential,
                needles,
                token,
            } => {
                if let Some(refusal) = refusals::upgrade_with_credential(&parts) {
                    return Err(self.refuse_credential(conn, refusal.reason(), &credential));
                }
                self.metrics
                    .credential_injections
                    .with_label_values(&[&credential])
                    .inc();
                sent_token = token.map(|token| (credential, token));
                Some(needles)
            }
            credential::Outcome::Refused { reason, credential } => {
                return Err(self.refuse_credential(conn, reason, &credential));
            }
            credential::Outcome::Failed {
                status,
                reason,
                credential,
                detail,
                log,
            } => {
                return Err(self.credential_failed(conn, status, reason, &credential, detail, log));
            }
        };
        if needles.is_some() {
            // An answer that echoes the secret is redacted by reading it:
            // the sandbox does not get to ask for one compressed, nor for
            // compressed WebSocket frames, nor for it in ranges, each
            // shorter than the secret and so redacted as nothing, that it
            // would join again.
            parts.headers.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static("identity"),
            );
            parts.headers.remove(header::SEC_WEBSOCKET_EXTENSIONS);
            parts.headers.remove(header::RANGE);
            parts.headers.remove(header::IF_RANGE);
        }
        Ok(Admitted {
            parts,
            body,
            plan,
            needles,
            sent_token,
            authority,
        })
    }

    /// Sends the admitted request (its head, body and upstream authority)
    /// to exactly the upstream it was checked against; an upgrade's bytes
    /// are spliced once it is answered 101.
    pub(super) async fn forward(
        &self,
        conn: &Conn,
        (mut parts, body, authority): (request::Parts, Body, String),
        needles: &Option<Arc<Needles>>,
        sent_token: Option<(String, Arc<Secret>)>,
    ) -> Result<Response<Incoming>, Response<Body>> {
        let upgrade = is_upgrade(&parts);
        let websocket = upgrade && is_websocket(&parts);
        // hyper keeps the upgraded connection's future in the extensions.
        let downstream_upgrade = if upgrade {
            parts.extensions.remove::<hyper::upgrade::OnUpgrade>()
        } else {
            None
        };

        let mut sender = match self.upstreams.sender(&conn.key, upgrade).await {
            Ok(sender) => sender,
            Err(failure) => {
                return Err(self.upstream_failed(conn, failure.reason, &failure.detail));
            }
        };
        respond::strip_hop_by_hop(&mut parts.headers, upgrade);
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        // The same authority as an HTTP/1 Host (no default port): a
        // signature made by the credential stage (SigV4) covers it.
        let scheme = if conn.key.tls { "https" } else { "http" };
        if sender.is_h2() {
            parts.version = Version::HTTP_2;
            parts.uri = Uri::try_from(format!("{scheme}://{authority}{path}")).unwrap_or_default();
            parts.headers.remove(header::HOST);
        } else {
            parts.version = Version::HTTP_11;
            parts.uri = Uri::try_from(path).unwrap_or_default();
            if let Ok(host) = HeaderValue::from_str(&host_header(&conn.key)) {
                parts.headers.insert(header::HOST, host);
            }
        }
        let forwarded = Request::from_parts(parts, body);
        let response = sender.send(forwarded).await;
        if !upgrade {
            self.upstreams.give_back(&conn.key, sender);
        }
        let mut response = match response {
            Ok(response) => response,
            Err(err) => {
                return Err(self.upstream_failed(
                    conn,
                    "upstream_error",
                    &format!("the upstream failed mid-request: {err}"),
                ));
            }
        };
        self.count(response.status());
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

    /// The answer stages over the upstream's answer.
    pub(super) fn answer(
        &self,
        conn: &Conn,
        plan: ResponsePlan,
        needles: Option<Arc<Needles>>,
        response: Response<Incoming>,
    ) -> Response<Body> {
        if let Some(refusal) = refusals::range(response.status(), needles.is_some()) {
            return self.upstream_failed(conn, refusal.reason(), &refusal.detail());
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
            let refused = refusals::encoding(parts.status, &parts.headers, redacting);
            let decoded = match refused {
                Some(refusal) => Err(refusal),
                None => content::decoded(&mut parts.headers, body).map_err(|why| {
                    let why = why.to_string();
                    refusals::Refusal::Encoding { redacting, why }
                }),
            };
            match decoded {
                Ok(body) => body,
                Err(refusal) => {
                    return self.upstream_failed(conn, refusal.reason(), &refusal.detail());
                }
            }
        } else {
            body.map_err(Into::into).boxed()
        };
        let Some(needles) = needles else {
            let body = match stages {
                Some(stages) => stages.wrap(&mut parts.headers, body),
                None => body,
            };
            return Response::from_parts(parts, body);
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
        Response::from_parts(parts, body)
    }
}
