//! The body stages (PII, prompt-injection scoring, request
//! transformations), in one read of the body: up to the policy's
//! inspection limit, decoded from gzip/br/zstd for inspection, judged by
//! [`content::inspect`], forwarded decoded and rewritten where it changed.
//! A body only transformations read streams through them instead.
//!
//! A body is never forwarded unread where a stage must read it: a protocol
//! upgrade (403: a WebSocket's frames are not read), a body that cannot
//! be decoded or is in a charset no detector reads (415), one over the
//! limit under `pii.oversize.rest: block` (413; under `allow` the first
//! bytes are inspected, the rest forwarded as it comes, and the audit
//! event says so). Those refusals are the pure functions at the bottom.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body_util::BodyExt as _;
use hyper::{
    HeaderMap, StatusCode,
    body::{Body as _, Bytes, Frame, SizeHint},
    header::{self, HeaderValue},
};

use super::{Exchange, Outcome};
use crate::content::{self, Stages, transform::Transformer};
use crate::intercept::{
    Conn, Interceptor,
    content::{ResponsePlan, content_encoding, decoded, inspecting_rule, plain_answer},
    is_upgrade,
    refusal::Refusal,
    respond::{self, Body, BoxError},
};
use crate::policy::raw::{Direction, OversizeRest};
use crate::redact::RewrittenBody;

/// Inspection limit when only injection scoring reads bodies (pii's
/// default).
const DEFAULT_LIMIT: u64 = 4 * 1024 * 1024;

/// The reasons this stage refuses with.
#[cfg(test)]
pub(super) const REASONS: &[&str] = &[
    "upgrade_not_inspectable",
    "body_unreadable",
    "body_too_large_to_inspect",
    "body_not_decodable",
    "body_charset_not_inspectable",
    "body_nesting_not_inspectable",
    "body_part_encoding_not_inspectable",
    "body_content_type_ambiguous",
    "pii_blocked",
    "prompt_injection",
];

