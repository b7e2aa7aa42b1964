//! A mock LLM API for the content tests: `/llm` answers with whatever PII
//! tokens (`[pii_…]`) the request carried, each split across several
//! server-sent events the way a model streams them (`?mode=json` answers one
//! JSON body instead); `/text` answers a fixed text for transformations.
//! `?gzip=1` compresses either answer whatever the request asked for, as
//! some servers do (the events flushed one by one, so they still stream).

use std::convert::Infallible;
use std::io::Write;

use bytes::Bytes;
use flate2::{Compression, write::GzEncoder};
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

/// What `/text` answers for `path`.
pub fn text(path: &str) -> Response<BoxBody<Bytes, Infallible>> {
    whole(path, "text/plain", TEXT.into())
}

/// An answer in one piece, gzipped when `path` asks.
fn whole(path: &str, content_type: &str, body: Vec<u8>) -> Response<BoxBody<Bytes, Infallible>> {
    let gzip = path.contains("gzip=1");
    let body = if gzip {
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&body).expect("gzip in memory");
        gz.finish().expect("gzip in memory")
    } else {
        body
    };
    let mut response = Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type);
    if gzip {
        response = response.header(header::CONTENT_ENCODING, "gzip");
    }
    response
        .body(Full::new(Bytes::from(body)).boxed())
        .expect("response")
}

pub fn answer(path: &str, body: &[u8]) -> Response<BoxBody<Bytes, Infallible>> {
    let tokens = tokens(body);
    let said = format!("You said: {}.", tokens.join(" and "));
    if path.contains("mode=json") {
        let body = json!({"choices": [{"message": {"role": "assistant", "content": said}}]});
        return whole(path, "application/json", body.to_string().into_bytes());
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
    let gzip = path.contains("gzip=1");
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        let mut gz = gzip.then(|| GzEncoder::new(Vec::new(), Compression::default()));
        for event in events {
            let bytes = match &mut gz {
                // A sync flush ends each event's compressed bytes.
                Some(gz) => {
                    gz.write_all(event.as_bytes()).expect("gzip in memory");
                    gz.flush().expect("gzip in memory");
                    std::mem::take(gz.get_mut())
                }
                None => event.into_bytes(),
            };
            if tx.send(Bytes::from(bytes)).await.is_err() {
                return;
            }
        }
        if let Some(gz) = gz {
            let _ = tx
                .send(Bytes::from(gz.finish().expect("gzip in memory")))
                .await;
        }
    });
    let mut response = Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream");
    if gzip {
        response = response.header(header::CONTENT_ENCODING, "gzip");
    }
    response.body(ChannelBody(rx).boxed()).expect("response")
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
