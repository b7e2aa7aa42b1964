//! Placeholders in request bodies.
//!
//! A body is read whole, up to [`MAX_BODY`], before anything is forwarded,
//! when (a) the policy has a binding with `allow_in_body` (the body is then
//! scanned for every placeholder of the sandbox, so one aimed at a foreign
//! host is refused like one in a header), or (b) the credential injected is
//! `aws_sigv4` with `payload: signed` (the signature covers the body's hash).
//!
//! A body larger than [`MAX_BODY`] in either case is refused (413) rather
//! than forwarded unchecked or unsigned: a streaming check could only notice
//! a placeholder after part of the body had left. The replaced body goes out
//! with a recomputed `Content-Length` (a placeholder need not be as long as
//! what replaces it).

use zeroize::Zeroizing;

/// The largest body read whole for checking or signing.
pub const MAX_BODY: usize = 1024 * 1024;

/// `body` with every `placeholder` replaced by `value`; `None` when there is
/// none. The copy holds the secret, so it is zeroized when dropped (the
/// copy the `http` types take when it is sent cannot be).
pub fn replace(body: &[u8], placeholder: &[u8], value: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    if placeholder.is_empty() {
        return None;
    }
    let finder = aho_corasick::AhoCorasick::new([placeholder]).ok()?;
    let mut hits = finder.find_iter(body).peekable();
    hits.peek()?;
    let mut out = Zeroizing::new(Vec::with_capacity(body.len() + value.len()));
    let mut at = 0;
    for hit in hits {
        out.extend_from_slice(&body[at..hit.start()]);
        out.extend_from_slice(value);
        at = hit.end();
    }
    out.extend_from_slice(&body[at..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_table() {
        let cases: &[(&str, &str, &str, Option<&str>)] = &[
            ("", "PH", "S", None),
            ("nothing here", "PH", "S", None),
            ("PH", "PH", "secret", Some("secret")),
            ("a=PH&b=PH", "PH", "xyz", Some("a=xyz&b=xyz")),
            ("{\"k\":\"PHPH\"}", "PH", "1", Some("{\"k\":\"11\"}")),
            ("PH at end PH", "PH", "", Some(" at end ")),
            ("anything", "", "S", None),
        ];
        for (body, ph, value, want) in cases {
            let got = replace(body.as_bytes(), ph.as_bytes(), value.as_bytes());
            let got = got.map(|g| String::from_utf8(g.to_vec()).expect("utf8"));
            assert_eq!(got.as_deref(), *want, "{body:?}");
        }
    }
}
