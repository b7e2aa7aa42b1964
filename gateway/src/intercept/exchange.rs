//! One request after its stages: the forward to exactly the checked
//! upstream, and the answer stages (the 206 and encoding checks,
//! credential redaction, rehydration and transformations, the echoed
//! secret redacted again).

use std::sync::Arc;

use http_body_util::BodyExt as _;
use hyper::{
    Request, Response, StatusCode, Uri, Version,
    body::Incoming,
    header::{self, HeaderName, HeaderValue},
};

use super::{
    Conn, Interceptor, answer_checks, content, content::ResponsePlan, host_header, is_upgrade,
    is_websocket, refusal::Refusal, respond, respond::Body, splice,
};
use crate::{
    conn::revoked,
    credentials::Secret,
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
        let authority = host_header(&conn.key);
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
                return Err(Refusal::Upstream {
                    reason: failure.reason,
                    upstream: conn.key.authority(),
                    detail: failure.detail,
                });
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
            if let Ok(host) = HeaderValue::from_str(&authority) {
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
                return Err(Refusal::Upstream {
                    reason: "upstream_error",
                    upstream: conn.key.authority(),
                    detail: format!("the upstream failed mid-request: {err}"),
                });
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
