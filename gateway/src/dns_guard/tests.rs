use super::*;

const A: u16 = 1;
const NULL: u16 = 10;
const TXT: u16 = 16;
const AAAA: u16 = 28;
const ANY: u16 = 255;
const REFUSED: &[u16] = &[TXT, NULL, ANY];

/// The policy defaults.
const DEFAULTS: Limits = Limits {
    max_queries_per_second: 50,
    max_label_length: 63,
    max_name_length: 253,
    max_unique_subdomains_per_minute: 120,
};

/// Limits generous everywhere except where a test narrows them.
const OPEN: Limits = Limits {
    max_queries_per_second: u32::MAX,
    max_label_length: usize::MAX,
    max_name_length: usize::MAX,
    max_unique_subdomains_per_minute: u32::MAX,
};

fn at(start: Instant, millis: u64) -> Instant {
    start + Duration::from_millis(millis)
}

fn label(len: usize) -> String {
    "a".repeat(len)
}

/// A name of exactly `len` bytes, from 63-byte labels under `.com`.
fn name_of_len(len: usize) -> String {
    let mut name = String::from("com");
    while name.len() < len {
        let room = len - name.len() - 1;
        name = format!("{}.{name}", label(room.clamp(1, 63)));
    }
    assert_eq!(name.len(), len);
    name
}

/// Every structure agrees on which names are tracked, within the caps.
fn assert_consistent(guard: &Guard) {
    let w = &guard.window;
    assert_eq!(w.names.len(), w.by_age.len());
    let in_domains: usize = w.domains.values().map(|d| d.names.len()).sum();
    assert_eq!(in_domains, w.names.len());
    assert!(w.domains.values().all(|d| !d.names.is_empty()));
    assert!(w.names.len() <= MAX_TRACKED_NAMES);
    assert!(w.domains.len() <= MAX_TRACKED_DOMAINS);
}

#[test]
fn reason_labels() {
    for (reason, want) in [
        (Reason::Rate, "dns_rate"),
        (Reason::LabelLength, "dns_label_length"),
        (Reason::NameLength, "dns_name_length"),
        (Reason::UniqueSubdomains, "dns_unique_subdomains"),
        (Reason::RecordType, "dns_record_type"),
        (Reason::NameCharacters, "dns_name_characters"),
    ] {
        assert_eq!(reason.as_str(), want);
    }
}

#[test]
fn record_types() {
    let cases: &[(u16, &[u16], Verdict)] = &[
        (A, REFUSED, Verdict::Pass),
        (AAAA, REFUSED, Verdict::Pass),
        (TXT, REFUSED, Verdict::Refuse(Reason::RecordType)),
        (NULL, REFUSED, Verdict::Refuse(Reason::RecordType)),
        (ANY, REFUSED, Verdict::Refuse(Reason::RecordType)),
        (TXT, &[], Verdict::Pass),
        (A, &[A], Verdict::Refuse(Reason::RecordType)),
    ];
    let now = Instant::now();
    for &(qtype, refused, want) in cases {
        let mut guard = Guard::new();
        let got = guard.check(now, "example.com", qtype, &DEFAULTS, refused);
        assert_eq!(got, want, "qtype {qtype} refused {refused:?}");
    }
}

#[test]
fn name_length_boundary() {
    let cases = [
        (name_of_len(253), Verdict::Pass),
        (format!("{}.", name_of_len(253)), Verdict::Pass),
        (name_of_len(254), Verdict::Refuse(Reason::NameLength)),
        (
            format!("{}.", name_of_len(254)),
            Verdict::Refuse(Reason::NameLength),
        ),
        // Only one trailing dot is free.
        (
            format!("{}..", name_of_len(253)),
            Verdict::Refuse(Reason::NameLength),
        ),
        ("x".repeat(1 << 20), Verdict::Refuse(Reason::NameLength)),
    ];
    let now = Instant::now();
    for (name, want) in cases {
        let mut guard = Guard::new();
        let got = guard.check(now, &name, A, &DEFAULTS, REFUSED);
        assert_eq!(got, want, "name of {} bytes", name.len());
    }
}

