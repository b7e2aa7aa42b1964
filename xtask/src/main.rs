//! Project tasks: `cargo xtask setup | build | test | demo | bench`.
//!
//! Orchestration only: the eBPF programs build from the daemon's build.rs,
//! the tests are ordinary cargo tests. Every task runs `setup` first, which
//! is idempotent and quick when the toolchain is already there.

mod bench;
mod demo;
mod setup;

use std::{path::PathBuf, process::Command};

use anyhow::{Context as _, bail};
use clap::{Parser, Subcommand};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Install the eBPF toolchain (the pinned nightly with rust-src, LLVM 22, bpf-linker) and test tools.
    Setup,
    /// Build the daemon with its eBPF programs.
    Build {
        #[arg(long)]
        release: bool,
    },
    /// Run every test: unit, in-process and end-to-end (root, real eBPF).
    Test {
        /// Extra arguments for `cargo test` (after `--`).
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Run the demo: a sandbox cgroup, the daemon, requests steered, allowed and refused.
    Demo,
    /// Benchmark against a direct connection, mitmproxy and Squid (bench/README.md).
    Bench {
        /// Seconds instead of minutes: every path exercised, figures meaningless.
        #[arg(long)]
        smoke: bool,
        /// Where the report goes (default bench/results; smoke: target/bench-smoke).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().task {
        Task::Setup => setup::run().and_then(|()| bench::install_peers()),
        Task::Build { release } => {
            setup::run()?;
            build(release)
        }
        Task::Test { args } => {
            setup::run()?;
            // The end-to-end tests move gigabytes through TLS: they run the
            // optimized daemon.
            build(true)?;
            let mut cmd = cargo();
            // The default members: everything but the bpf-only crate.
            // Every suite runs even when one fails, so a run reports all failures.
            cmd.args(["test", "--no-fail-fast"])
                .env("SLUICE_BIN", workspace().join("target/release/sluice"));
            if !args.is_empty() {
                cmd.arg("--").args(args);
            }
            run(&mut cmd)
        }
        Task::Demo => {
            setup::run()?;
            build(false)?;
            demo::run(&workspace().join("target/debug/sluice"))
        }
        Task::Bench { smoke, out } => {
            setup::run()?;
            bench::run(smoke, out)
        }
    }
}

fn build(release: bool) -> anyhow::Result<()> {
    let mut cmd = cargo();
    cmd.args(["build", "--package", "sluice"]);
    if release {
        cmd.arg("--release");
    }
    run(&mut cmd)
}

/// The workspace root (xtask lives one level below it).
fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace")
        .to_owned()
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    cmd.current_dir(workspace());
    cmd
}

fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}
