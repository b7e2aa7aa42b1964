//! [`Secret`]: the one type that holds real credential bytes.
//!
//! The bytes are zeroized when the last owner drops them, and no formatting
//! path (`Debug`, `Display`, error messages built from it) can reveal them:
//! both print only the length. Anything secret-equivalent (encodings of the
//! secret used as redaction needles) is held in a `Secret` too.

use std::fmt;

use zeroize::Zeroizing;

/// Real credential bytes. `Clone` is allowed because the clone is itself a
/// zeroizing buffer; prefer sharing through `Arc<Secret>` to avoid copies.
#[derive(Clone)]
pub struct Secret(Zeroizing<Vec<u8>>);

impl Secret {
    /// Takes ownership of `bytes`; the buffer (including spare capacity) is
    /// zeroized on drop.
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(Zeroizing::new(bytes))
    }

    /// The secret bytes. Named `expose` so every use site reads as deliberate.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Compares with `other` in time independent of where they differ.
    pub fn ct_eq(&self, other: &[u8]) -> bool {
        ct_eq(&self.0, other)
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Self::new(s.as_bytes().to_vec())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(** {} bytes **)", self.0.len())
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Constant-time equality for byte strings. The length is not hidden (it is
/// not secret here: placeholders mirror it anyway), only the content.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // black_box keeps the optimiser from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW: &str = "sk-live-DO-NOT-PRINT-0123456789";

    #[test]
    fn formatting_never_reveals_the_secret() {
        let s = Secret::from(RAW);
        for out in [format!("{s:?}"), format!("{s}"), format!("{s:#?}")] {
            assert!(!out.contains(RAW), "{out}");
            assert_eq!(out, format!("Secret(** {} bytes **)", RAW.len()));
        }
        let clone = s.clone();
        assert!(!format!("{clone:?}").contains(RAW));
    }

    #[test]
    fn ct_eq_table() {
        let cases: &[(&[u8], &[u8], bool)] = &[
            (b"", b"", true),
            (b"abc", b"abc", true),
            (b"abc", b"abd", false),
            (b"abc", b"ab", false),
            (b"", b"a", false),
            (b"\x00\xff", b"\x00\xff", true),
        ];
        for (a, b, want) in cases {
            assert_eq!(ct_eq(a, b), *want, "{a:?} vs {b:?}");
        }
        assert!(Secret::from("xyz").ct_eq(b"xyz"));
        assert!(!Secret::from("xyz").ct_eq(b"xy"));
    }

    #[test]
    fn accessors() {
        let s = Secret::new(b"12345".to_vec());
        assert_eq!(s.len(), 5);
        assert!(!s.is_empty());
        assert_eq!(s.expose(), b"12345");
        assert!(Secret::new(Vec::new()).is_empty());
    }
}
