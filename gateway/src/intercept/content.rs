//! The content stages' I/O: reading a request body up to the policy's
//! inspection limit, decoding gzip/br/zstd for inspection, counting and
//! auditing what [`content::inspect`] decided, and wrapping response
//! bodies for rehydration and response transformations. A body only
//! streaming stages rewrite (transformations, rehydration) is decoded as
//! it streams when compressed ([`decoded`]), never rewritten unread.
//!
//! A body is never forwarded uninspected when the policy inspects bodies:
//! one that cannot be decoded, or is in UTF-16 or UTF-32 (which no
//! detector reads), is refused (415), as is a protocol upgrade (403: a
//! WebSocket's frames are not read) when any content stage applies; one
//! over the limit follows
//! `pii.oversize.rest` (`block`: 413; `allow`: the first bytes are
//! inspected, the rest forwarded as it comes, and the audit event says so).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body_util::BodyExt as _;
use hyper::{
    HeaderMap, Response, StatusCode,
    body::{Body as _, Bytes, Frame, Incoming, SizeHint},
    header::{self, HeaderValue},
    http::request,
};

use super::{Conn, Interceptor, respond, respond::Body};
use crate::content::{
    self, Refusal, Stages,
    sse::SseRehydrator,
    transform::{Rules, Transformer},
    vault::{Vault, Vaults},
};
use crate::policy::raw::Direction;
use crate::redact::{Decoding, Redactor, RewrittenBody};
use sluice_scan::decode::DecodeError;

/// Inspection limit when only injection scoring reads bodies (pii's
/// default).
const DEFAULT_LIMIT: u64 = 4 * 1024 * 1024;

/// The content stages' state shared by all connections (the stages
/// themselves are the policy's, built when it loaded).
#[derive(Default)]
pub struct Content {
    pub vaults: Vaults,
}

/// What the response side has to do, decided with the request.
pub(super) struct ResponsePlan {
    rehydrate: bool,
    transforms: Rules,
}

/// The stages that rewrite one answer ([`Interceptor::answer_stages`]).
pub(super) struct AnswerStages {
    vault: Option<Arc<Vault>>,
    transforms: Rules,
}

impl AnswerStages {
    /// Wraps an answer's body, decoded already ([`decoded`]), for
    /// rehydration and response transformations.
    pub(super) fn wrap(self, headers: &mut HeaderMap, body: Body) -> Body {
        headers.remove(header::CONTENT_LENGTH);
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.to_ascii_lowercase())
            .unwrap_or_default();
        let events = content_type.starts_with("text/event-stream");
        let mut body = body;
        if let Some(vault) = self.vault {
            body = if events {
                RewrittenBody::with(body, SseRehydrator::new(vault.needles(false))).boxed()
            } else {
                let json = content_type.contains("json");
                RewrittenBody::with(body, Redactor::new(vault.needles(json))).boxed()
            };
        }
        if !self.transforms.is_empty() {
            let transformer = if events {
                Transformer::events(self.transforms)
            } else {
                Transformer::new(self.transforms)
            };
            body = RewrittenBody::with(body, transformer).boxed();
        }
        body
    }
}