#[test]
fn label_length_boundary() {
    let l63 = label(63);
    let l64 = label(64);
    let cases = [
        (format!("{l63}.example.com"), Verdict::Pass),
        (format!("a.{l63}.com"), Verdict::Pass),
        (format!("example.{l63}"), Verdict::Pass),
        (format!("{l63}.example.com."), Verdict::Pass),
        (l63.clone(), Verdict::Pass),
        (
            format!("{l64}.example.com"),
            Verdict::Refuse(Reason::LabelLength),
        ),
        (format!("a.{l64}.com"), Verdict::Refuse(Reason::LabelLength)),
        (
            format!("example.{l64}"),
            Verdict::Refuse(Reason::LabelLength),
        ),
        (format!("{l64}."), Verdict::Refuse(Reason::LabelLength)),
    ];
    let now = Instant::now();
    for (name, want) in cases {
        let mut guard = Guard::new();
        assert_eq!(
            guard.check(now, &name, A, &DEFAULTS, REFUSED),
            want,
            "{name}"
        );
    }
}

#[test]
fn first_failing_check_names_the_reason() {
    let long_label = format!("{}.example.com", label(64));
    let long_name = name_of_len(300);
    let tight = Limits {
        max_queries_per_second: 0,
        max_unique_subdomains_per_minute: 0,
        ..DEFAULTS
    };
    let cases = [
        (
            "type before name length",
            long_name.as_str(),
            TXT,
            Reason::RecordType,
        ),
        (
            "type before label length",
            long_label.as_str(),
            ANY,
            Reason::RecordType,
        ),
        (
            "name before label length",
            long_name.as_str(),
            A,
            Reason::NameLength,
        ),
        (
            "label length before rate",
            long_label.as_str(),
            A,
            Reason::LabelLength,
        ),
        ("rate before unique", "example.com", A, Reason::Rate),
    ];
    let now = Instant::now();
    for (what, name, qtype, want) in cases {
        let mut guard = Guard::new();
        let got = guard.check(now, name, qtype, &tight, REFUSED);
        assert_eq!(got, Verdict::Refuse(want), "{what}");
    }
}

#[test]
fn burst_is_twice_the_rate() {
    let now = Instant::now();
    for rate in [1, 5, 50] {
        let limits = Limits {
            max_queries_per_second: rate,
            ..OPEN
        };
        let mut guard = Guard::new();
        for i in 0..2 * rate {
            let got = guard.check(now, "example.com", A, &limits, REFUSED);
            assert_eq!(got, Verdict::Pass, "rate {rate}, query {i}");
        }
        let got = guard.check(now, "example.com", A, &limits, REFUSED);
        assert_eq!(got, Verdict::Refuse(Reason::Rate), "rate {rate}");
    }
}

#[test]
fn bucket_refills_at_the_rate() {
    let limits = Limits {
        max_queries_per_second: 10,
        ..OPEN
    };
    // (ms since start, queries sent then, how many should pass)
    let steps: &[(u64, u32, u32)] = &[
        (0, 25, 20),  // full bucket: 2 × 10
        (50, 1, 0),   // half a token
        (100, 2, 1),  // one token (0.5 + 0.5)
        (600, 10, 5), // 0.5 s → 5 tokens
        (1_600, 20, 10),
        (2_599, 10, 9),   // 9.99 tokens: 0.99 left over
        (2_600, 2, 1),    // plus 0.01
        (10_000, 30, 20), // long idle caps at the burst
        (10_000, 1, 0),
    ];
    let start = Instant::now();
    let mut guard = Guard::new();
    for &(ms, sent, want) in steps {
        let passed = (0..sent)
            .filter(|_| {
                guard.check(at(start, ms), "example.com", A, &limits, REFUSED) == Verdict::Pass
            })
            .count();
        assert_eq!(passed, want as usize, "at {ms} ms");
    }
}

#[test]
fn refusals_before_the_rate_check_spend_no_token() {
    let limits = Limits {
        max_queries_per_second: 1,
        ..DEFAULTS
    };
    let long_label = format!("{}.example.com", label(64));
    let long_name = name_of_len(254);
    let now = Instant::now();
    let mut guard = Guard::new();
    for _ in 0..100 {
        let _ = guard.check(now, "example.com", TXT, &limits, REFUSED);
        let _ = guard.check(now, &long_label, A, &limits, REFUSED);
        let _ = guard.check(now, &long_name, A, &limits, REFUSED);
    }
    assert_eq!(
        guard.check(now, "example.com", A, &limits, REFUSED),
        Verdict::Pass
    );
    assert_eq!(
        guard.check(now, "example.com", A, &limits, REFUSED),
        Verdict::Pass
    );
    let got = guard.check(now, "example.com", A, &limits, REFUSED);
    assert_eq!(got, Verdict::Refuse(Reason::Rate));
}

