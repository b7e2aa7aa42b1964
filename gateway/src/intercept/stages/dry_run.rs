//! The dry run: under a dry-run policy (or a token's dry run) a request
//! that would change something is answered 202 with a preview of what
//! would have been sent, and the upstream is never reached. Reads go on:
//! an agent under dry run still sees the world it would act on.

use http_body_util::BodyExt as _;
use hyper::{
    Method, Response, StatusCode,
    body::Bytes,
    header::{HeaderName, HeaderValue},
    http::request::Parts,
};

use super::{Exchange, Outcome};
use crate::intercept::{Conn, Interceptor, respond, respond::Body};

/// How much of a body the preview shows.
const PREVIEW: usize = 64 * 1024;

pub(super) async fn run(
    interceptor: &Interceptor,
    conn: &Conn,
    exchange: &mut Exchange,
) -> Outcome {
    let dry_run = conn.who.policy.dry_run || conn.who.dry_run;
    if !previews(dry_run, &exchange.parts.method) {
        return Outcome::Continue;
    }
    let bytes = preview(std::mem::replace(&mut exchange.body, respond::empty())).await;
    Outcome::Respond(answer(interceptor, conn, &exchange.parts, &bytes))
}

/// The 202 with the preview, audited.
fn answer(interceptor: &Interceptor, conn: &Conn, parts: &Parts, bytes: &[u8]) -> Response<Body> {
    let header_names: Vec<&str> = parts.headers.keys().map(|name| name.as_str()).collect();
    interceptor.record(
        conn,
        "dry_run",
        "intercepted",
        "dry_run",
        None,
        Some(format!("{} {}", parts.method, parts.uri.path())),
    );
    let mut response = respond::json(
        StatusCode::ACCEPTED,
        serde_json::json!({
            "dry_run": true,
            "method": parts.method.as_str(),
            "host": conn.key.name,
            "path": parts.uri.path(),
            "query": parts.uri.query(),
            "headers": header_names,
            "body": String::from_utf8_lossy(bytes),
        }),
    );
    response.headers_mut().insert(
        HeaderName::from_static("x-sluice-dry-run"),
        HeaderValue::from_static("intercepted"),
    );
    response
}

/// The body as the preview shows it.
async fn preview(mut body: Body) -> Bytes {
    // Read frame by frame: `collect()` over the boxed body defeats the
    // compiler's proof that the connection's future is `Send`.
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { break };
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > PREVIEW {
                return Bytes::from_static(b"(body larger than the 64 KiB preview)");
            }
            bytes.extend_from_slice(&data);
        }
    }
    bytes.into()
}

/// Whether a request is previewed instead of forwarded: under a dry run,
/// anything but a read.
fn previews(dry_run: bool, method: &Method) -> bool {
    dry_run && !matches!(*method, Method::GET | Method::HEAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_a_dry_run_writes_are_previewed_and_reads_go_on() {
        let cases = [
            (true, Method::GET, false),
            (true, Method::HEAD, false),
            (true, Method::POST, true),
            (true, Method::DELETE, true),
            (true, Method::OPTIONS, true),
            (false, Method::POST, false),
        ];
        for (dry_run, method, previewed) in cases {
            assert_eq!(previews(dry_run, &method), previewed, "{dry_run} {method}");
        }
    }
}