impl Interceptor {
    /// Runs the content stages over a request body: the body to forward,
    /// or Sluice's answer.
    pub(super) async fn content_request(
        &self,
        conn: &Conn,
        parts: &mut request::Parts,
        body: Incoming,
    ) -> Result<(Body, ResponsePlan), Response<Body>> {
        let policy = &conn.who.policy;
        let stages = &policy.content;
        let transforms = stages.transforms.rules(&conn.key.name, Direction::Request);
        let plan = ResponsePlan {
            rehydrate: stages.pii.as_ref().is_some_and(|pii| pii.rehydrate),
            transforms: stages.transforms.rules(&conn.key.name, Direction::Response),
        };
        let reads = stages.inspects() || !transforms.is_empty() || !plan.transforms.is_empty();
        if reads && super::is_upgrade(parts) {
            // After the 101 the connection carries WebSocket frames, which
            // no content stage reads: refused rather than spliced unread.
            let rule = if stages.inspects() {
                inspecting_rule(&policy.name, stages)
            } else {
                format!("{}:transformations", policy.name)
            };
            return Err(self.refuse_content(
                conn,
                StatusCode::FORBIDDEN,
                "upgrade_not_inspectable",
                &rule,
                "a protocol upgrade (WebSocket) carries frames the content stages cannot read"
                    .to_owned(),
            ));
        }
        if !plan.transforms.is_empty() {
            plain_answer(parts);
        }
        transforms.apply_headers(&mut parts.headers);
        if !stages.inspects() {
            // Nothing to inspect: transformations (if any) stream,
            // unbuffered, over the body decoded as it streams.
            if transforms.is_empty() {
                return Ok((body.map_err(Into::into).boxed(), plan));
            }
            let body = decoded(&mut parts.headers, body).map_err(|err| {
                self.refuse_content(
                    conn,
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "body_not_decodable",
                    &format!("{}:transformations", policy.name),
                    err.to_string(),
                )
            })?;
            parts.headers.remove(header::CONTENT_LENGTH);
            let body = RewrittenBody::with(body, Transformer::new(transforms));
            return Ok((body.boxed(), plan));
        }
        let (limit, rest_allowed) = match stages.inspect_bytes() {
            Some(oversize) => (
                oversize.inspect_bytes,
                oversize.rest == crate::policy::raw::OversizeRest::Allow,
            ),
            None => (DEFAULT_LIMIT, false),
        };
        let mut read = match Prefix::read(body, limit as usize).await {
            Ok(read) => read,
            Err(err) => {
                self.count(StatusCode::BAD_REQUEST);
                return Err(respond::bad_request("body_unreadable", &err.to_string()));
            }
        };
        let oversize = read.rest.is_some();
        // The limit is pii's (`pii.oversize`); injection scoring alone
        // reads up to the default limit, and is the rule named then.
        let rule = match stages.pii {
            Some(_) => format!("{}:pii.oversize", policy.name),
            None => inspecting_rule(&policy.name, stages),
        };
        if oversize && !rest_allowed {
            read.drain_rest().await;
            return Err(self.refuse_content(
                conn,
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large_to_inspect",
                &rule,
                format!("the body exceeds the {limit}-byte inspection limit"),
            ));
        }
        let encoding = content_encoding(&parts.headers);
        let decoded = match &encoding {
            None => None,
            Some(encoding) => {
                let decoded =
                    sluice_scan::decode::decode(Some(encoding), &read.bytes, limit as usize);
                match decoded {
                    // A compressed prefix cannot be rewritten and re-joined to
                    // its rest, so over the limit is refused whatever `rest` says.
                    Ok(decoded) if decoded.truncated || oversize => {
                        read.drain_rest().await;
                        return Err(self.refuse_content(
                            conn,
                            StatusCode::PAYLOAD_TOO_LARGE,
                            "body_too_large_to_inspect",
                            &rule,
                            format!("a compressed body over the {limit}-byte inspection limit"),
                        ));
                    }
                    Ok(decoded) => Some(decoded.bytes.into_owned()),
                    Err(err) => {
                        return Err(self.refuse_content(
                            conn,
                            StatusCode::UNSUPPORTED_MEDIA_TYPE,
                            "body_not_decodable",
                            &inspecting_rule(&policy.name, stages),
                            err.to_string(),
                        ));
                    }
                }
            }
        };
        let inspected: &[u8] = decoded.as_deref().unwrap_or(&read.bytes);
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        if let Some(why) = sluice_scan::charset::unreadable(content_type, inspected) {
            read.drain_rest().await;
            return Err(self.refuse_content(
                conn,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                why.reason(),
                &inspecting_rule(&policy.name, stages),
                why.to_string(),
            ));
        }
        let vault = self
            .content
            .vaults
            .session(&conn.who.sandbox, conn.who.session.as_deref());
        let inspection = content::inspect(
            stages,
            &transforms,
            &vault,
            &policy.name,
            content_type,
            inspected,
        );
        self.audit_detections(conn, &inspection, oversize, limit);
        if plan.rehydrate && !vault.is_empty() {
            plain_answer(parts);
        }
        match inspection.refusal {
            Some(Refusal::Pii { kinds, rule }) => {
                return Err(self.refuse_content_json(
                    conn,
                    "pii_blocked",
                    &rule,
                    format!("types {}", kinds.join(",")),
                    serde_json::json!({ "types": kinds }),
                ));
            }
            Some(Refusal::Injection { score, signals }) => {
                return Err(self.refuse_content_json(
                    conn,
                    "prompt_injection",
                    &format!("{}:injection_defense", policy.name),
                    format!("score {score:.2}; signals {}", signals.join(",")),
                    serde_json::json!({ "score": score, "signals": signals }),
                ));
            }
            None => {}
        }
        let changed = match (inspection.rewritten, decoded) {
            (Some(bytes), _) | (None, Some(bytes)) => {
                // Forwarded decoded (and rewritten): identity, new length.
                parts.headers.remove(header::CONTENT_ENCODING);
                read.bytes = Bytes::from(bytes);
                true
            }
            (None, None) => false,
        };
        if changed {
            // The length is known when the whole body was read; otherwise
            // hyper frames the rest (chunked on HTTP/1.1).
            parts.headers.remove(header::TRANSFER_ENCODING);
            parts.headers.remove(header::CONTENT_LENGTH);
            if read.rest.is_none() {
                parts
                    .headers
                    .insert(header::CONTENT_LENGTH, HeaderValue::from(read.bytes.len()));
            }
        }
        Ok((read.into_body().boxed(), plan))
    }

