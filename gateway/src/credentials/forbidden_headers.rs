//! [`FORBIDDEN_HEADERS`]: the headers no scheme may write a credential or a
//! signature into (the `header` scheme and `hmac` refuse them).

/// Headers whose rewrite would change message framing or routing rather than
/// authentication.
pub(super) const FORBIDDEN_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
];
