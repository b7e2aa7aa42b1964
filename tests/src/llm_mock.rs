//! A mock LLM API for the content tests: `/llm` answers with whatever PII
//! tokens (`[pii_…]`) the request carried, each split across several
//! server-sent events the way a model streams them (`?mode=json` answers one
//! JSON body instead); `/text` answers a fixed text for transformations.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{Response, StatusCode, header};
use serde_json::json;
use tokio::sync::mpsc;

use crate::stream_body::ChannelBody;

/// What `/text` answers.
pub const TEXT: &str = "build ok on internal-host-7 and internal-host-12\n";

/// The `[pii_…]` tokens in `body`, in order, deduplicated.
pub fn tokens(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    let mut found: Vec<String> = Vec::new();
    let mut rest = text.as_ref();
    while let Some(start) = rest.find("[pii_") {
        let Some(len) = rest[start..].find(']') else {
            break;
        };
        let token = rest[start..=start + len].to_owned();
        if !found.contains(&token) {
            found.push(token);
        }
        rest = &rest[start + len + 1..];
    }
    found
}

pub fn answer(path: &str, body: &[u8]) -> Response<BoxBody<Bytes, Infallible>> {
    let tokens = tokens(body);
    let said = format!("You said: {}.", tokens.join(" and "));
    if path.contains("mode=json") {
        let body = json!({"choices": [{"message": {"role": "assistant", "content": said}}]});
        return Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())).boxed())
            .expect("response");
    }
    // Each token goes out in three pieces, each in its own event, each
    // event in its own write.
    let mut pieces = vec!["You said: ".to_owned()];
    for (i, token) in tokens.iter().enumerate() {
        if i > 0 {
            pieces.push(" and ".to_owned());
        }
        let (a, rest) = token.split_at(3);
        let (b, c) = rest.split_at(rest.len() / 2);
        pieces.extend([a.to_owned(), b.to_owned(), c.to_owned()]);
    }
    pieces.push(".".to_owned());
    let mut events: Vec<String> = pieces
        .iter()
        .map(|piece| {
            let chunk = json!({"choices": [{"index": 0, "delta": {"content": piece}}]});
            format!("data: {chunk}\n\n")
        })
        .collect();
    events.push("data: [DONE]\n\n".to_owned());
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        for event in events {
            if tx.send(Bytes::from(event)).await.is_err() {
                return;
            }
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(ChannelBody(rx).boxed())
        .expect("response")
}

/// The text a client reads from an SSE answer: the `delta.content`s joined.
pub fn streamed_text(sse: &str) -> String {
    sse.split("\n\n")
        .filter_map(|event| event.trim().strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}
