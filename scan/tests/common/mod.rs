//! What the labelled PII sets (`pii_world`, `pii_locales`) share: a seeded
//! generator, the Luhn digit, grouping, and the scoring of a set: a value
//! is found when a finding of its kind overlaps its span; a finding of a
//! scored kind that overlaps no value of its kind is a false positive.

#![allow(dead_code)] // each set uses its own part of it

use sluice_scan::{Kind, ScanConfig, Scanner};

/// A deterministic generator (xorshift64*), so a set never changes.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn digit(&mut self) -> u8 {
        b'0' + self.below(10) as u8
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// `template` with each `#` a random digit, each `%` one from 1 to 9
    /// (where a subscriber number starts: never with the trunk 0).
    pub fn fill(&mut self, template: &str) -> String {
        template
            .chars()
            .map(|c| match c {
                '#' => self.digit() as char,
                '%' => (b'1' + self.below(9) as u8) as char,
                _ => c,
            })
            .collect()
    }
}

/// The Luhn check digit that completes `body` (digits).
pub fn luhn_digit(body: &[u8]) -> u8 {
    let mut sum = 0u32;
    for (i, &b) in body.iter().rev().enumerate() {
        let d = u32::from(b - b'0');
        sum += if i % 2 == 0 {
            let x = d * 2;
            if x > 9 { x - 9 } else { x }
        } else {
            d
        };
    }
    b'0' + ((10 - sum % 10) % 10) as u8
}

pub fn luhn_ok(digits: &[u8]) -> bool {
    luhn_digit(&digits[..digits.len() - 1]) == digits[digits.len() - 1]
}

/// The number written in groups (`sizes`, the last group takes the rest)
/// joined by `sep`.
pub fn grouped(number: &str, sizes: &[usize], sep: &str) -> String {
    let mut out = String::new();
    let mut i = 0;
    for (k, &size) in sizes.iter().enumerate() {
        if i >= number.len() {
            break;
        }
        let end = if k == sizes.len() - 1 {
            number.len()
        } else {
            (i + size).min(number.len())
        };
        if !out.is_empty() {
            out.push_str(sep);
        }
        out.push_str(&number[i..end]);
        i = end;
    }
    if i < number.len() {
        out.push_str(sep);
        out.push_str(&number[i..]);
    }
    out
}

/// One labelled body: where each value lies (byte spans of `text`).
pub struct Labelled {
    pub label: String,
    pub content_type: &'static str,
    pub text: String,
    pub spans: Vec<(Kind, usize, usize)>,
}

#[derive(Default, Clone, Copy)]
pub struct Tally {
    pub values: usize,
    pub found: usize,
    pub false_positives: usize,
}

impl Tally {
    pub fn recall(&self) -> f64 {
        self.found as f64 / self.values.max(1) as f64
    }

    pub fn precision(&self) -> f64 {
        let reported = self.found + self.false_positives;
        if reported == 0 {
            1.0
        } else {
            self.found as f64 / reported as f64
        }
    }
}

/// A set's score: a tally per kind (in the order given) and, for the
/// report, what was missed and what was found wrongly.
pub struct Score {
    pub kinds: Vec<Kind>,
    pub tallies: Vec<Tally>,
    pub missed: Vec<String>,
    pub wrong: Vec<String>,
}

impl Score {
    pub fn of(&self, kind: Kind) -> Tally {
        self.tallies[self.kinds.iter().position(|k| *k == kind).expect("kind")]
    }

    /// Fails unless each kind keeps its floors: (kind, recall, precision).
    pub fn hold(&self, floors: &[(Kind, f64, f64)]) {
        for &(kind, recall, precision) in floors {
            let t = self.of(kind);
            assert!(t.recall() >= recall, "{kind} recall {:.3}", t.recall());
            assert!(
                t.precision() >= precision,
                "{kind} precision {:.3}",
                t.precision()
            );
        }
    }

    /// Prints the table and the misses (`--nocapture` shows them).
    pub fn print(&self) {
        eprintln!("type          values  found  false+  recall  precision");
        for (kind, t) in self.kinds.iter().zip(&self.tallies) {
            eprintln!(
                "{:<12} {:>7} {:>6} {:>7} {:>7.3} {:>10.3}",
                kind.as_str(),
                t.values,
                t.found,
                t.false_positives,
                t.recall(),
                t.precision()
            );
        }
        for m in &self.missed {
            eprintln!("missed    {m}");
        }
        for w in &self.wrong {
            eprintln!("false+    {w}");
        }
    }
}

/// Scans every body with every kind on and scores `kinds` (findings of
/// other kinds are not counted).
pub fn score(cases: &[Labelled], kinds: &[Kind]) -> Score {
    let scanner = Scanner::new(&ScanConfig::all()).expect("scanner");
    let mut score = Score {
        kinds: kinds.to_vec(),
        tallies: vec![Tally::default(); kinds.len()],
        missed: Vec::new(),
        wrong: Vec::new(),
    };
    for case in cases {
        let findings = scanner.scan(Some(case.content_type), case.text.as_bytes());
        for &(kind, s, e) in &case.spans {
            let Some(k) = kinds.iter().position(|k| *k == kind) else {
                continue;
            };
            score.tallies[k].values += 1;
            let hit = findings
                .iter()
                .any(|f| f.kind == kind && f.start < e && s < f.end);
            if hit {
                score.tallies[k].found += 1;
            } else {
                score
                    .missed
                    .push(format!("{} {:?} in {}", kind, &case.text[s..e], case.label));
            }
        }
        for f in &findings {
            let Some(k) = kinds.iter().position(|k| *k == f.kind) else {
                continue;
            };
            let expected = case
                .spans
                .iter()
                .any(|&(kind, s, e)| kind == f.kind && f.start < e && s < f.end);
            if !expected {
                score.tallies[k].false_positives += 1;
                score.wrong.push(format!(
                    "{} {:?} in {}: {}",
                    f.kind,
                    &case.text[f.start..f.end],
                    case.label,
                    case.text
                ));
            }
        }
    }
    score
}
