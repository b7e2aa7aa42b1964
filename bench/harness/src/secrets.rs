//! The secrets the run binds, and what a bound credential costs on 1 MiB
//! bodies. Which secret is bound must not matter to the throughput (the
//! response redaction's search is built to be secret-independent), so every
//! run draws its secrets afresh from the OS's random numbers, shaped like
//! real credentials (the redaction benchmark's shapes,
//! [`sluice_scan_bench::responses::Shape`]), binds each to a sandbox of its
//! own running the full pipeline, and holds each one's 1 MiB-body figure
//! against the same pipeline with no credential bound
//! ([`WITHOUT`]): the report gives the lowest and the highest ratio.

use std::io::Read as _;

use anyhow::Context as _;
use serde::Serialize;
use sluice_scan_bench::responses::Shape;

/// The targets binding the run's secrets, in the order they are drawn: the
/// first is `sluice-full` itself (every metric), the others measure only
/// 1 MiB bodies. At most this many secrets a run.
pub const BOUND: [&str; 3] = ["sluice-full", "sluice-full-2", "sluice-full-3"];

/// The full pipeline with no credential bound (and no placeholder sent).
pub const WITHOUT: &str = "sluice-nocred";

/// A bound credential's 1 MiB bodies against none: at least this ratio,
/// for every secret.
pub const WANT: f64 = 0.9;

/// One drawn secret: its shape and the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    pub shape: Shape,
    pub bytes: Vec<u8>,
}

/// `k` secrets (at most [`BOUND`]'s length), of distinct shapes where
/// there are enough (the shapes in random order), every character picked
/// by `below` (given a count, an index below it).
pub fn draw(k: usize, mut below: impl FnMut(usize) -> usize) -> Vec<Secret> {
    let mut shapes = Shape::ALL.to_vec();
    // Fisher-Yates.
    for i in (1..shapes.len()).rev() {
        shapes.swap(i, below(i + 1));
    }
    (0..k.min(BOUND.len()))
        .map(|i| {
            let shape = shapes[i % shapes.len()];
            Secret {
                shape,
                bytes: shape.draw_with(&mut below),
            }
        })
        .collect()
}

/// The OS's random numbers (`/dev/urandom`), as [`draw`]'s `below`.
pub struct OsRandom(std::fs::File);

impl OsRandom {
    pub fn open() -> anyhow::Result<OsRandom> {
        std::fs::File::open("/dev/urandom")
            .map(OsRandom)
            .context("opening /dev/urandom")
    }

    /// A number below `n` (`n` > 0): a 64-bit draw modulo `n`, whose bias
    /// for the alphabets' sizes (at most 64) is below 2^-58.
    pub fn below(&mut self, n: usize) -> usize {
        let mut word = [0u8; 8];
        self.0
            .read_exact(&mut word)
            .expect("/dev/urandom does not run dry");
        (u64::from_ne_bytes(word) % n.max(1) as u64) as usize
    }
}

/// What the run records of a bound secret (never its value).
#[derive(Debug, Clone, Serialize)]
pub struct Bound {
    /// The target it is bound for.
    pub target: String,
    /// The shape's name (`sk48`, `hex40`, `b64url32`, `aws40`).
    pub shape: String,
    /// The secret's length, bytes.
    pub len: usize,
}

impl Bound {
    pub fn new(target: &str, secret: &Secret) -> Bound {
        Bound {
            target: target.to_owned(),
            shape: secret.shape.name().to_owned(),
            len: secret.bytes.len(),
        }
    }
}

/// One secret's 1 MiB-body figure and its ratio to [`WITHOUT`]'s.
#[derive(Debug, Clone, Serialize)]
pub struct SecretRatio {
    #[serde(flatten)]
    pub bound: Bound,
    /// Median MB/s over rounds.
    pub mb_s: Option<f64>,
    pub ratio: Option<f64>,
    /// The daemon's median CPU per MB of body, µs: on a shared machine
    /// the steadier sign of what the search costs.
    pub cpu_us_per_mb: Option<f64>,
}