#[test]
fn unique_refusals_spend_a_token_and_rate_refusals_are_not_recorded() {
    let limits = Limits {
        max_queries_per_second: 1,
        max_unique_subdomains_per_minute: 1,
        ..OPEN
    };
    let now = Instant::now();
    let mut guard = Guard::new();
    let mut check = |ms, name| guard.check(at(now, ms), name, A, &limits, REFUSED);
    assert_eq!(check(0, "a.example.com"), Verdict::Pass);
    assert_eq!(
        check(0, "b.example.com"),
        Verdict::Refuse(Reason::UniqueSubdomains)
    );
    // Both tokens are gone, the second on the refused name.
    assert_eq!(check(0, "a.example.com"), Verdict::Refuse(Reason::Rate));
    // A name refused for rate was not recorded: after a refill, another
    // new name still fits under the limit of 1.
    assert_eq!(check(0, "c.other.com"), Verdict::Refuse(Reason::Rate));
    assert_eq!(check(1_000, "d.other.com"), Verdict::Pass);
}

#[test]
fn unique_subdomain_boundary() {
    let limits = Limits {
        max_unique_subdomains_per_minute: 3,
        ..OPEN
    };
    let steps = [
        ("a.example.com", Verdict::Pass),
        ("b.example.com", Verdict::Pass),
        ("example.com", Verdict::Pass),
        ("c.example.com", Verdict::Refuse(Reason::UniqueSubdomains)),
        ("c.example.com", Verdict::Refuse(Reason::UniqueSubdomains)),
        ("a.example.com", Verdict::Pass),
        ("example.com.", Verdict::Pass),
        // Another registrable domain has its own count.
        ("c.example.org", Verdict::Pass),
        ("x.y.example.co.uk", Verdict::Pass),
        ("x.z.example.co.uk", Verdict::Pass),
        ("example.co.uk", Verdict::Pass),
        ("other.co.uk", Verdict::Pass),
        ("w.example.co.uk", Verdict::Refuse(Reason::UniqueSubdomains)),
    ];
    let now = Instant::now();
    let mut guard = Guard::new();
    for (i, (name, want)) in steps.into_iter().enumerate() {
        assert_eq!(
            guard.check(now, name, A, &limits, REFUSED),
            want,
            "step {i}: {name}"
        );
    }
    assert_consistent(&guard);
}

#[test]
fn names_age_out_of_the_window() {
    let limits = Limits {
        max_unique_subdomains_per_minute: 2,
        ..OPEN
    };
    const FULL: Verdict = Verdict::Refuse(Reason::UniqueSubdomains);
    let steps: &[(u64, &str, Verdict)] = &[
        (0, "a.example.com", Verdict::Pass),
        (10_000, "b.example.com", Verdict::Pass),
        (20_000, "c.example.com", FULL),
        (59_999, "c.example.com", FULL),
        // a was seen exactly 60 s ago: out of the window.
        (60_000, "c.example.com", Verdict::Pass),
        (60_001, "d.example.com", FULL),
        // A repeat refreshes b (10 s → 65 s): it outlives c.
        (65_000, "b.example.com", Verdict::Pass),
        (70_000, "d.example.com", FULL),
        (119_999, "d.example.com", FULL),
        (120_000, "d.example.com", Verdict::Pass),
        (124_999, "e.example.com", FULL),
        (125_000, "e.example.com", Verdict::Pass),
        // a, long gone, is new again, and the window is full.
        (125_000, "a.example.com", FULL),
        (185_000, "a.example.com", Verdict::Pass),
        (185_000, "f.example.com", Verdict::Pass),
        (185_000, "g.example.com", FULL),
    ];
    let start = Instant::now();
    let mut guard = Guard::new();
    for &(ms, name, want) in steps {
        let got = guard.check(at(start, ms), name, A, &limits, REFUSED);
        assert_eq!(got, want, "at {ms} ms: {name}");
        assert_consistent(&guard);
    }
    assert_eq!(guard.window.names.len(), 2);
}

