//! Decoded text with a map back to the bytes it came from, so a finding in
//! decoded text (a JSON string with escapes, a percent-decoded form) is
//! reported at the original offsets.

/// Decoded bytes and, for each, the body offset of the source it came from;
/// one extra entry holds where the source ends.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    text: Vec<u8>,
    map: Vec<usize>,
}

impl Decoded {
    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.map.clear();
    }

    /// Appends `byte`, decoded from the source starting at `source`.
    pub(crate) fn push(&mut self, byte: u8, source: usize) {
        self.text.push(byte);
        self.map.push(source);
    }

    /// Records where the source ends; call once after the last `push`.
    pub(crate) fn finish(&mut self, source_end: usize) {
        self.map.push(source_end);
    }

    pub(crate) fn text(&self) -> &[u8] {
        &self.text
    }

    /// The body span of decoded `[start, end)`: from the source of the first
    /// byte to the source of the byte after the last (bytes decoded from one
    /// escape share a source, so a span never splits an escape).
    pub(crate) fn span(&self, start: usize, end: usize) -> (usize, usize) {
        let first = self.map[start];
        // The source of the next byte with a different source than the last.
        let last = self.map[end - 1];
        let mut k = end;
        while k < self.map.len() - 1 && self.map[k] == last {
            k += 1;
        }
        (first, self.map[k])
    }
}
