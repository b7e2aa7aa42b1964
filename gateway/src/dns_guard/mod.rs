//! The per-sandbox DNS tunnelling guard: decides whether one query may be
//! answered, from the policy's DNS limits and what this sandbox asked
//! recently.
//!
//! Tunnels smuggle data out as ever-new subdomains of a domain the attacker
//! serves (`<base32 chunk>.t.evil.example`), favour record types with roomy
//! answers (TXT, NULL, ANY), long labels and a high query rate. [`Guard::check`]
//! applies, in this order, each refusing with its own [`Reason`]:
//!
//! 1. record type: `qtype` is one of the policy's refused types;
//! 2. characters: a label holds a byte other than a letter, digit, `-` or
//!    `_` (in the presentation form a name arrives in, any other byte is
//!    escaped with `\`: a `.` inside a label would otherwise pass for a
//!    label boundary, matching wildcards it is not under and splitting a
//!    long label into short ones);
//! 3. name length: the whole name (one trailing dot not counted) is longer
//!    than `max_name_length` bytes;
//! 4. label length: some label is longer than `max_label_length` bytes;
//! 5. rate: a token bucket holding `2 × max_queries_per_second` tokens,
//!    refilled at `max_queries_per_second` per second. Queries refused by
//!    1–4 never reach it and spend no token: they cost no upstream lookup,
//!    and a sandbox tripping a static limit should not also lose its budget
//!    for good queries. A query refused by 6 has spent its token;
//! 6. unique subdomains: per [`registrable`] domain, the distinct full names
//!    seen in the last 60 s (sliding; a repeat refreshes its name). A name
//!    already in the window passes; a new one passes only while its domain
//!    has fewer than `max_unique_subdomains_per_minute` names in the window.
//!    Refused names are not recorded.
//!
//! Everything is pure: the caller passes `now`, so tests drive time. A `now`
//! earlier than the latest already seen is taken as that latest time.
//! Lengths are in bytes; names compare ASCII-case-insensitively, as DNS
//! does (RFC 4343).
//! Limits of 0 are taken literally (rate 0 or unique 0 refuses every query
//! that reaches that check), so a misconfigured limit fails closed.
//!
//! Memory is bounded whatever the sandbox sends: names are held as 64-bit
//! hashes (keyed per guard with std's random SipHash keys, so a sandbox cannot
//! aim for collisions; names are never retained), at most
//! [`MAX_TRACKED_NAMES`] of them across at most [`MAX_TRACKED_DOMAINS`]
//! domains. Past either cap the least recently seen name, or the domain
//! least recently queried (refused queries count, so a domain under attack
//! stays fresh) with all its names, is forgotten. That makes the
//! count lenient only for a sandbox juggling hundreds of domains at once;
//! resetting one domain's count that way costs a tunnel at least 256
//! rate-limited queries to other domains.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    hash::{BuildHasher, Hasher, RandomState},
    time::{Duration, Instant},
};

use crate::bucket::Bucket;

/// How far back the unique-subdomain count looks.
pub const UNIQUE_WINDOW: Duration = Duration::from_secs(60);
/// Most distinct names one sandbox's window tracks.
pub const MAX_TRACKED_NAMES: usize = 4096;
/// Most registrable domains one sandbox's window tracks.
pub const MAX_TRACKED_DOMAINS: usize = 256;

/// Limits, as compiled from a policy's `dns` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_queries_per_second: u32,
    pub max_label_length: usize,
    pub max_name_length: usize,
    pub max_unique_subdomains_per_minute: u32,
}

/// What the guard says about one query.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Refuse(Reason),
}

/// Why a query was refused (a stable metric and audit label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Rate,
    LabelLength,
    NameLength,
    UniqueSubdomains,
    RecordType,
    NameCharacters,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Rate => "dns_rate",
            Reason::LabelLength => "dns_label_length",
            Reason::NameLength => "dns_name_length",
            Reason::UniqueSubdomains => "dns_unique_subdomains",
            Reason::RecordType => "dns_record_type",
            Reason::NameCharacters => "dns_name_characters",
        }
    }
}

