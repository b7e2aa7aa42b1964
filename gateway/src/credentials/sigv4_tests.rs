use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::*;
use crate::credentials::scheme_config::Source;

const AKID: &str = "AKIDEXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

fn scheme(service: &str, payload: SigV4Payload) -> SigV4Scheme {
    SigV4Scheme::compile(&SigV4Config {
        access_key_id: Source::Env { var: "A".into() },
        region: "us-east-1".into(),
        service: service.into(),
        session_token: None,
        payload,
    })
    .expect("compiles")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("key");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// The signature by hand from the SigV4 spec, for a request whose path and
/// query need no encoding and whose query is already sorted.
fn by_hand(
    method: &str,
    path: &str,
    query: &str,
    host: &str,
    date: &str,
    payload: &str,
    token: Option<&str>,
) -> String {
    let mut headers = vec![
        ("host", host.to_owned()),
        ("x-amz-content-sha256", payload.to_owned()),
        ("x-amz-date", date.to_owned()),
    ];
    if let Some(t) = token {
        headers.push(("x-amz-security-token", t.to_owned()));
    }
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed: Vec<&str> = headers.iter().map(|(k, _)| *k).collect();
    let canonical = format!(
        "{method}\n{path}\n{query}\n{canonical_headers}\n{}\n{payload}",
        signed.join(";")
    );
    let day = &date[..8];
    let scope = format!("{day}/us-east-1/s3/aws4_request");
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical.as_bytes()))
    );
    let mut key = hmac(format!("AWS4{SECRET}").as_bytes(), day);
    for part in ["us-east-1", "s3", "aws4_request"] {
        key = hmac(&key, part);
    }
    format!(
        "AWS4-HMAC-SHA256 Credential={AKID}/{scope}, SignedHeaders={}, Signature={}",
        signed.join(";"),
        hex(&hmac(&key, &to_sign))
    )
}

#[test]
fn signatures_match_the_spec_computed_by_hand() {
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_440_938_160); // 2015-08-30T12:36:00Z
    let body = b"{\"k\":1}";
    type Case<'a> = (&'a str, SigV4Payload, Option<&'a [u8]>, Option<&'a str>);
    let cases: &[Case] = &[
        ("GET", SigV4Payload::Unsigned, None, None),
        ("PUT", SigV4Payload::Signed, Some(body), None),
        ("GET", SigV4Payload::Unsigned, None, Some("session-tok")),
    ];
    for (method, payload, body, token) in cases {
        let s = scheme("s3", *payload);
        let method: Method = method.parse().expect("method");
        let uri: Uri = "/bucket/key.txt?a=1&b=2".parse().expect("uri");
        let id = Secret::from(AKID);
        let token_secret = token.map(Secret::from);
        let keys = Keys {
            access_key_id: &id,
            session_token: token_secret.as_ref(),
        };
        let inputs = Inputs {
            method: &method,
            authority: "bucket.test:8443",
            uri: &uri,
            body: *body,
            now,
        };
        let mut headers = HeaderMap::new();
        s.sign(&Secret::from(SECRET), &keys, &inputs, &mut headers)
            .expect("signs");
        let get = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("");
        assert_eq!(get("x-amz-date"), "20150830T123600Z");
        let payload_hash = match body {
            Some(b) => hex(&Sha256::digest(b)),
            None => "UNSIGNED-PAYLOAD".to_owned(),
        };
        assert_eq!(get("x-amz-content-sha256"), payload_hash);
        assert_eq!(get("x-amz-security-token"), token.unwrap_or(""));
        let want = by_hand(
            method.as_str(),
            "/bucket/key.txt",
            "a=1&b=2",
            "bucket.test:8443",
            "20150830T123600Z",
            &payload_hash,
            *token,
        );
        assert_eq!(get("authorization"), want, "{method} {payload:?}");
        assert!(headers.get("authorization").expect("auth").is_sensitive());
    }
}

#[test]
fn signed_payload_needs_the_body_and_bad_fields_are_refused() {
    let s = scheme("sts", SigV4Payload::Signed);
    assert!(s.needs_body());
    assert!(!scheme("s3", SigV4Payload::Unsigned).needs_body());
    let id = Secret::from(AKID);
    let keys = Keys {
        access_key_id: &id,
        session_token: None,
    };
    let (method, uri) = (Method::POST, Uri::from_static("/"));
    let inputs = Inputs {
        method: &method,
        authority: "sts.test",
        uri: &uri,
        body: None,
        now: std::time::SystemTime::now(),
    };
    let err = s
        .sign(&Secret::from(SECRET), &keys, &inputs, &mut HeaderMap::new())
        .expect_err("no body");
    assert_eq!(err, SchemeError::SigV4NeedsBody);
    for (region, service) in [("", "s3"), ("us east", "s3"), ("us-east-1", "s3/x")] {
        let c = SigV4Config {
            access_key_id: Source::Env { var: "A".into() },
            region: region.into(),
            service: service.into(),
            session_token: None,
            payload: SigV4Payload::Signed,
        };
        assert!(SigV4Scheme::compile(&c).is_err(), "{region} {service}");
    }
}
