//! `sluice-bench`: the benchmark harness behind `cargo xtask bench`.
//!
//! `sluice-bench run [--smoke] [--out DIR]` measures, on loopback and in one
//! interleaved run, a direct connection, Sluice (passthrough, intercepting
//! with an empty and with the full pipeline) and the peer proxies
//! (mitmproxy, Squid ssl-bump), and writes a markdown report, the raw
//! figures and a chart. `sluice-bench client DIAL WORK` is one load
//! generator process (internal: the run starts it, inside a sandbox cgroup
//! for the Sluice targets). Needs root (cgroups, eBPF) and `SLUICE_BIN`.

mod client;
mod peers;
mod plan;
mod report;
mod results;
mod run;
mod sluice;
mod spec;
mod upstream;

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
        /// The command line to print in the report.
        #[arg(long, default_value = "cargo xtask bench")]
        command: String,
    },
    /// One load generator (started by `run`).
    Client { dial: String, work: String },
}

fn main() -> anyhow::Result<()> {
    raise_fd_limit();
    match Cli::parse().command {
        Cmd::Run {
            smoke,
            out,
            only,
            secs,
            command,
        } => run::run(run::Options {
            smoke,
            out,
            only,
            secs,
            command,
        }),
        Cmd::Client { dial, work } => client::run(
            serde_json::from_str(&dial).context("DIAL")?,
            serde_json::from_str(&work).context("WORK")?,
        ),
    }
}

/// 10,000 idle connections take 10,000 descriptors in the client, twice
/// that in Sluice (client and upstream side) and as many in the upstream;
/// children inherit the limit.
fn raise_fd_limit() {
    const WANT: u64 = 1 << 17;
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < WANT
        && setrlimit(Resource::RLIMIT_NOFILE, WANT, WANT.max(hard)).is_err()
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}
