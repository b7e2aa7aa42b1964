//! Sluice's own HTTP/1.1 answer to a refused client, written where no HTTP
//! server runs on the connection yet: a steered connection refused on its
//! first bytes, an explicit-proxy request refused on its head, an
//! intercepted connection's first request head refused before hyper reads
//! it (plain or inside TLS). One status
//! line, a JSON body saying why, `x-sluice-denied` with the reason and
//! `connection: close`; then the client's leftover is drained for a moment,
//! so that closing with its bytes unread does not reset the answer away.
//! Once hyper serves a connection, its answers are hyper's
//! (`intercept::respond`).

use std::time::Duration;

use hyper::StatusCode;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

/// How long, and how many bytes, a refused client's leftover is read.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: u64 = 1 << 20;

/// The `error` of a refusal's JSON body, from its status.
pub fn error_label(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::PROXY_AUTHENTICATION_REQUIRED => "proxy_authentication_required",
        _ => "forbidden",
    }
}

/// Adds `"process": "curl (pid 412)"` to a refusal's JSON body where the
/// program behind the connection is known: the sandbox's code (and the
/// person reading its log) learns which of its programs was refused.
pub fn name_process(body: &mut serde_json::Value, process: Option<&crate::process::Process>) {
    if let (Some(process), Some(fields)) = (process, body.as_object_mut()) {
        fields.insert("process".into(), process.to_string().into());
    }
}

/// The bytes of the answer: `status` with its standard phrase, `extra`
/// header lines (each `name: value`), `reason` in `x-sluice-denied`, and
/// `body` as JSON.
pub fn encode(
    status: StatusCode,
    extra: &[(&str, &str)],
    reason: &str,
    body: &serde_json::Value,
) -> Vec<u8> {
    let body = body.to_string();
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "content-type: application/json\r\ncontent-length: {}\r\nx-sluice-denied: {reason}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Writes the answer ([`encode`]), closes the sending side, and reads what
/// the client still sends (the rest of a head, a body) for a moment and up
/// to a bound before the connection is dropped.
pub async fn answer<S>(
    mut client: S,
    status: StatusCode,
    extra: &[(&str, &str)],
    reason: &str,
    body: &serde_json::Value,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ = client.write_all(&encode(status, extra, reason, body)).await;
    let _ = client.shutdown().await;
    let (mut leftover, mut sink) = (client.take(LINGER_BYTES), tokio::io::sink());
    let _ = tokio::time::timeout(LINGER, tokio::io::copy(&mut leftover, &mut sink)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (status, extra header lines, the head it starts with, `error`)
    type Case = (
        StatusCode,
        &'static [(&'static str, &'static str)],
        &'static str,
        &'static str,
    );

    #[test]
    fn answers_carry_the_status_phrase_reason_and_json() {
        let body = serde_json::json!({"reason": "http_obs_fold"});
        #[rustfmt::skip]
        let cases: [Case; 3] = [
            (StatusCode::BAD_REQUEST, &[], "HTTP/1.1 400 Bad Request\r\n", "bad_request"),
            (StatusCode::FORBIDDEN, &[], "HTTP/1.1 403 Forbidden\r\n", "forbidden"),
            (StatusCode::PROXY_AUTHENTICATION_REQUIRED, &[("proxy-authenticate", "Bearer realm=\"sluice\"")],
             "HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Bearer realm=\"sluice\"\r\n", "proxy_authentication_required"),
        ];
        for (status, extra, head, label) in cases {
            let bytes = encode(status, extra, "http_obs_fold", &body);
            let text = String::from_utf8(bytes).expect("utf-8");
            assert!(text.starts_with(head), "{text}");
            assert!(
                text.contains("\r\nx-sluice-denied: http_obs_fold\r\nconnection: close\r\n\r\n"),
                "{text}"
            );
            let (_, json) = text.split_once("\r\n\r\n").expect("a body");
            assert!(
                text.contains(&format!("content-length: {}\r\n", json.len())),
                "{text}"
            );
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(json).expect("json"),
                body
            );
            assert_eq!(error_label(status), label);
        }
    }
}