/// 1 MiB bodies with a bound credential against without, over the run's
/// secrets.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The target without a credential, and its median MB/s.
    pub without: String,
    pub without_mb_s: Option<f64>,
    pub without_cpu_us_per_mb: Option<f64>,
    pub secrets: Vec<SecretRatio>,
    /// The lowest and highest ratio over the secrets that have one.
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// A target's 1 MiB-body medians.
#[derive(Debug, Clone, Copy, Default)]
pub struct Figures {
    pub mb_s: Option<f64>,
    /// The daemon's CPU µs per MB.
    pub cpu_us_per_mb: Option<f64>,
}

impl Comparison {
    /// Over `secrets`, from each target's `figures` (`None`: the target
    /// did not run); none when the run had no secrets or no [`WITHOUT`].
    pub fn of(secrets: &[Bound], figures: impl Fn(&str) -> Option<Figures>) -> Option<Comparison> {
        if secrets.is_empty() {
            return None;
        }
        let without = figures(WITHOUT)?;
        let secrets: Vec<SecretRatio> = secrets
            .iter()
            .map(|bound| {
                let own = figures(&bound.target).unwrap_or_default();
                let ratio = match (own.mb_s, without.mb_s) {
                    (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                    _ => None,
                };
                SecretRatio {
                    bound: bound.clone(),
                    mb_s: own.mb_s,
                    ratio,
                    cpu_us_per_mb: own.cpu_us_per_mb,
                }
            })
            .collect();
        let ratios = || secrets.iter().filter_map(|s| s.ratio);
        Some(Comparison {
            without: WITHOUT.to_owned(),
            without_mb_s: without.mb_s,
            without_cpu_us_per_mb: without.cpu_us_per_mb,
            min: ratios().min_by(f64::total_cmp),
            max: ratios().max_by(f64::total_cmp),
            secrets,
        })
    }

    /// "1 secret", "3 secrets".
    pub fn count(&self) -> String {
        match self.secrets.len() {
            1 => "1 secret".to_owned(),
            n => format!("{n} secrets"),
        }
    }

    /// The secrets without a ratio (a target or the baseline failed).
    pub fn unmeasured(&self) -> usize {
        self.secrets.iter().filter(|s| s.ratio.is_none()).count()
    }

    /// "met" when every secret's ratio is at least [`WANT`]; how far the
    /// lowest fell short; "not measured" when a secret has no ratio.
    pub fn verdict(&self) -> String {
        match self.min {
            Some(_) if self.unmeasured() > 0 => format!(
                "not measured ({} of {} secrets without a figure)",
                self.unmeasured(),
                self.secrets.len()
            ),
            Some(min) if min >= WANT => "met".to_owned(),
            Some(min) => format!("missed by {:.0}%", (1.0 - min / WANT) * 100.0),
            None => "not measured".to_owned(),
        }
    }

    /// The measured column: lowest and highest ratio over the secrets.
    pub fn measured(&self) -> String {
        match (self.min, self.max) {
            (Some(min), Some(max)) => format!(
                "{} / {} bodies_1m: min {min:.2}×, max {max:.2}× over {}",
                BOUND[0],
                self.without,
                self.count()
            ),
            _ => "no figure".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic `below`: counts up, wrapping.
    fn counting() -> impl FnMut(usize) -> usize {
        let mut i = 0;
        move |n| {
            i += 1;
            i % n
        }
    }

    #[test]
    fn secrets_take_distinct_real_shapes() {
        let mut random = OsRandom::open().expect("urandom");
        for (k, want) in [(0, 0), (1, 1), (3, 3), (9, BOUND.len())] {
            let drawn = draw(k, |n| random.below(n));
            assert_eq!(drawn.len(), want);
            let mut names: Vec<&str> = drawn.iter().map(|s| s.shape.name()).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), want, "distinct shapes: {drawn:?}");
            for secret in &drawn {
                let (len, ok): (usize, fn(&u8) -> bool) = match secret.shape.name() {
                    "sk48" => (48, |b| b.is_ascii_alphanumeric() || *b == b'-'),
                    "hex40" => (40, |b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
                    "b64url32" => (32, |b| b.is_ascii_alphanumeric() || b"-_".contains(b)),
                    "aws40" => (40, |b| b.is_ascii_alphanumeric() || b"+/".contains(b)),
                    other => panic!("unknown shape {other}"),
                };
                assert_eq!(secret.bytes.len(), len, "{secret:?}");
                assert!(secret.bytes.iter().all(ok), "{secret:?}");
                if secret.shape.name() == "sk48" {
                    assert!(secret.bytes.starts_with(b"sk-"), "{secret:?}");
                }
            }
        }
        // Fresh every draw.
        let a = draw(3, |n| random.below(n));
        let b = draw(3, |n| random.below(n));
        assert_ne!(a, b);
        // The source decides everything: the same numbers, the same secrets.
        assert_eq!(draw(3, counting()), draw(3, counting()));
    }

    #[test]
    fn os_random_stays_below_its_bound_and_covers_it() {
        let mut random = OsRandom::open().expect("urandom");
        let mut seen = [false; 16];
        for _ in 0..2_000 {
            let n = random.below(16);
            assert!(n < 16);
            seen[n] = true;
        }
        assert!(seen.iter().all(|&s| s), "{seen:?}");
        assert_eq!(random.below(1), 0);
    }

    /// The comparison over `bound` (target, MB/s), against `without`
    /// (`None`: that target did not run).
    fn compare(without: Option<f64>, bound: &[(&str, Option<f64>)]) -> Option<Comparison> {
        let secret = Secret {
            shape: Shape::Hex40,
            bytes: vec![b'a'; 40],
        };
        let secrets: Vec<Bound> = bound
            .iter()
            .map(|(name, _)| Bound::new(name, &secret))
            .collect();
        Comparison::of(&secrets, |target| match target {
            WITHOUT => without.map(|mb_s| Figures {
                mb_s: Some(mb_s),
                cpu_us_per_mb: None,
            }),
            target => bound
                .iter()
                .find(|(name, _)| *name == target)
                .map(|&(_, mb_s)| Figures {
                    mb_s,
                    cpu_us_per_mb: None,
                }),
        })
    }

    #[test]
    fn the_lowest_ratio_decides_and_every_secret_must_have_one() {
        type Case<'a> = (
            Option<f64>,
            &'a [(&'a str, Option<f64>)],
            Option<(f64, f64)>,
            &'a str,
        );
        let cases: &[Case] = &[
            // Every secret at least 0.9× without: met.
            (
                Some(1000.0),
                &[
                    ("sluice-full", Some(950.0)),
                    ("sluice-full-2", Some(1010.0)),
                    ("sluice-full-3", Some(900.0)),
                ],
                Some((0.9, 1.01)),
                "met",
            ),
            // One secret at 0.72×: missed by 20%, the others do not help.
            (
                Some(1000.0),
                &[("sluice-full", Some(990.0)), ("sluice-full-2", Some(720.0))],
                Some((0.72, 0.99)),
                "missed by 20%",
            ),
            // A secret's target failed: its ratio is unknown.
            (
                Some(1000.0),
                &[("sluice-full", Some(990.0)), ("sluice-full-2", None)],
                Some((0.99, 0.99)),
                "not measured (1 of 2 secrets without a figure)",
            ),
            // No figure without a credential: nothing to hold them against.
            (
                Some(0.0),
                &[("sluice-full", Some(990.0))],
                None,
                "not measured",
            ),
        ];
        for (without, bound, range, verdict) in cases {
            let cmp = compare(*without, bound).expect("both sides ran");
            let got = cmp.min.zip(cmp.max);
            match (got, range) {
                (Some((lo, hi)), Some((want_lo, want_hi))) => {
                    assert!((lo - want_lo).abs() < 1e-9, "{cmp:?}");
                    assert!((hi - want_hi).abs() < 1e-9, "{cmp:?}");
                }
                (None, None) => {}
                _ => panic!("{cmp:?} against {range:?}"),
            }
            assert_eq!(cmp.verdict(), *verdict, "{cmp:?}");
        }
        // Without the target with no credential, or without secrets: no
        // comparison at all.
        assert!(compare(None, &[("sluice-full", Some(1.0))]).is_none());
        assert!(compare(Some(1.0), &[]).is_none());
    }
}