/// One sandbox's state.
#[derive(Debug)]
pub struct Guard {
    /// Keys the name hashes; random per guard.
    hasher: RandomState,
    /// The latest `now` seen, so time never runs backwards inside.
    latest: Option<Instant>,
    bucket: Bucket,
    window: Window,
}

impl Default for Guard {
    fn default() -> Self {
        Guard::new()
    }
}

impl Guard {
    pub fn new() -> Guard {
        Guard {
            hasher: RandomState::new(),
            latest: None,
            bucket: Bucket::default(),
            window: Window::default(),
        }
    }

    /// Decides one query for `name` of type `qtype` at `now`.
    ///
    /// `refused_types`: record type codes refused outright (e.g. TXT=16,
    /// NULL=10, ANY=255).
    pub fn check(
        &mut self,
        now: Instant,
        name: &str,
        qtype: u16,
        limits: &Limits,
        refused_types: &[u16],
    ) -> Verdict {
        self.check_as(now, name, qtype, limits, refused_types, true)
    }

    /// As [`check`](Self::check) for a lookup Sluice makes itself for a
    /// connection's SNI or Host: held to the name caps and the unique-name
    /// window like a query, but spending no query-rate token. A client
    /// that opens many connections to one allowed host asks one question,
    /// not one a connection (and the resolver answers repeats from its
    /// cache); the data a tunnel could carry is in fresh names, which the
    /// window counts.
    pub fn check_lookup(&mut self, now: Instant, name: &str, limits: &Limits) -> Verdict {
        const A: u16 = 1;
        self.check_as(now, name, A, limits, &[], false)
    }

    fn check_as(
        &mut self,
        now: Instant,
        name: &str,
        qtype: u16,
        limits: &Limits,
        refused_types: &[u16],
        rated: bool,
    ) -> Verdict {
        let now = match self.latest {
            Some(latest) if latest > now => latest,
            _ => now,
        };
        self.latest = Some(now);

        if refused_types.contains(&qtype) {
            return Verdict::Refuse(Reason::RecordType);
        }
        let name = name.strip_suffix('.').unwrap_or(name);
        let hostname_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
        if !name.bytes().all(hostname_byte) {
            return Verdict::Refuse(Reason::NameCharacters);
        }
        if name.len() > limits.max_name_length {
            return Verdict::Refuse(Reason::NameLength);
        }
        if name
            .split('.')
            .any(|label| label.len() > limits.max_label_length)
        {
            return Verdict::Refuse(Reason::LabelLength);
        }
        if rated && !self.bucket.take(now, limits.max_queries_per_second) {
            return Verdict::Refuse(Reason::Rate);
        }
        let name_key = self.hash_lowercase(name);
        let domain_key = self.hash_lowercase(registrable(name));
        let limit = usize::try_from(limits.max_unique_subdomains_per_minute).unwrap_or(usize::MAX);
        if !self.window.admit(now, name_key, domain_key, limit) {
            return Verdict::Refuse(Reason::UniqueSubdomains);
        }
        Verdict::Pass
    }

    /// Hashes `s` as if ASCII-lowercased, without allocating.
    fn hash_lowercase(&self, s: &str) -> u64 {
        let mut hasher = self.hasher.build_hasher();
        for byte in s.bytes() {
            hasher.write_u8(byte.to_ascii_lowercase());
        }
        // Terminate, so "ab" + "" and "a" + "b" style prefixes cannot meet.
        hasher.write_u8(0xff);
        hasher.finish()
    }
}

/// The registrable part of a name by the public-suffix list (its private
/// section included, so each `*.github.io` site is its own): one label
/// below the longest public suffix (`www.example.co.uk` → `example.co.uk`).
/// A guess would split one zone into many (a second level such as `ne.io`
/// read as a suffix), each with a count of its own. One trailing dot is
/// dropped; a name that is itself a suffix is returned whole. Case is kept.
pub fn registrable(name: &str) -> &str {
    let name = name.strip_suffix('.').unwrap_or(name);
    // The list is lower case; lower-casing ASCII keeps every byte's place.
    let lower = name.to_ascii_lowercase();
    match psl::domain(lower.as_bytes()) {
        Some(domain) => name
            .get(name.len() - domain.as_bytes().len()..)
            .unwrap_or(name),
        None => name,
    }
}