pub(super) async fn run(
    interceptor: &Interceptor,
    conn: &Conn,
    exchange: &mut Exchange,
) -> Outcome {
    let policy = &conn.who.policy;
    let stages = &policy.content;
    let parts = &mut exchange.parts;
    let transforms = stages.transforms.rules(&conn.key.name, Direction::Request);
    exchange.plan = ResponsePlan {
        rehydrate: stages.pii.as_ref().is_some_and(|pii| pii.rehydrate),
        vault: None,
        transforms: stages.transforms.rules(&conn.key.name, Direction::Response),
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let scored = stages.scores_injection(&conn.key.name, path);
    let inspects = stages.inspects_request(&conn.key.name, path);
    let reads = inspects || !transforms.is_empty() || !exchange.plan.transforms.is_empty();
    if let Some(refusal) = upgrade(&policy.name, stages, reads, is_upgrade(parts)) {
        return Outcome::Refuse(refusal);
    }
    if !exchange.plan.transforms.is_empty() {
        plain_answer(parts);
    }
    transforms.apply_headers(&mut parts.headers);
    let body = std::mem::replace(&mut exchange.body, respond::empty());
    if !inspects {
        // Nothing to inspect: transformations (if any) stream,
        // unbuffered, over the body decoded as it streams.
        if transforms.is_empty() {
            exchange.body = body;
            return Outcome::Continue;
        }
        let rule = || format!("{}:transformations", policy.name);
        let mut body = match decoded(&mut parts.headers, body) {
            Ok(body) => body,
            Err(err) => return Outcome::Refuse(not_decodable(rule(), err.to_string())),
        };
        // The first decoded bytes before anything goes upstream: a body
        // that is not in the coding it declares is refused here, not sent
        // on half-read (a later corruption still cuts the request short).
        let first = match body.frame().await {
            Some(Err(err)) => return Outcome::Refuse(not_decodable(rule(), err.to_string())),
            first => first.and_then(Result::ok),
        };
        let body = Frames {
            frames: first.into_iter().collect(),
            rest: Some(body),
        };
        parts.headers.remove(header::CONTENT_LENGTH);
        exchange.body = RewrittenBody::with(body.boxed(), Transformer::new(transforms)).boxed();
        return Outcome::Continue;
    }
    let (limit, rest_allowed) = match stages.inspect_bytes() {
        Some(oversize) => (oversize.inspect_bytes, oversize.rest == OversizeRest::Allow),
        None => (DEFAULT_LIMIT, false),
    };
    let mut read = match Prefix::read(body, limit as usize).await {
        Ok(read) => read,
        Err(err) => {
            return Outcome::Refuse(Refusal::BodyUnreadable {
                why: err.to_string(),
            });
        }
    };
    // Over the limit even when it arrived whole, in the one frame that
    // crossed it: the limit is the policy's, not the connection's reads.
    let oversize = read.rest.is_some() || read.bytes.len() as u64 > limit;
    // The limit is pii's (`pii.oversize`); injection scoring alone
    // reads up to the default limit, and is the rule named then.
    // Named only when something is refused: no rule is written per request.
    let limit_rule = || match stages.pii {
        Some(_) => format!("{}:pii.oversize", policy.name),
        None => inspecting_rule(&policy.name, stages),
    };
    if let Some(refusal) = too_large(&limit_rule, limit, oversize && !rest_allowed, false) {
        read.drain_rest().await;
        return Outcome::Refuse(refusal);
    }
    let decoded = match content_encoding(&parts.headers) {
        None => None,
        Some(encoding) => {
            match sluice_scan::decode::decode(Some(&encoding), &read.bytes, limit as usize) {
                Ok(decoded) => {
                    // A compressed prefix cannot be rewritten and re-joined
                    // to its rest, so over the limit is refused whatever
                    // `rest` says.
                    if let Some(refusal) =
                        too_large(&limit_rule, limit, decoded.truncated || oversize, true)
                    {
                        read.drain_rest().await;
                        return Outcome::Refuse(refusal);
                    }
                    Some(decoded.bytes.into_owned())
                }
                Err(err) => {
                    let rule = inspecting_rule(&policy.name, stages);
                    return Outcome::Refuse(not_decodable(rule, err.to_string()));
                }
            }
        }
    };
    let inspected: &[u8] = decoded.as_deref().unwrap_or(&read.bytes);
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    if let Some(refusal) = charset(
        &|| inspecting_rule(&policy.name, stages),
        content_type,
        inspected,
    ) {
        read.drain_rest().await;
        return Outcome::Refuse(refusal);
    }
    let vault = interceptor
        .content
        .vaults
        .session(&conn.who.sandbox, conn.who.session.as_deref());
    let inspection = content::inspect(
        stages,
        scored,
        &transforms,
        &vault,
        &policy.name,
        content_type,
        inspected,
    );
    interceptor.audit_detections(conn, &inspection, oversize, limit);
    if exchange.plan.rehydrate {
        exchange.plan.vault = Some(vault.clone());
    }
    if exchange.plan.rehydrate && !vault.is_empty() {
        plain_answer(parts);
    }
    match inspection.refusal {
        Some(content::Refusal::Pii { kinds, rule }) => {
            let kinds = kinds.into_iter().map(str::to_owned).collect();
            return Outcome::Refuse(Refusal::Pii { kinds, rule });
        }
        Some(content::Refusal::Injection { score, signals }) => {
            let rule = format!("{}:injection_defense", policy.name);
            return Outcome::Refuse(Refusal::Injection {
                score,
                signals,
                rule,
            });
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
    exchange.body = read.into_body().boxed();
    Outcome::Continue
}

/// After a 101 the connection carries WebSocket frames, which no content
/// stage reads: an upgrade is refused where a stage `reads` bodies,
/// rather than spliced unread.
fn upgrade(policy: &str, stages: &Stages, reads: bool, upgrade: bool) -> Option<Refusal> {
    if !(reads && upgrade) {
        return None;
    }
    let rule = if stages.inspects() {
        inspecting_rule(policy, stages)
    } else {
        format!("{policy}:transformations")
    };
    Some(Refusal::Content {
        status: StatusCode::FORBIDDEN,
        reason: "upgrade_not_inspectable",
        rule,
        detail: "a protocol upgrade (WebSocket) carries frames the content stages cannot read"
            .to_owned(),
    })
}

/// A body over the inspection limit where its rest may not go unread
/// (`refused`: `rest: block`, or `compressed`, whose prefix cannot be
/// rewritten and joined to its rest).
fn too_large(
    rule: &dyn Fn() -> String,
    limit: u64,
    refused: bool,
    compressed: bool,
) -> Option<Refusal> {
    refused.then(|| Refusal::Content {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        reason: "body_too_large_to_inspect",
        rule: rule(),
        detail: match compressed {
            false => format!("the body exceeds the {limit}-byte inspection limit"),
            true => format!("a compressed body over the {limit}-byte inspection limit"),
        },
    })
}

/// A body whose encoding cannot be undone, where a stage must read it.
fn not_decodable(rule: String, why: String) -> Refusal {
    Refusal::Content {
        status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
        reason: "body_not_decodable",
        rule,
        detail: why,
    }
}

/// A body in a charset (or a multipart form) no detector reads.
fn charset(rule: &dyn Fn() -> String, content_type: Option<&str>, body: &[u8]) -> Option<Refusal> {
    let why = sluice_scan::charset::unreadable(content_type, body)?;
    Some(Refusal::Content {
        status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
        reason: why.reason(),
        rule: rule(),
        detail: why.to_string(),
    })
}

/// A request body read up to a limit: the bytes read, trailers if the body
/// ended with them, and the unread rest when it did not end.
struct Prefix {
    bytes: Bytes,
    trailers: Option<HeaderMap>,
    rest: Option<Body>,
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
    async fn read(mut body: Body, limit: usize) -> Result<Prefix, BoxError> {
        let mut bytes = Vec::new();
        while bytes.len() <= limit {
            let Some(frame) = body.frame().await else {
                return Ok(Prefix {
                    bytes: bytes.into(),
                    trailers: None,
                    rest: None,
                });
            };
            match frame?.into_data() {
                Ok(data) => bytes.extend_from_slice(&data),
                Err(frame) => {
                    return Ok(Prefix {
                        bytes: bytes.into(),
                        trailers: frame.into_trailers().ok(),
                        rest: None,
                    });
                }
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
    rest: Option<Body>,
}

impl hyper::body::Body for Frames {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(frame) = self.frames.pop_front() {
            return Poll::Ready(Some(Ok(frame)));
        }
        match self.rest.as_mut() {
            Some(rest) => Pin::new(rest).poll_frame(cx),
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

    fn stages(yaml: &str) -> Stages {
        let raw: crate::policy::raw::Policy = serde_yaml::from_str(yaml).expect("policy");
        let compiled =
            crate::policy::compiled::CompiledPolicy::compile("p", &raw).expect("compiles");
        compiled.content
    }

    #[test]
    fn upgrades_are_refused_where_a_stage_reads_bodies() {
        let pii = stages("pii: {enabled: true}\n");
        let none = stages("{}\n");
        let cases = [
            (&pii, true, true, Some("p:pii")),
            (&pii, true, false, None),
            (&none, false, true, None),
            // Transformations alone read bodies too.
            (&none, true, true, Some("p:transformations")),
        ];
        for (stages, reads, upgrading, rule) in cases {
            let got = upgrade("p", stages, reads, upgrading);
            assert_eq!(
                got.as_ref().and_then(Refusal::rule),
                rule,
                "{reads} {upgrading}"
            );
            if let Some(refusal) = got {
                assert_eq!(
                    (refusal.status(), refusal.reason()),
                    (StatusCode::FORBIDDEN, "upgrade_not_inspectable")
                );
            }
        }
    }

    #[test]
    fn bodies_that_cannot_be_read_whole_are_refused() {
        #[rustfmt::skip]
        let cases = [
            // (over the limit and not let through, compressed, refused)
            (false, false, None),
            (true, false, Some("the body exceeds the 10-byte inspection limit")),
            (true, true, Some("a compressed body over the 10-byte inspection limit")),
        ];
        for (refused, compressed, detail) in cases {
            let got = too_large(&|| "p:pii.oversize".into(), 10, refused, compressed);
            assert_eq!(
                got.as_ref().and_then(Refusal::audit_detail).as_deref(),
                detail
            );
            if let Some(refusal) = got {
                assert_eq!(refusal.status(), StatusCode::PAYLOAD_TOO_LARGE);
            }
        }
        let undecodable = not_decodable("p:pii".into(), "bad gzip".into());
        assert_eq!(
            (undecodable.status(), undecodable.reason()),
            (StatusCode::UNSUPPORTED_MEDIA_TYPE, "body_not_decodable")
        );
        #[rustfmt::skip]
        let charsets: [(Option<&str>, &[u8], Option<&str>); 3] = [
            (Some("application/json"), b"{\"a\":1}", None),
            (Some("text/plain; charset=utf-16"), b"\xff\xfea\x00", Some("body_charset_not_inspectable")),
            (None, b"plain", None),
        ];
        use sluice_scan::charset::Unreadable;
        let unreadable = [
            Unreadable::Charset("utf-16"),
            Unreadable::Nesting,
            Unreadable::PartEncoding("base64"),
            Unreadable::Ambiguous("charset"),
        ];
        for why in unreadable {
            assert!(REASONS.contains(&why.reason()), "{why:?}");
        }
        for (content_type, body, reason) in charsets {
            let got = charset(&|| "p:pii".into(), content_type, body);
            assert_eq!(
                got.as_ref().map(Refusal::reason),
                reason,
                "{content_type:?}"
            );
        }
    }
}
