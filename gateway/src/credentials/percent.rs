//! Percent-encoding: [`pct_encode`] for what the schemes write into a query
//! or a form body, [`pct_decode`] for reading placeholders and parameters
//! out of one.

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub(crate) fn pct_encode(bytes: &[u8]) -> Vec<u8> {
    crate::redact::percent_encode(bytes)
}

/// Decodes `%XX` and `+` (form encoding); malformed escapes stay literal.
pub(crate) fn pct_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied(), b.get(i + 2).copied()) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                let v = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}