    /// The stages that rewrite this answer (rehydration when the session
    /// has tokens, response transformations), its headers transformed
    /// already; `None` when no stage rewrites it.
    pub(super) fn answer_stages(
        &self,
        conn: &Conn,
        plan: ResponsePlan,
        headers: &mut HeaderMap,
    ) -> Option<AnswerStages> {
        let vault = plan
            .rehydrate
            .then(|| {
                self.content
                    .vaults
                    .existing(&conn.who.sandbox, conn.who.session.as_deref())
            })
            .flatten();
        plan.transforms.apply_headers(headers);
        (vault.is_some() || !plan.transforms.is_empty()).then_some(AnswerStages {
            vault,
            transforms: plan.transforms,
        })
    }

    /// Counts and audits what the stages found; values never leave here.
    fn audit_detections(
        &self,
        conn: &Conn,
        inspection: &content::Inspection,
        oversize: bool,
        limit: u64,
    ) {
        let policy = &conn.who.policy.name;
        for detection in &inspection.detections {
            let action = action_name(detection.action);
            self.metrics
                .pii_detections
                .with_label_values(&[&conn.who.sandbox, detection.kind, action])
                .inc();
        }
        if !inspection.detections.is_empty() && inspection.refusal.is_none() {
            let mut kinds: Vec<String> = inspection
                .detections
                .iter()
                .map(|d| format!("{}:{}", d.kind, action_name(d.action)))
                .collect();
            kinds.sort();
            kinds.dedup();
            let mut detail = format!("detected {}", kinds.join(","));
            if oversize {
                detail.push_str(&format!("; only the first {limit} bytes were inspected"));
            }
            self.record(
                conn,
                "pii",
                "redact",
                "pii_detected",
                Some(&format!("{policy}:pii")),
                Some(detail),
            );
        } else if oversize {
            self.record(
                conn,
                "pii",
                "allow",
                "body_partly_inspected",
                Some(&format!("{policy}:pii.oversize")),
                Some(format!("only the first {limit} bytes were inspected")),
            );
        }
        if let Some(assessment) = &inspection.injection {
            self.metrics
                .injection_detections
                .with_label_values(&[&conn.who.sandbox, "audit"])
                .inc();
            let signals: Vec<&str> = assessment.signals.iter().map(|s| s.as_str()).collect();
            self.record(
                conn,
                "prompt_injection",
                "allow",
                "prompt_injection_audited",
                Some(&format!("{policy}:injection_defense")),
                Some(format!(
                    "score {:.2}; signals {}",
                    assessment.score,
                    signals.join(",")
                )),
            );
        }
    }

