//! The SigV4 signer (`credentials::sigv4`, through `sluice::fuzzing`): the
//! canonical request `aws-sigv4` builds from the method, path and query as
//! forwarded, the Host and the sandbox's `x-amz-*` headers. Input:
//! `[flags] method 0xFF path-and-query 0xFF authority 0xFF headers 0xFF body`,
//! headers as `name: value` lines; `flags` picks the service (`s3` signs
//! the path as sent, others normalise it) and the payload mode. Any
//! request `http` accepts signs or fails with an error, never a panic; a
//! signed one has an `authorization` and an `x-amz-date`, and signing the
//! same request again gives the same headers.
#![no_main]

use hyper::http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&flags, rest)) = input.split_first() else {
        return;
    };
    let parts: Vec<&[u8]> = rest.splitn(5, |&b| b == 0xFF).collect();
    let [method, uri, authority, headers, body] = parts[..] else {
        return;
    };
    let (Ok(method), Ok(uri), Ok(authority)) = (
        Method::from_bytes(method),
        Uri::try_from(uri),
        std::str::from_utf8(authority),
    ) else {
        return;
    };
    let mut map = HeaderMap::new();
    for line in headers.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
        {
            map.append(name, value);
        }
    }
    let service = ["s3", "execute-api", "dynamodb", "lambda"][usize::from(flags & 3)];
    let signed = flags & 4 != 0;
    let sign = |headers: &mut HeaderMap| {
        sluice::fuzzing::sigv4_sign(
            service,
            "us-east-1",
            signed,
            (&method, authority, &uri, Some(body)),
            headers,
        )
    };
    let mut first = map.clone();
    if sign(&mut first).is_err() {
        return;
    }
    assert!(first.contains_key("authorization") && first.contains_key("x-amz-date"));
    let mut second = map;
    sign(&mut second).expect("signed once, signs again");
    assert_eq!(first, second, "the same request signs differently");
});
