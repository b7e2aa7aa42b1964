//! A token bucket for per-sandbox rates (DNS queries, certificates
//! minted): `rate` tokens a second, holding at most two seconds' worth.
//! Pure: the caller passes the time.

use std::time::Instant;

/// Tokens are counted in billionths so refill over any `Duration` is exact:
/// `elapsed_ns × rate` nano-tokens.
const NANO_TOKENS_PER_TOKEN: u128 = 1_000_000_000;

#[derive(Debug, Default)]
pub struct Bucket {
    nano_tokens: u128,
    /// `None` until the first call, which finds the bucket full.
    last: Option<Instant>,
}

impl Bucket {
    /// Refills for the time since the last call, then spends one token if
    /// there is one. Capacity follows `rate` on every call, so a reload that
    /// lowers the rate also lowers a full bucket.
    pub fn take(&mut self, now: Instant, rate: u32) -> bool {
        let rate = u128::from(rate);
        let capacity = 2 * rate * NANO_TOKENS_PER_TOKEN;
        let refill = match self.last {
            None => capacity,
            Some(last) => now
                .saturating_duration_since(last)
                .as_nanos()
                .saturating_mul(rate),
        };
        self.nano_tokens = self.nano_tokens.saturating_add(refill).min(capacity);
        self.last = Some(now);
        if self.nano_tokens < NANO_TOKENS_PER_TOKEN {
            return false;
        }
        self.nano_tokens -= NANO_TOKENS_PER_TOKEN;
        true
    }

    /// Whether it would be full at `now`: unused long enough that dropping
    /// it (a new one starts full) changes nothing.
    pub fn is_full(&self, now: Instant, rate: u32) -> bool {
        let capacity = 2 * u128::from(rate) * NANO_TOKENS_PER_TOKEN;
        let refill = self.last.map_or(capacity, |last| {
            now.saturating_duration_since(last)
                .as_nanos()
                .saturating_mul(u128::from(rate))
        });
        self.nano_tokens.saturating_add(refill) >= capacity
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_full_bucket_then_the_rate() {
        let start = Instant::now();
        let mut bucket = Bucket::default();
        // Two seconds' worth at once, then nothing until time passes.
        let burst = (0..10).filter(|_| bucket.take(start, 3)).count();
        assert_eq!(burst, 6);
        assert!(!bucket.take(start, 3));
        // A third of a second is one token at 3/s.
        let later = start + Duration::from_millis(334);
        assert!(bucket.take(later, 3));
        assert!(!bucket.take(later, 3));
        // A rate of zero refuses everything.
        assert!(!Bucket::default().take(start, 0));
    }
}
