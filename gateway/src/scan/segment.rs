//! Decoded text with a map back to the bytes it came from, so a finding in
//! decoded text (a JSON string with escapes, a percent-decoded form) is
//! reported at the original offsets.
//!
//! The map is piecewise: literal runs (copied byte for byte) map linearly,
//! and each escape is one piece whose bytes all map to the whole escape. It
//! costs one entry per escape, not per byte, so decoding stays at memcpy
//! speed.

/// One piece of the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece {
    /// Where the piece starts in the decoded text.
    decoded: usize,
    /// Where its source starts in the body.
    source: usize,
    /// 0 for a literal run; else the length of the escape in the source.
    escape_len: usize,
}

impl Piece {
    /// A piece of decoded text from `decoded` on whose source starts at
    /// `source` in the body: copied byte for byte when `escape_len` is 0,
    /// else one escape of that many source bytes.
    pub(crate) fn new(decoded: usize, source: usize, escape_len: usize) -> Piece {
        Piece {
            decoded,
            source,
            escape_len,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Decoded {
    text: Vec<u8>,
    pieces: Vec<Piece>,
}

impl Decoded {
    /// Bytes held, text and map.
    pub(crate) fn capacity(&self) -> usize {
        self.text.capacity() + self.pieces.capacity() * size_of::<Piece>()
    }

    /// Makes room for `additional` more bytes of text.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.text.reserve(additional);
    }

    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.pieces.clear();
    }

    /// Appends bytes copied from the body at `source`.
    pub(crate) fn literal(&mut self, bytes: &[u8], source: usize) {
        if bytes.is_empty() {
            return;
        }
        self.pieces.push(Piece {
            decoded: self.text.len(),
            source,
            escape_len: 0,
        });
        self.text.extend_from_slice(bytes);
    }

    /// Appends the bytes one escape of `escape_len` source bytes at `source`
    /// decodes to.
    pub(crate) fn escape(&mut self, bytes: &[u8], source: usize, escape_len: usize) {
        if bytes.is_empty() {
            return;
        }
        self.pieces.push(Piece {
            decoded: self.text.len(),
            source,
            escape_len,
        });
        self.text.extend_from_slice(bytes);
    }

    /// [`Decoded::escape`] of an escape that decodes to one byte (`\n`,
    /// `\"`, `%20`: most of them), without a copy call for one byte.
    pub(crate) fn escape_byte(&mut self, byte: u8, source: usize, escape_len: usize) {
        self.pieces.push(Piece {
            decoded: self.text.len(),
            source,
            escape_len,
        });
        self.text.push(byte);
    }

    /// Appends `byte`, which comes from nowhere in the body: it keeps
    /// stretches laid out end to end apart, and no finding covers it.
    pub(crate) fn gap(&mut self, byte: u8) {
        self.text.push(byte);
    }

    pub(crate) fn text(&self) -> &[u8] {
        &self.text
    }

    /// Mutable access to the text already appended (same length), for
    /// in-place substitutions that keep the map valid (form `+` to space).
    pub(crate) fn text_mut(&mut self) -> &mut [u8] {
        &mut self.text
    }

    /// The body span of decoded `[start, end)` (non-empty, in bounds): see
    /// [`span`].
    pub(crate) fn span(&self, start: usize, end: usize) -> (usize, usize) {
        span(&self.pieces, start, end)
    }
}

/// The body span of `[start, end)` (non-empty, in bounds) of a text decoded
/// with `map`: from the source of the first byte to the end of the source
/// of the last, so a span never splits an escape.
pub(crate) fn span(map: &[Piece], start: usize, end: usize) -> (usize, usize) {
    let piece = |d: usize| {
        let i = map.partition_point(|p| p.decoded <= d);
        &map[i.saturating_sub(1)]
    };
    let first = piece(start);
    let from = if first.escape_len > 0 {
        first.source
    } else {
        first.source + (start - first.decoded)
    };
    let last = piece(end - 1);
    let to = if last.escape_len > 0 {
        last.source + last.escape_len
    } else {
        last.source + (end - 1 - last.decoded) + 1
    };
    (from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_runs_map_linearly_and_escapes_as_a_whole() {
        let mut d = Decoded::default();
        d.literal(b"ab", 10); // body 10..12
        d.escape(b"@", 12, 6); // body 12..18
        d.literal(b"cd", 18); // body 18..20
        d.escape("é".as_bytes(), 20, 6); // two bytes from body 20..26
        assert_eq!(d.text(), "ab@cdé".as_bytes());
        assert_eq!(d.span(0, 1), (10, 11));
        assert_eq!(d.span(1, 4), (11, 19));
        assert_eq!(d.span(2, 3), (12, 18));
        assert_eq!(d.span(4, 7), (19, 26));
        assert_eq!(d.span(5, 6), (20, 26));
    }
}