#[test]
fn names_compare_case_insensitively() {
    let limits = Limits {
        max_unique_subdomains_per_minute: 2,
        ..OPEN
    };
    let steps = [
        ("www.example.com", Verdict::Pass),
        ("WWW.Example.COM", Verdict::Pass),
        ("www.EXAMPLE.com.", Verdict::Pass),
        ("API.example.com", Verdict::Pass),
        ("api.EXAMPLE.COM", Verdict::Pass),
        // The domain is matched case-insensitively too: it is full.
        (
            "mail.Example.Com",
            Verdict::Refuse(Reason::UniqueSubdomains),
        ),
        ("x.EXAMPLE.CO.UK", Verdict::Pass),
        ("y.example.co.uk", Verdict::Pass),
        ("z.Example.Co.Uk", Verdict::Refuse(Reason::UniqueSubdomains)),
    ];
    let now = Instant::now();
    let mut guard = Guard::new();
    for (name, want) in steps {
        assert_eq!(guard.check(now, name, A, &limits, REFUSED), want, "{name}");
    }
    assert_eq!(guard.window.names.len(), 4);
}

/// A 26-character base32 label, different for every `n`.
fn base32_chunk(n: u64) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut x = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef;
    let mut out = String::with_capacity(26);
    for i in 0..26 {
        if i == 13 {
            x = x.rotate_left(29) ^ n;
        }
        out.push(char::from(ALPHABET[(x & 31) as usize]));
        x >>= 5;
        x |= n << 59;
    }
    out
}

#[test]
fn tunnel_is_cut_off_while_ordinary_lookups_pass() {
    let ordinary = [
        "api.github.com",
        "github.com",
        "pypi.org",
        "files.pythonhosted.org",
    ];
    let start = Instant::now();
    let mut guard = Guard::new();
    let mut tunnel = Vec::new();
    // 30 s: a tunnel query every 50 ms (20/s), an ordinary one every 250 ms.
    for tick in 0..600u64 {
        let now = at(start, tick * 50);
        let name = format!(
            "{}.{}.t.exfil.example",
            base32_chunk(tick),
            base32_chunk(tick + 1_000_000)
        );
        tunnel.push(guard.check(now, &name, AAAA, &DEFAULTS, REFUSED));
        if tick % 5 == 0 {
            let name = ordinary[(tick / 5) as usize % ordinary.len()];
            let got = guard.check(now, name, A, &DEFAULTS, REFUSED);
            assert_eq!(got, Verdict::Pass, "{name} at tick {tick}");
        }
    }
    let limit = DEFAULTS.max_unique_subdomains_per_minute as usize;
    assert!(tunnel[..limit].iter().all(|v| *v == Verdict::Pass));
    assert!(
        tunnel[limit..]
            .iter()
            .all(|v| *v == Verdict::Refuse(Reason::UniqueSubdomains))
    );
    // Tunnel names kept in the window: exactly the limit, plus the
    // ordinary four.
    assert_eq!(guard.window.names.len(), limit + ordinary.len());
    assert_consistent(&guard);
}

#[test]
fn memory_stays_bounded() {
    let start = Instant::now();
    let mut guard = Guard::new();
    // Many names under one domain, with no unique limit.
    for i in 0..10_000u64 {
        let _ = guard.check(at(start, i), &format!("{i}.big.example"), A, &OPEN, REFUSED);
    }
    assert_eq!(guard.window.names.len(), MAX_TRACKED_NAMES);
    assert_consistent(&guard);
    // Many domains.
    for i in 0..10_000u64 {
        let name = format!("n{}.d{i}.example", i % 7);
        let _ = guard.check(at(start, 20_000 + i), &name, A, &OPEN, REFUSED);
    }
    assert_eq!(guard.window.domains.len(), MAX_TRACKED_DOMAINS);
    assert_consistent(&guard);
    // The newest names were kept: a repeat is still known.
    let tracked = guard.window.names.len();
    let got = guard.check(at(start, 30_000), "N0.D9996.example", A, &OPEN, REFUSED);
    assert_eq!(got, Verdict::Pass);
    assert_eq!(guard.window.names.len(), tracked);
    assert_eq!(guard.window.domains.len(), MAX_TRACKED_DOMAINS);
    // A minute of quiet empties everything.
    let _ = guard.check(at(start, 200_000), "example.com", A, &OPEN, REFUSED);
    assert_eq!(guard.window.names.len(), 1);
    assert_consistent(&guard);
}

