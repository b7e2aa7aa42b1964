//! The DNS tunnelling guard (`dns_guard::Guard`) over a sequence of
//! queries and lookups at advancing (or, now and then, backward) times
//! under arbitrary limits. Checks the static rules against their
//! definition (a refused type, a byte outside `[A-Za-z0-9_.-]`, a name or
//! label too long: refused with that reason, in that order, before any
//! rate or window state is consulted), that a pass means none applied,
//! and that a lookup just admitted is admitted again at once (a name in
//! the window always passes).
#![no_main]

use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sluice::dns_guard::{Guard, Limits, Reason, Verdict};

#[derive(Debug, Arbitrary)]
struct Query {
    /// Milliseconds after the previous query (a value past 60 000 sends
    /// time back by the excess: the guard must hold its clock).
    after_ms: u16,
    name: String,
    qtype: u16,
    lookup: bool,
}

#[derive(Debug, Arbitrary)]
struct Input {
    rate: u8,
    label: u8,
    name: u8,
    unique: u8,
    refused: Vec<u16>,
    queries: Vec<Query>,
}

fn static_reason(name: &str, qtype: u16, limits: &Limits, refused: &[u16]) -> Option<Reason> {
    if refused.contains(&qtype) {
        return Some(Reason::RecordType);
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return Some(Reason::NameCharacters);
    }
    if name.len() > limits.max_name_length {
        return Some(Reason::NameLength);
    }
    if name.split('.').any(|l| l.len() > limits.max_label_length) {
        return Some(Reason::LabelLength);
    }
    None
}

fuzz_target!(|input: Input| {
    let limits = Limits {
        max_queries_per_second: u32::from(input.rate),
        max_label_length: usize::from(input.label),
        max_name_length: usize::from(input.name) * 2,
        max_unique_subdomains_per_minute: u32::from(input.unique),
    };
    let refused: Vec<u16> = input.refused.into_iter().take(8).collect();
    let mut guard = Guard::new();
    let start = Instant::now() + Duration::from_secs(3600);
    let mut now = start;
    for q in input.queries.iter().take(512) {
        now = match u64::from(q.after_ms).checked_sub(60_000) {
            Some(back) => now.checked_sub(Duration::from_millis(back)).unwrap_or(now),
            None => now + Duration::from_millis(u64::from(q.after_ms)),
        };
        let (verdict, want) = if q.lookup {
            let v = guard.check_lookup(now, &q.name, &limits);
            (v, static_reason(&q.name, 1, &limits, &[]))
        } else {
            let v = guard.check(now, &q.name, q.qtype, &limits, &refused);
            (v, static_reason(&q.name, q.qtype, &limits, &refused))
        };
        match (want, verdict) {
            (Some(reason), verdict) => assert_eq!(verdict, Verdict::Refuse(reason), "{q:?}"),
            (None, Verdict::Refuse(reason)) => assert!(
                matches!(reason, Reason::Rate | Reason::UniqueSubdomains),
                "{q:?}: {reason:?}"
            ),
            (None, Verdict::Pass) => {}
        }
        if q.lookup && verdict == Verdict::Pass {
            assert_eq!(
                guard.check_lookup(now, &q.name, &limits),
                Verdict::Pass,
                "{q:?} again"
            );
        }
    }
});
