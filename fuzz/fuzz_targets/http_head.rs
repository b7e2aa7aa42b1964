//! HTTP/1 head hygiene (`intercept::hygiene`): the raw-head check (what
//! hyper would normalise away: Content-Length with Transfer-Encoding, two
//! Content-Lengths) on any bytes, and the parsed-head check on any head
//! httparse reads, with and without a TLS server name. Neither may panic;
//! the raw check must refuse every head that both frames its body by
//! Content-Length and by Transfer-Encoding, whatever the names' case.
#![no_main]

use hyper::http::{HeaderName, HeaderValue, Method, Request, Version};
use libfuzzer_sys::fuzz_target;
use sluice::intercept::hygiene::{Violation, check, check_raw_head};

fuzz_target!(|input: &[u8]| {
    let Some((&pick, head)) = input.split_first() else {
        return;
    };
    let raw = check_raw_head(head);
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut request = httparse::Request::new(&mut headers);
    let Ok(httparse::Status::Complete(_)) = request.parse(head) else {
        return;
    };
    let has = |name: &str| {
        request
            .headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case(name))
    };
    if has("content-length") && has("transfer-encoding") {
        assert_eq!(raw, Err(Violation::ContentLengthAndTransferEncoding));
    }
    let (Some(method), Some(path), Some(version)) = (request.method, request.path, request.version)
    else {
        return;
    };
    let Ok(method) = Method::from_bytes(method.as_bytes()) else {
        return;
    };
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .version(if version == 0 {
            Version::HTTP_10
        } else {
            Version::HTTP_11
        });
    for h in request.headers.iter() {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(h.name.as_bytes()),
            HeaderValue::from_bytes(h.value),
        ) {
            builder = builder.header(name, value);
        }
    }
    let Ok(built) = builder.body(()) else {
        return;
    };
    let (parts, ()) = built.into_parts();
    let sni = match pick % 3 {
        0 => None,
        1 => Some("example.com"),
        _ => parts.headers.get("host").and_then(|h| h.to_str().ok()),
    };
    let _ = check(&parts, sni);
});