    fn refuse_content(
        &self,
        conn: &Conn,
        status: StatusCode,
        reason: &'static str,
        rule: &str,
        detail: String,
    ) -> Response<Body> {
        self.count(status);
        self.record(
            conn,
            "content",
            "deny",
            reason,
            Some(rule),
            Some(detail.clone()),
        );
        respond::json(
            status,
            serde_json::json!({"error": "refused", "reason": reason, "rule": rule, "detail": detail}),
        )
    }

    /// A 403 for content: the reason, the rule, and `extra` fields (types,
    /// signals; never a value).
    fn refuse_content_json(
        &self,
        conn: &Conn,
        reason: &'static str,
        rule: &str,
        detail: String,
        extra: serde_json::Value,
    ) -> Response<Body> {
        self.count(StatusCode::FORBIDDEN);
        if reason == "prompt_injection" {
            self.metrics
                .injection_detections
                .with_label_values(&[&conn.who.sandbox, "block"])
                .inc();
        }
        self.record(conn, "content", "deny", reason, Some(rule), Some(detail));
        let mut body = serde_json::json!({"error": "forbidden", "reason": reason, "rule": rule});
        if let (Some(body), serde_json::Value::Object(extra)) = (body.as_object_mut(), extra) {
            body.extend(extra);
        }
        respond::json(StatusCode::FORBIDDEN, body)
    }
}

/// The policy section that makes bodies be inspected, named by a refusal
/// of a body that cannot be: `pii` when it is on, else `injection_defense`.
fn inspecting_rule(policy: &str, stages: &Stages) -> String {
    let section = if stages.pii.is_some() {
        "pii"
    } else {
        "injection_defense"
    };
    format!("{policy}:{section}")
}

/// A message's Content-Encoding, every field of it joined (a list split
/// over several fields is one list, RFC 9110 section 5.3: reading only the
/// first would inspect a body still encoded by the second); `None` when
/// absent or only `identity`. Bytes that are not text stay in it, as
/// replacement characters, for decoding to refuse.
pub(super) fn content_encoding(headers: &HeaderMap) -> Option<String> {
    let fields: Vec<_> = headers
        .get_all(header::CONTENT_ENCODING)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()))
        .collect();
    let joined = fields.join(",");
    let identity = sluice_scan::decode::codings(&joined).next().is_none();
    (!identity).then_some(joined)
}

/// A body a stage rewrites, as it reads: decoded as it streams when its
/// Content-Encoding says it is compressed (the header and the length,
/// which change, are dropped), or why it cannot be.
pub(super) fn decoded<B>(headers: &mut HeaderMap, body: B) -> Result<Body, DecodeError>
where
    B: hyper::body::Body<Data = Bytes> + Unpin + Send + Sync + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Some(encoding) = content_encoding(headers) else {
        return Ok(body.map_err(Into::into).boxed());
    };
    let decoding = Decoding::new(&encoding)?;
    headers.remove(header::CONTENT_ENCODING);
    headers.remove(header::CONTENT_LENGTH);
    Ok(decoding.body(body).boxed())
}

/// Asks the upstream for an uncompressed answer: rewriting it needs the bytes.
fn plain_answer(parts: &mut request::Parts) {
    parts.headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
}