#[test]
fn domain_cap_forgets_the_least_recent_of_the_smallest_domains() {
    let limits = Limits {
        max_unique_subdomains_per_minute: 1,
        ..OPEN
    };
    let start = Instant::now();
    let mut guard = Guard::new();
    let mut check = |ms, name: &str| guard.check(at(start, ms), name, A, &limits, REFUSED);
    assert_eq!(check(0, "a.first.example"), Verdict::Pass);
    assert_eq!(check(1, "a.second.example"), Verdict::Pass);
    for i in 0..MAX_TRACKED_DOMAINS as u64 - 2 {
        assert_eq!(check(10 + i, &format!("a.d{i}.example")), Verdict::Pass);
    }
    assert_eq!(
        check(1_000, "b.first.example"),
        Verdict::Refuse(Reason::UniqueSubdomains)
    );
    // That refusal made first the more recent: one more domain evicts
    // second (forgetting its count), not the domain under attack.
    assert_eq!(check(1_001, "a.one-more.example"), Verdict::Pass);
    assert_eq!(check(1_002, "b.second.example"), Verdict::Pass);
    assert_eq!(
        check(1_003, "b.first.example"),
        Verdict::Refuse(Reason::UniqueSubdomains)
    );
}

#[test]
fn a_dot_inside_a_label_is_refused() {
    // Labels `data`, `x.api`, `example`, `com` in presentation form: read
    // as text, they would be under `*.api.example.com`, and a 63-byte label
    // dotted every 17 bytes would pass a label limit of 20.
    let start = Instant::now();
    let mut guard = Guard::new();
    for name in [
        "data.x\\.api.example.com.",
        "a\\032b.example.com",
        "x\\.y.example.com",
    ] {
        let got = guard.check(start, name, A, &OPEN, REFUSED);
        assert_eq!(got, Verdict::Refuse(Reason::NameCharacters), "{name}");
    }
    for name in [
        "_dmarc.example.com.",
        "xn--r8jz45g.example",
        "a-b.c_d.example",
    ] {
        assert_eq!(
            guard.check(start, name, A, &OPEN, REFUSED),
            Verdict::Pass,
            "{name}"
        );
    }
}

#[test]
fn decoy_domains_do_not_wipe_a_tunnels_count() {
    let limits = Limits {
        max_unique_subdomains_per_minute: 120,
        ..OPEN
    };
    let start = Instant::now();
    let mut guard = Guard::new();
    let mut check = |ms, name: &str| guard.check(at(start, ms), name, A, &limits, REFUSED);
    for i in 0..120 {
        assert_eq!(
            check(i, &format!("{}.t.evil.example", base32_chunk(i))),
            Verdict::Pass
        );
    }
    // A stream of one-name decoy domains, more than the table holds ...
    for i in 0..2 * MAX_TRACKED_DOMAINS as u64 {
        assert_eq!(
            check(200 + i, &format!("x.decoy{i}.example")),
            Verdict::Pass
        );
    }
    // ... evicts decoys: the tunnel's domain is still at its cap.
    assert_eq!(
        check(1_000, &format!("{}.t.evil.example", base32_chunk(999))),
        Verdict::Refuse(Reason::UniqueSubdomains)
    );
}

#[test]
fn odd_names_do_not_panic() {
    let names = [
        "",
        ".",
        "..",
        "...",
        "a..b",
        ".com",
        "com.",
        "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p",
    ];
    let not_hostnames = ["ü.example.com", "例え.テスト", "\0"];
    let start = Instant::now();
    for limits in [DEFAULTS, OPEN] {
        let mut guard = Guard::new();
        for (i, name) in names.iter().enumerate() {
            let got = guard.check(at(start, i as u64), name, A, &limits, REFUSED);
            assert_eq!(got, Verdict::Pass, "{name:?}");
        }
        for name in not_hostnames {
            let got = guard.check(start, name, A, &limits, REFUSED);
            assert_eq!(got, Verdict::Refuse(Reason::NameCharacters), "{name:?}");
        }
        let huge = format!("{}.example.com", "x.".repeat(1 << 20));
        let _ = guard.check(start, &huge, A, &limits, REFUSED);
        let _ = guard.check(start, &huge, A, &limits, REFUSED);
        assert_consistent(&guard);
    }
}

