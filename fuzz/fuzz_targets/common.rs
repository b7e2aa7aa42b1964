//! What the targets share: cutting one input into the chunks a stream
//! would deliver it in.

/// `data` cut into chunks: one byte each when `seed` is 0 (a split at every
/// byte), else chunks of 1 to `seed` bytes whose sizes a small generator
/// seeded by `seed` picks. The chunks joined are `data`.
#[allow(dead_code, reason = "not every target cuts its input")]
pub fn chunks(data: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut state = u32::from(seed) | 0x9e37_7900;
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let size = if seed == 0 {
            1
        } else {
            // xorshift32
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            1 + (state as usize) % usize::from(seed)
        };
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        out.push(chunk);
        rest = tail;
    }
    out
}