fn action_name(action: crate::policy::raw::PiiAction) -> &'static str {
    match action {
        crate::policy::raw::PiiAction::Redact => "redact",
        crate::policy::raw::PiiAction::Block => "block",
        crate::policy::raw::PiiAction::LogOnly => "log_only",
    }
}

/// A request body read up to a limit: the bytes read, trailers if the body
/// ended with them, and the unread rest when it did not end.
struct Prefix {
    bytes: Bytes,
    trailers: Option<HeaderMap>,
    rest: Option<Incoming>,
}

impl Prefix {
    /// Reads and drops what is left of a refused body past the prefix, so
    /// the connection can carry the answer and the next request.
    async fn drain_rest(&mut self) {
        if let Some(rest) = self.rest.as_mut() {
            respond::drain(rest).await;
        }
    }

    /// Reads frames until the body ends or more than `limit` bytes arrived
    /// (the frame that crosses the limit is kept whole).
    async fn read(mut body: Incoming, limit: usize) -> Result<Prefix, hyper::Error> {
        let mut bytes = Vec::new();
        while bytes.len() <= limit {
            match body.frame().await {
                None => {
                    return Ok(Prefix {
                        bytes: bytes.into(),
                        trailers: None,
                        rest: None,
                    });
                }
                Some(frame) => match frame?.into_data() {
                    Ok(data) => bytes.extend_from_slice(&data),
                    Err(frame) => {
                        return Ok(Prefix {
                            bytes: bytes.into(),
                            trailers: frame.into_trailers().ok(),
                            rest: None,
                        });
                    }
                },
            }
        }
        let rest = (!body.is_end_stream()).then_some(body);
        Ok(Prefix {
            bytes: bytes.into(),
            trailers: None,
            rest,
        })
    }

    fn into_body(self) -> Frames {
        let mut frames = VecDeque::new();
        if !self.bytes.is_empty() {
            frames.push_back(Frame::data(self.bytes));
        }
        if let Some(trailers) = self.trailers {
            frames.push_back(Frame::trailers(trailers));
        }
        Frames {
            frames,
            rest: self.rest,
        }
    }
}

/// Frames already read, then whatever of the body is left.
struct Frames {
    frames: VecDeque<Frame<Bytes>>,
    rest: Option<Incoming>,
}

impl hyper::body::Body for Frames {
    type Data = Bytes;
    type Error = respond::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(frame) = self.frames.pop_front() {
            return Poll::Ready(Some(Ok(frame)));
        }
        match self.rest.as_mut() {
            Some(rest) => Pin::new(rest).poll_frame(cx).map_err(Into::into),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_empty() && self.rest.as_ref().is_none_or(|r| r.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        match &self.rest {
            None => SizeHint::with_exact(
                self.frames
                    .iter()
                    .filter_map(|f| f.data_ref().map(|d| d.len() as u64))
                    .sum(),
            ),
            Some(_) => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_content_encoding_field_is_read() {
        let cases: &[(&[&[u8]], Option<&str>)] = &[
            (&[], None),
            (&[b"identity"], None),
            (&[b" Identity , identity"], None),
            (&[b"gzip"], Some("gzip")),
            // The second field encodes the body too.
            (&[b"identity", b"gzip"], Some("identity,gzip")),
            (&[b"gzip", b"br"], Some("gzip,br")),
            // Not text: kept, for decoding to refuse.
            (&[b"gzip\xff"], Some("gzip\u{FFFD}")),
        ];
        for &(fields, want) in cases {
            let mut headers = HeaderMap::new();
            for field in fields {
                let value = HeaderValue::from_bytes(field).expect("a field value");
                headers.append(header::CONTENT_ENCODING, value);
            }
            assert_eq!(content_encoding(&headers).as_deref(), want, "{fields:?}");
        }
    }
}
