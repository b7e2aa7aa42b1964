//! `sluice-bench`: the benchmark harness behind `cargo xtask bench`.
//!
//! `sluice-bench run [--smoke] [--out DIR]` measures, on loopback and in one
//! interleaved run, a direct connection, Sluice (passthrough, intercepting
//! with an empty and with the full pipeline) and the peer proxies
//! (mitmproxy, Squid ssl-bump, nginx), and a web app in a sandbox's own
//! network namespace through Sluice's ingress against the app dialled
//! directly, and writes a markdown report, the raw
//! figures and a chart. `sluice-bench client DIAL WORK` is one load
//! generator process (internal: the run starts it, inside a sandbox cgroup
//! for the Sluice targets). Needs root (cgroups, eBPF) and `SLUICE_BIN`.

mod client;
mod netns;
mod peers;
mod plan;
mod report;
mod results;
mod run;
mod secrets;
mod sluice;
mod spec;
mod upstream;
mod usage;

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use nix::sys::resource::{Resource, getrlimit, setrlimit};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the benchmarks and write the report.
    Run {
        /// Tiny sizes: every path exercised in seconds (CI).
        #[arg(long)]
        smoke: bool,
        /// Where latest.md, results.json and chart.png go.
        #[arg(long, default_value = "bench/results")]
        out: PathBuf,
        /// Only these targets (comma-separated), e.g. direct-tls,sluice-full.
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Seconds per closed-loop measurement instead of the mode's (for profiling).
        #[arg(long)]
        secs: Option<f64>,
        /// Idle intercepted connections the memory figure is taken at
        /// (comma-separated, each up to 100,000) instead of the mode's.
        #[arg(
            long,
            value_delimiter = ',',
            value_parser = clap::value_parser!(u32).range(1..=run::MAX_IDLE_CONNS as i64)
        )]
        idle_conns: Vec<u32>,
        /// Only the memory of idle intercepted connections (`sluice-full`):
        /// no load rounds before it, so the daemon's RSS it starts from is
        /// that of a daemon fresh from its start, not after the load;
        /// the figures are printed, nothing is written.
        #[arg(long)]
        memory_only: bool,
        /// Seconds the idle connections stay open after each memory
        /// reading, for a look at the daemon meanwhile (its pid is printed
        /// at the start; a line `memory: holding` says when).
        #[arg(long, default_value_t = 0)]
        hold_idle: u64,
        /// The command line to print in the report.
        #[arg(long, default_value = "cargo xtask bench")]
        command: String,
    },
    /// One load generator (started by `run`).
    Client { dial: String, work: String },
}

fn main() -> anyhow::Result<()> {
    raise_fd_limit(1 << 17);
    match Cli::parse().command {
        Cmd::Run {
            smoke,
            out,
            only,
            secs,
            idle_conns,
            memory_only,
            hold_idle,
            command,
        } => run::run(run::Options {
            smoke,
            out,
            only,
            secs,
            idle_conns: idle_conns.into_iter().map(|n| n as usize).collect(),
            memory_only,
            hold_idle: std::time::Duration::from_secs(hold_idle),
            command,
        }),
        Cmd::Client { dial, work } => client::run(
            serde_json::from_str(&dial).context("DIAL")?,
            serde_json::from_str(&work).context("WORK")?,
        ),
    }
}

/// Raises this process's descriptor limit to `want` (or as far as the
/// hard limit allows when it cannot be raised); children (the daemon, the
/// peers, the clients) inherit it. Root may raise the hard limit up to
/// `fs.nr_open` (where it holds `CAP_SYS_RESOURCE`: some sandboxes drop
/// it). Returns the limit now in force.
pub fn raise_fd_limit(want: u64) -> u64 {
    let want = want.min(nr_open());
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < want
        && setrlimit(Resource::RLIMIT_NOFILE, want, want.max(hard)).is_err()
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
    getrlimit(Resource::RLIMIT_NOFILE).map_or(want, |(soft, _)| soft)
}

/// The kernel's ceiling on a process's descriptors.
fn nr_open() -> u64 {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(1 << 20)
}
