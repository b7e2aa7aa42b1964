//! Decoded text with a map back to the bytes it came from, so a finding in
//! decoded text (a JSON string with escapes, a percent-decoded form) is
//! reported at the original offsets.
//!
//! The map is piecewise: one piece per escape, whose decoded bytes all map
//! to the whole escape, the bytes after it (up to the next piece) copied
//! byte for byte from the source that follows it; and a piece for a copied
//! run only where the source jumps (a new string, a stretch after a
//! separator). It costs one small entry per escape, not per byte, nor one
//! per copied run, so decoding stays close to memcpy speed (LLM-API bodies
//! have an escape every few dozen bytes, every few in stringified JSON).

/// One piece of the map: from `decoded` in the decoded text, the first
/// `decoded_len` bytes stand for the escape `source..source + escape_len`
/// in the body, and the bytes after them are copied from `source +
/// escape_len` on. A copied run alone has both lengths 0.
///
/// Laid out as three words (`decoded`, `source`, then both lengths), so
/// the JSON block decoder can write eight escapes' pieces with three
/// vector stores ([`PIECE_WORDS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Piece {
    decoded: usize,
    source: usize,
    escape_len: u32,
    decoded_len: u32,
}

/// A piece is these three 64-bit words, in this order.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) const PIECE_WORDS: usize = 3;

const _: () = assert!(
    size_of::<Piece>() == PIECE_WORDS * 8
        && std::mem::offset_of!(Piece, decoded) == 0
        && std::mem::offset_of!(Piece, source) == 8
        && std::mem::offset_of!(Piece, escape_len) == 16
        && std::mem::offset_of!(Piece, decoded_len) == 20
);

/// The third word of an escape's piece (on a little-endian target): its
/// lengths, `escape_len` in the low half.
#[cfg(target_endian = "little")]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) const fn lengths_word(escape_len: u32, decoded_len: u32) -> u64 {
    escape_len as u64 | (decoded_len as u64) << 32
}

impl Piece {
    /// Where the piece's copied bytes would continue at decoded `at`.
    #[inline]
    fn source_at(&self, at: usize) -> usize {
        self.source + self.escape_len as usize + (at - self.decoded - self.decoded_len as usize)
    }
}

/// Records that the decoded text from `decoded` on is copied from the body
/// at `source`: a piece only when the last one does not already imply it.
#[inline]
pub(crate) fn push_copy(map: &mut Vec<Piece>, decoded: usize, source: usize) {
    if let Some(last) = map.last()
        && decoded >= last.decoded + last.decoded_len as usize
        && last.source_at(decoded) == source
    {
        return;
    }
    map.push(Piece {
        decoded,
        source,
        escape_len: 0,
        decoded_len: 0,
    });
}

/// Records that decoded `decoded..decoded + decoded_len` (at least one
/// byte) stands for the escape of `escape_len` bytes at `source`, and that
/// what follows it is copied from after the escape.
#[inline]
pub(crate) fn push_escape(
    map: &mut Vec<Piece>,
    decoded: usize,
    source: usize,
    escape_len: usize,
    decoded_len: usize,
) {
    map.push(Piece {
        decoded,
        source,
        // An escape is at most 12 bytes (`\ud83d\ude00`), a `%` one 3.
        escape_len: escape_len as u32,
        decoded_len: decoded_len as u32,
    });
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
        push_copy(&mut self.pieces, self.text.len(), source);
        self.text.extend_from_slice(bytes);
    }

    /// Appends the bytes one escape of `escape_len` source bytes at `source`
    /// decodes to.
    pub(crate) fn escape(&mut self, bytes: &[u8], source: usize, escape_len: usize) {
        if bytes.is_empty() {
            return;
        }
        push_escape(
            &mut self.pieces,
            self.text.len(),
            source,
            escape_len,
            bytes.len(),
        );
        self.text.extend_from_slice(bytes);
    }

    /// [`Decoded::escape`] of an escape that decodes to one byte (`\n`,
    /// `\"`, `%20`: most of them), without a copy call for one byte.
    pub(crate) fn escape_byte(&mut self, byte: u8, source: usize, escape_len: usize) {
        push_escape(&mut self.pieces, self.text.len(), source, escape_len, 1);
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
    let in_escape = |p: &Piece, d: usize| d - p.decoded < p.decoded_len as usize;
    let first = piece(start);
    let from = if in_escape(first, start) {
        first.source
    } else {
        first.source_at(start)
    };
    let last = piece(end - 1);
    let to = if in_escape(last, end - 1) {
        last.source + last.escape_len as usize
    } else {
        last.source_at(end - 1) + 1
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
