//! The one JOSE header check `jsonwebtoken` leaves out: `crit` (RFC 7515
//! §4.1.11) lists extensions a verifier must understand or refuse the
//! token for. Sluice understands none, so a token naming any is refused.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};

/// Whether `token`'s header carries `crit`. A header that is not base64url
/// JSON is left to `jsonwebtoken`, which refuses it.
pub fn names_extensions(token: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Crit {
        crit: Option<serde::de::IgnoredAny>,
    }
    let header = token.split('.').next().unwrap_or_default();
    URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|json| serde_json::from_slice::<Crit>(&json).ok())
        .is_some_and(|h| h.crit.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_naming_extensions_is_seen() {
        let b64 = |s: &str| URL_SAFE_NO_PAD.encode(s);
        #[rustfmt::skip]
        let cases = [
            (b64(r#"{"alg":"EdDSA","crit":["b64"],"b64":false}"#), true),
            (b64(r#"{"alg":"EdDSA","crit":[]}"#), true),
            (b64(r#"{"alg":"EdDSA","typ":"JWT"}"#), false),
            ("!!".to_owned(), false),
            (String::new(), false),
        ];
        for (header, want) in cases {
            assert_eq!(
                names_extensions(&format!("{header}.e30.sig")),
                want,
                "{header}"
            );
        }
    }
}