/// When a name was last seen; the sequence number keeps stamps unique when
/// several names share an instant.
type Stamp = (Instant, u64);

/// The unique-subdomain sliding window. `names` and `by_age` always hold the
/// same names, and each name is in exactly its domain's `names` set.
#[derive(Debug, Default)]
struct Window {
    /// Name hash → what we know of it.
    names: HashMap<u64, Seen>,
    /// Names by last-seen stamp, oldest first (`now` never goes backwards, so
    /// insertion order is age order).
    by_age: BTreeMap<Stamp, u64>,
    /// Registrable-domain hash → its names in the window.
    domains: HashMap<u64, Domain>,
    next_seq: u64,
}

#[derive(Debug)]
struct Seen {
    domain: u64,
    stamp: Stamp,
}

#[derive(Debug)]
struct Domain {
    names: HashSet<u64>,
    last_seen: Instant,
}

impl Window {
    /// Records a query for `name` under `domain` if the domain's count
    /// allows; returns whether it passes.
    fn admit(&mut self, now: Instant, name: u64, domain: u64, limit: usize) -> bool {
        self.expire(now);
        let stamp = (now, self.next_seq);
        self.next_seq = self.next_seq.wrapping_add(1);

        if let Some(seen) = self.names.get_mut(&name) {
            self.by_age.remove(&seen.stamp);
            seen.stamp = stamp;
            self.by_age.insert(stamp, name);
            if let Some(entry) = self.domains.get_mut(&seen.domain) {
                entry.last_seen = now;
            }
            return true;
        }

        if let Some(entry) = self.domains.get_mut(&domain) {
            // Refusals count as activity too, so a domain being hammered by
            // a tunnel is never the idle one the domain cap forgets.
            entry.last_seen = now;
            if entry.names.len() >= limit {
                return false;
            }
        } else if limit == 0 {
            return false;
        }
        if !self.domains.contains_key(&domain) && self.domains.len() >= MAX_TRACKED_DOMAINS {
            self.evict_smallest_domain();
        }
        if self.names.len() >= MAX_TRACKED_NAMES {
            self.evict_oldest_name();
        }
        self.names.insert(name, Seen { domain, stamp });
        self.by_age.insert(stamp, name);
        let entry = self.domains.entry(domain).or_insert_with(|| Domain {
            names: HashSet::new(),
            last_seen: now,
        });
        entry.names.insert(name);
        entry.last_seen = now;
        true
    }

    /// Forgets names last seen a full window ago or earlier.
    fn expire(&mut self, now: Instant) {
        while let Some((&(seen_at, _), _)) = self.by_age.first_key_value() {
            if now.saturating_duration_since(seen_at) < UNIQUE_WINDOW {
                break;
            }
            self.evict_oldest_name();
        }
    }

    fn evict_oldest_name(&mut self) {
        let Some((_, name)) = self.by_age.pop_first() else {
            return;
        };
        let Some(seen) = self.names.remove(&name) else {
            return;
        };
        if let Some(entry) = self.domains.get_mut(&seen.domain) {
            entry.names.remove(&name);
            if entry.names.is_empty() {
                self.domains.remove(&seen.domain);
            }
        }
    }

    /// Forgets the domain with the fewest names (the least recent of
    /// those): a tunnel's domain, with many, is the last to go, so queries
    /// for a stream of decoy domains cannot wipe its count.
    fn evict_smallest_domain(&mut self) {
        let Some(oldest) = self
            .domains
            .iter()
            .min_by_key(|(_, d)| (d.names.len(), d.last_seen))
            .map(|(&key, _)| key)
        else {
            return;
        };
        let Some(entry) = self.domains.remove(&oldest) else {
            return;
        };
        for name in entry.names {
            if let Some(seen) = self.names.remove(&name) {
                self.by_age.remove(&seen.stamp);
            }
        }
    }
}

#[cfg(test)]
mod tests;
