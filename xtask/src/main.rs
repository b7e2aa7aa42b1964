//! Project tasks: `cargo xtask setup | build | test | demo | bench | pgo | fuzz | soak`.
//!
//! Orchestration only: the eBPF programs build from the daemon's build.rs,
//! the tests are ordinary cargo tests. Every task runs `setup` first, which
//! is idempotent and quick when the toolchain is already there. Release
//! builds are profile-guided ([`pgo`]).

mod bench;
mod demo;
mod fuzz;
mod pgo;
mod setup;
mod soak;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

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
    /// Build the daemon with its eBPF programs (release builds profile-guided).
    Build {
        #[arg(long)]
        release: bool,
        /// A release build without the content stages' profile.
        #[arg(long, requires = "release")]
        no_pgo: bool,
    },
    /// Run every test: unit, in-process and end-to-end (root, real eBPF).
    Test {
        /// Extra arguments for `cargo test` (after `--`).
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Run the demo: a sandbox cgroup, the daemon, requests steered, allowed and refused.
    Demo,
    /// Benchmark against a direct connection, mitmproxy, Squid and nginx (bench/README.md).
    Bench {
        /// Seconds instead of minutes: every path exercised, figures meaningless.
        #[arg(long)]
        smoke: bool,
        /// Where the report goes (default bench/results; smoke: target/bench-smoke).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Idle connections the memory figure is taken at, comma-separated,
        /// each up to 100,000 (default 10,000 and 100,000; smoke: 100).
        #[arg(long)]
        idle_conns: Option<String>,
        /// The content scanner's criterion benchmark instead (bench/benches/scan.rs),
        /// built as a release daemon is; extra arguments go to criterion.
        #[arg(long, conflicts_with_all = ["smoke", "out", "idle_conns"])]
        scan: bool,
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Fuzz the parsers (fuzz/README.md): every target, or one, for a while each.
    Fuzz {
        /// One target (`cargo fuzz list` in fuzz/ names them); all when absent.
        target: Option<String>,
        /// Seconds each target runs.
        #[arg(long, default_value_t = 20)]
        time: u64,
    },
    /// Soak the release daemon under a traffic mix and faults (docs/soak.md).
    Soak {
        /// How long the traffic and the faults go on.
        #[arg(long, default_value_t = 30.0)]
        minutes: f64,
    },
    /// Make the profile of profile-guided release builds (target/pgo/scan.profdata)
    /// and print the RUSTFLAGS that build with it.
    Pgo,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().task {
        Task::Setup => setup::run().and_then(|()| bench::install_peers()),
        Task::Build { release, no_pgo } => {
            setup::run()?;
            build(release.then_some(!no_pgo))
        }
        Task::Test { args } => {
            setup::run()?;
            // The bench's smoke test runs the peers: a machine that never
            // ran `setup` gets them here too (idempotent).
            bench::install_peers()?;
            // The end-to-end tests move gigabytes through TLS: they run the
            // optimized daemon.
            build(Some(true))?;
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
            build(None)?;
            demo::run(&workspace().join("target/debug/sluice"))
        }
        Task::Bench {
            smoke,
            out,
            idle_conns,
            scan,
            args,
        } => {
            setup::run()?;
            if scan {
                return bench::scan(&args);
            }
            bench::run(smoke, out, idle_conns.as_deref())
        }
        Task::Fuzz { target, time } => {
            setup::run()?;
            fuzz::run(target.as_deref(), time)
        }
        Task::Soak { minutes } => {
            setup::run()?;
            soak::run_soak(minutes)
        }
        Task::Pgo => {
            setup::run()?;
            let profile = pgo::profile()?.context("no profile: see the warning above")?;
            println!("RUSTFLAGS={}", pgo::rustflags(&profile));
            Ok(())
        }
    }
}

/// Builds the daemon: a debug build (`None`) or a release build, profile
/// guided when `Some(true)`.
fn build(release: Option<bool>) -> anyhow::Result<()> {
    match release {
        None => run(cargo().args(["build", "--package", "sluice"])),
        Some(pgo) => release_daemon(pgo).map(drop),
    }
}

/// The release daemon, profile guided when `pgo` (and checked to be:
/// [`pgo::check`]); returns the RUSTFLAGS it was built with, for the other
/// release builds of the task.
fn release_daemon(pgo: bool) -> anyhow::Result<String> {
    let profile = if pgo { pgo::profile()? } else { None };
    let rustflags = release_rustflags(profile.as_deref());
    release_build(&DAEMON, &rustflags)?;
    if profile.is_some() {
        pgo::check(&workspace().join("target/release/sluice"))?;
    }
    Ok(rustflags)
}

/// The packages of a release build of the daemon: `sluice` with
/// `sluice-scan-bench` ([`release_build`]).
const DAEMON: [&str; 2] = ["sluice", "sluice-scan-bench"];

/// The RUSTFLAGS of release builds: the caller's, then those that build
/// with `profile` ([`pgo::profile`]) when there is one.
fn release_rustflags(profile: Option<&Path>) -> String {
    rustflags_with(profile.map(pgo::rustflags).as_deref())
}

/// The caller's RUSTFLAGS followed by `extra`: a task's builds keep the
/// flags they were started with.
fn rustflags_with(extra: Option<&str>) -> String {
    let callers = std::env::var("RUSTFLAGS").unwrap_or_default();
    format!("{callers} {}", extra.unwrap_or_default())
        .trim()
        .to_owned()
}

/// A release build of `packages` with `rustflags`. The daemon is built with
/// `sluice-scan-bench` ([`DAEMON`]), the trainer's and the benchmarks'
/// crate: one run resolves the same dependency features as theirs, so the
/// library is the same crate to the compiler (`-C metadata`) and the
/// profile's functions are the daemon's.
fn release_build(packages: &[&str], rustflags: &str) -> anyhow::Result<()> {
    let mut cmd = cargo();
    cmd.args(["build", "--release"]);
    for package in packages {
        cmd.args(["--package", package]);
    }
    if !rustflags.is_empty() {
        cmd.env("RUSTFLAGS", rustflags);
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
