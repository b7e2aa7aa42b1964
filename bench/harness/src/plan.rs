//! What is measured, against what, how big, and in which order: every
//! round runs every metric against every target, the target order rotating
//! from round to round, so slow drift of the machine (other load, thermal,
//! caches) spreads over all targets instead of favouring one.

use std::{
    io::{BufRead as _, BufReader, Write as _},
    process::{Child, ChildStdout, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use serde::Serialize;

use crate::{
    spec::{Dial, MEASURING, Outcome, Work},
    usage::{self, Sample, Usage},
};

/// A way of reaching the upstream (or the published web app).
#[derive(Debug, Clone)]
pub struct Target {
    pub name: &'static str,
    /// The direct connection its figures are compared with: `direct-tcp`,
    /// `direct-tls` or `direct-app`.
    pub baseline: &'static str,
    /// What is measured on it.
    pub metrics: &'static [Metric],
    pub dial: Dial,
    /// The process whose tree serves this target (Sluice's daemon, a
    /// peer), whose CPU and memory are measured; none for direct.
    pub proxy: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
/// Serialized as [`Metric::key`] (results.json, read by chart.py).
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Bulk,
    #[serde(rename = "bodies_1m")]
    Bodies1m,
    #[serde(rename = "rps_keepalive")]
    RpsKeepAlive,
    RpsNewConn,
    Handshakes,
    Latency,
}

impl Metric {
    pub const ALL: [Metric; 6] = [
        Metric::Bulk,
        Metric::Bodies1m,
        Metric::RpsKeepAlive,
        Metric::RpsNewConn,
        Metric::Handshakes,
        Metric::Latency,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Metric::Bulk => "bulk",
            Metric::Bodies1m => "bodies_1m",
            Metric::RpsKeepAlive => "rps_keepalive",
            Metric::RpsNewConn => "rps_new_conn",
            Metric::Handshakes => "handshakes",
            Metric::Latency => "latency",
        }
    }

    /// Handshakes only mean something over TLS.
    pub const PLAIN: [Metric; 5] = [
        Metric::Bulk,
        Metric::Bodies1m,
        Metric::RpsKeepAlive,
        Metric::RpsNewConn,
        Metric::Latency,
    ];

    /// The web app behind the ingress: what a viewer's browser does, many
    /// small requests on kept-alive connections, and how long each waits.
    pub const APP: [Metric; 2] = [Metric::RpsKeepAlive, Metric::Latency];

    pub fn applies(self, target: &Target) -> bool {
        target.metrics.contains(&self)
    }

    pub fn work(self, sizes: &Sizes) -> Work {
        match self {
            Metric::Bulk => Work::Bulk {
                bytes: sizes.bulk_bytes,
            },
            Metric::Bodies1m => Work::Requests {
                size: 1 << 20,
                conns: 4,
                secs: sizes.secs,
                new_conn: false,
            },
            Metric::RpsKeepAlive | Metric::RpsNewConn => Work::Requests {
                size: 1024,
                conns: sizes.conns,
                secs: sizes.secs,
                new_conn: self == Metric::RpsNewConn,
            },
            Metric::Handshakes => Work::Handshakes {
                conns: sizes.conns,
                secs: sizes.secs,
            },
            Metric::Latency => Work::Latency {
                size: 1024,
                rate: sizes.rate,
                conns: sizes.conns,
                secs: sizes.latency_secs,
            },
        }
    }

    /// The figure a closed-loop outcome stands for (MB/s or per second).
    pub fn value(self, outcome: &Outcome) -> f64 {
        let secs = outcome.secs.max(1e-9);
        match self {
            Metric::Bulk | Metric::Bodies1m => outcome.bytes as f64 / secs / 1e6,
            _ => outcome.ok as f64 / secs,
        }
    }
}

/// How big a run is.
#[derive(Debug, Clone, Serialize)]
pub struct Sizes {
    pub rounds: usize,
    pub bulk_bytes: u64,
    /// Length of each closed-loop measurement.
    pub secs: f64,
    pub latency_secs: f64,
    /// Open-loop request rate.
    pub rate: u64,
    /// Concurrent connections of the request and handshake loops.
    pub conns: usize,
    /// The most idle intercepted connections held for the memory figure.
    pub idle_conns: usize,
    /// Every count the memory figure is taken at, smallest first (the
    /// memory a larger step frees is not what a smaller one then reuses).
    pub idle_steps: Vec<usize>,
    /// Random secrets drawn and bound, each in a sandbox of its own, for
    /// 1 MiB bodies with a bound credential against none.
    pub secrets: usize,
}

impl Sizes {
    pub fn full() -> Sizes {
        Sizes {
            rounds: 3,
            bulk_bytes: 1 << 30,
            secs: 3.0,
            latency_secs: 8.0,
            rate: 1000,
            conns: 16,
            idle_conns: 100_000,
            idle_steps: vec![10_000, 100_000],
            secrets: 3,
        }
    }

    /// Seconds in all: every path exercised, no figure worth reading.
    pub fn smoke() -> Sizes {
        Sizes {
            rounds: 1,
            bulk_bytes: 4 << 20,
            secs: 0.3,
            latency_secs: 0.5,
            rate: 200,
            conns: 4,
            idle_conns: 100,
            idle_steps: vec![100],
            secrets: 1,
        }
    }

    /// The memory figure's steps that `fds` descriptors a process allow
    /// (the client holds one per connection, the daemon one and what its
    /// pool keeps; a margin for the rest): a larger step is taken at the
    /// most allowed instead, and the note says so.
    pub fn within_fd_limit(mut self, fds: u64) -> (Sizes, Option<String>) {
        let most = fds.saturating_sub(FD_MARGIN) as usize;
        if self.idle_conns <= most {
            return (self, None);
        }
        let asked = self.idle_steps.clone();
        self.idle_steps = asked.iter().map(|&n| n.min(most)).collect();
        self.idle_steps.dedup();
        self.idle_conns = most;
        let note = format!(
            "The descriptor limit here is {fds} and cannot be raised (no `CAP_SYS_RESOURCE`): \
             the memory figure asked for {asked:?} connections and was taken at {:?}.",
            self.idle_steps
        );
        (self, Some(note))
    }

    /// Takes the memory figure at these counts instead (none: unchanged).
    pub fn with_idle_steps(mut self, steps: &[usize]) -> Sizes {
        let mut steps: Vec<usize> = steps.iter().copied().filter(|&n| n > 0).collect();
        steps.sort_unstable();
        steps.dedup();
        if let Some(&most) = steps.last() {
            self.idle_conns = most;
            self.idle_steps = steps;
        }
        self
    }
}

/// Descriptors a process keeps beside the idle connections: listeners,
/// the daemon's maps and pools, the client's own.
const FD_MARGIN: u64 = 1_024;

/// A client's outcome and, for a target with a proxy, what the proxy's
/// process tree spent over the client's measured phase.
#[derive(Debug)]
pub struct Measured {
    pub outcome: Outcome,
    pub usage: Option<Usage>,
}

/// Runs one client process to completion (or kills it after `limit`),
/// sampling `proxy`'s process tree when the client starts its measured
/// phase and when it reports.
pub fn run_client(
    dial: &Dial,
    work: &Work,
    limit: Duration,
    proxy: Option<u32>,
) -> anyhow::Result<Measured> {
    let mut child = spawn_client(dial, work, Stdio::null())?;
    let stdout = child.stdout.take().context("client stdout")?;
    let reader = std::thread::spawn(move || read_phases(stdout, proxy));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("the client ran longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let phases = reader.join().unwrap_or_default();
    if !status.success() {
        bail!("the client failed ({status}):\n{}", phases.text);
    }
    let line = phases.text.lines().last().unwrap_or_default();
    let outcome =
        serde_json::from_str(line).with_context(|| format!("client output: {}", phases.text))?;
    let usage = match (phases.start, phases.end) {
        (Some(start), Some(end)) => Some(usage::between(start, end, usage::ticks_per_sec())),
        _ => None,
    };
    Ok(Measured { outcome, usage })
}

/// A client's output, and the proxy samples taken as it went.
#[derive(Debug, Default)]
struct Phases {
    text: String,
    start: Option<Sample>,
    end: Option<Sample>,
}

/// Reads the client's stdout as it comes: [`MEASURING`] starts the phase,
/// the outcome (the JSON line) ends it, before the client closes its
/// connections, so neither warm-up nor teardown is counted.
fn read_phases(stdout: ChildStdout, proxy: Option<u32>) -> Phases {
    let mut phases = Phases::default();
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if line == MEASURING {
            phases.start = proxy.and_then(usage::sample);
            continue;
        }
        if line.starts_with('{') {
            phases.end = proxy.and_then(usage::sample);
        }
        phases.text.push_str(&line);
        phases.text.push('\n');
    }
    phases
}

/// A client holding idle connections: created by [`hold_idle`], released
/// (and its outcome read) by [`Held::release`].
pub struct Held {
    child: Child,
    pub opened: u64,
}

/// Starts an [`Work::Idle`] client and waits until it holds its connections.
pub fn hold_idle(dial: &Dial, n: usize, limit: Duration) -> anyhow::Result<Held> {
    let mut child = spawn_client(dial, &Work::Idle { n, size: 1024 }, Stdio::piped())?;
    let stdout = child.stdout.take().context("client stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let ready = lines.next().and_then(Result::ok).unwrap_or_default();
        let _ = tx.send(ready);
    });
    let line = match rx.recv_timeout(limit) {
        Ok(line) => line,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            bail!("the idle client did not open its connections in {limit:?}");
        }
    };
    let opened = line
        .strip_prefix("READY ")
        .and_then(|n| n.trim().parse().ok())
        .with_context(|| format!("the idle client said {line:?}"))?;
    Ok(Held { child, opened })
}