#[test]
fn time_running_backwards_is_harmless() {
    let limits = Limits {
        max_queries_per_second: 1,
        max_unique_subdomains_per_minute: 1,
        ..OPEN
    };
    let start = Instant::now();
    let late = at(start, 100_000);
    let mut guard = Guard::new();
    assert_eq!(
        guard.check(late, "a.example.com", A, &limits, REFUSED),
        Verdict::Pass
    );
    assert_eq!(
        guard.check(start, "a.example.com", A, &limits, REFUSED),
        Verdict::Pass
    );
    // No tokens appear from going back and forth.
    let got = guard.check(late, "a.example.com", A, &limits, REFUSED);
    assert_eq!(got, Verdict::Refuse(Reason::Rate));
    // And the window counts from the latest time seen.
    let got = guard.check(at(start, 101_000), "b.example.com", A, &limits, REFUSED);
    assert_eq!(got, Verdict::Refuse(Reason::UniqueSubdomains));
    assert_consistent(&guard);
}

#[test]
fn zero_limits_fail_closed() {
    let now = Instant::now();
    let cases = [
        (
            Limits {
                max_queries_per_second: 0,
                ..DEFAULTS
            },
            Reason::Rate,
        ),
        (
            Limits {
                max_unique_subdomains_per_minute: 0,
                ..DEFAULTS
            },
            Reason::UniqueSubdomains,
        ),
        (
            Limits {
                max_label_length: 0,
                ..DEFAULTS
            },
            Reason::LabelLength,
        ),
        (
            Limits {
                max_name_length: 0,
                ..DEFAULTS
            },
            Reason::NameLength,
        ),
    ];
    for (limits, want) in cases {
        let mut guard = Guard::new();
        let got = guard.check(now, "example.com", A, &limits, REFUSED);
        assert_eq!(got, Verdict::Refuse(want), "{limits:?}");
    }
}

#[test]
fn lowering_the_rate_shrinks_a_full_bucket() {
    let high = Limits {
        max_queries_per_second: 100,
        ..OPEN
    };
    let low = Limits {
        max_queries_per_second: 1,
        ..OPEN
    };
    let now = Instant::now();
    let mut guard = Guard::new();
    assert_eq!(
        guard.check(now, "example.com", A, &high, REFUSED),
        Verdict::Pass
    );
    let passed = (0..10)
        .filter(|_| guard.check(now, "example.com", A, &low, REFUSED) == Verdict::Pass)
        .count();
    assert_eq!(passed, 2);
}

#[test]
fn registrable_table() {
    let cases = [
        ("", ""),
        (".", ""),
        ("com", "com"),
        ("com.", "com"),
        ("example.com", "example.com"),
        ("example.com.", "example.com"),
        ("www.example.com", "example.com"),
        ("a.b.c.example.com", "example.com"),
        ("Www.Example.COM", "Example.COM"),
        ("example.co.uk", "example.co.uk"),
        ("www.example.co.uk", "example.co.uk"),
        ("a.b.example.co.uk.", "example.co.uk"),
        ("co.uk", "co.uk"),
        ("www.Example.CO.UK", "Example.CO.UK"),
        ("shop.example.com.au", "example.com.au"),
        ("x.example.net.br", "example.net.br"),
        ("x.example.org.nz", "example.org.nz"),
        ("x.example.gov.in", "example.gov.in"),
        ("x.example.edu.au", "example.edu.au"),
        ("x.example.ac.jp", "example.ac.jp"),
        ("x.example.ne.jp", "example.ne.jp"),
        ("x.example.or.jp", "example.or.jp"),
        // Not on the list: one label under the TLD (unknown TLDs too).
        ("www.example.uk", "example.uk"),
        ("x.example.io.uk", "io.uk"),
        ("www.co.example.com", "example.com"),
        ("x.example.co.u1", "co.u1"),
        ("x.example.co.ukk", "co.ukk"),
        // A second level a guess would take for a suffix is one zone ...
        ("a.data.ne.io", "ne.io"),
        ("b.data.ne.io", "ne.io"),
        // ... and the list's private section is honoured.
        ("x.example.co.com", "example.co.com"),
        ("a.site.github.io", "site.github.io"),
        ("pythonhosted.org", "pythonhosted.org"),
        ("files.pythonhosted.org", "pythonhosted.org"),
        // Odd shapes stay in bounds.
        ("..", "."),
        ("a..b", ".b"),
        (".com", ".com"),
        ("ü.example.com", "example.com"),
        ("例え.テスト", "例え.テスト"),
    ];
    for (name, want) in cases {
        assert_eq!(registrable(name), want, "{name:?}");
    }
}
