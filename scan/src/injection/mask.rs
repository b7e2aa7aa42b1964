//! [`gather`]: 64 byte-sized flags packed into a bit mask, the step the
//! portable sieves of `encoded` and `gate` share after classifying a block.
//! Depends on nothing else in `injection`.

/// Bit `k` set when `flags[k]` is 1: each eight flags gathered into a byte by
/// one multiplication (flag `j` of a word lands on bit `56 + j`).
pub(crate) fn gather(flags: &[u8; 64]) -> u64 {
    let (eights, _) = flags.as_chunks::<8>();
    let mut mask = 0;
    for (k, eight) in eights.iter().enumerate() {
        let gathered = u64::from_le_bytes(*eight).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        mask |= gathered << (8 * k);
    }
    mask
}