impl Held {
    /// The client's sockets still open: its held connections, less any the
    /// daemon has closed meanwhile (an idle timeout), give or take the
    /// runtime's own (none or two).
    pub fn sockets_open(&self) -> u64 {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", self.child.id())) else {
            return 0;
        };
        fds.filter_map(Result::ok)
            .filter(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
            })
            .count() as u64
    }

    pub fn release(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn spawn_client(dial: &Dial, work: &Work, stdin: Stdio) -> anyhow::Result<Child> {
    let exe = std::env::current_exe()?;
    let child = Command::new(exe)
        .arg("client")
        .arg(serde_json::to_string(dial)?)
        .arg(serde_json::to_string(work)?)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .spawn()
        .context("starting a client")?;
    Ok(child)
}

/// Prints progress on one line per measurement.
pub fn progress(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_steps_run_smallest_first_up_to_the_largest() {
        let full = Sizes::full();
        assert_eq!(full.idle_steps, [10_000, 100_000]);
        assert_eq!(full.idle_conns, 100_000);
        let asked = Sizes::full().with_idle_steps(&[50_000, 0, 1_000, 50_000]);
        assert_eq!(asked.idle_steps, [1_000, 50_000]);
        assert_eq!(asked.idle_conns, 50_000);
        let unchanged = Sizes::smoke().with_idle_steps(&[]);
        assert_eq!(
            (unchanged.idle_steps, unchanged.idle_conns),
            (vec![100], 100)
        );
    }

    #[test]
    fn idle_steps_beyond_the_descriptor_limit_are_taken_at_its_most() {
        let (roomy, note) = Sizes::full().within_fd_limit(1 << 20);
        assert_eq!((roomy.idle_steps, note), (vec![10_000, 100_000], None));
        let (capped, note) = Sizes::full().within_fd_limit(20_000);
        assert_eq!(capped.idle_steps, [10_000, 18_976]);
        assert_eq!(capped.idle_conns, 18_976);
        assert!(note.expect("a note").contains("20000"));
        let (small, _) = Sizes::full()
            .with_idle_steps(&[50_000, 100_000])
            .within_fd_limit(10_000);
        assert_eq!(small.idle_steps, [8_976]);
    }
}
