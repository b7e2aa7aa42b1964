//! `cargo xtask fuzz [TARGET] [--time S]`: the fuzz targets of `fuzz/`
//! (fuzz/README.md), built once and run one after another for `S` seconds
//! each from their seed corpora, with a table of executions and coverage
//! at the end. Fails when a target finds a crash (its input is left in
//! `fuzz/artifacts/<target>/`).
//!
//! cargo-fuzz is installed when missing; it builds with the pinned nightly
//! the eBPF programs use (`gateway-ebpf/toolchain`, which `setup`
//! installs), so no second nightly is needed. The eBPF build is skipped
//! (`AYA_BUILD_SKIP`): no target loads the programs, and the sanitizer's
//! flags must not reach the bpf build.

use std::{path::Path, process::Command};

use anyhow::{Context as _, bail};

use super::{setup::EBPF_TOOLCHAIN, workspace};

/// The cargo-fuzz release this project is run with.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Optimised, without debug assertions: the targets assert what they
/// check, and the build (every dependency with the sanitizer) is the slow
/// part of a run. Build and run must pass the same flags, or the run
/// builds everything again.
const RELEASE: &str = "-O";

/// The dictionary each target mutates with, where one helps (`fuzz/dict/`).
const DICTIONARIES: &[(&str, &str)] = &[
    ("sniff", "sniff.dict"),
    ("http_head", "http_head.dict"),
    ("json_reader", "json.dict"),
    ("pii_scan", "json.dict"),
    ("injection", "json.dict"),
    ("policy_yaml", "policy_yaml.dict"),
];

/// What one run reported.
struct Outcome {
    target: String,
    executions: Option<u64>,
    coverage: Option<(u64, u64)>,
    crashed: bool,
}

pub fn run(only: Option<&str>, seconds: u64) -> anyhow::Result<()> {
    let toolchain = EBPF_TOOLCHAIN.trim();
    install_cargo_fuzz()?;
    let dir = workspace().join("fuzz");
    let targets = list(&dir, toolchain)?;
    let targets: Vec<String> = match only {
        Some(one) if targets.iter().any(|t| t == one) => vec![one.to_owned()],
        Some(one) => bail!("no fuzz target `{one}`; there are: {}", targets.join(", ")),
        None => targets,
    };
    // One build for every target: the sanitizer build is the slow part.
    let mut build = cargo_fuzz(&dir, toolchain);
    build.args(["build", RELEASE]);
    if let [one] = &targets[..] {
        build.arg(one);
    }
    super::run(&mut build)?;
    let mut outcomes = Vec::new();
    for target in &targets {
        outcomes.push(run_one(&dir, toolchain, target, seconds)?);
    }
    println!(
        "\n{:<18} {:>14} {:>8} {:>8}",
        "target", "executions", "cov", "ft"
    );
    for o in &outcomes {
        let (cov, ft) = o
            .coverage
            .map_or(("?".to_owned(), "?".to_owned()), |(c, f)| {
                (c.to_string(), f.to_string())
            });
        let runs = o.executions.map_or("?".to_owned(), |n| n.to_string());
        let crashed = if o.crashed { "  CRASHED" } else { "" };
        println!("{:<18} {runs:>14} {cov:>8} {ft:>8}{crashed}", o.target);
    }
    println!("({seconds} s each; cov: edges covered, ft: libFuzzer's features)");
    let crashed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.crashed)
        .map(|o| o.target.as_str())
        .collect();
    if !crashed.is_empty() {
        bail!(
            "fuzz targets crashed: {} (inputs in fuzz/artifacts/)",
            crashed.join(", ")
        );
    }
    Ok(())
}

/// `cargo fuzz` under the pinned nightly, in `fuzz/`.
fn cargo_fuzz(dir: &Path, toolchain: &str) -> Command {
    let mut cmd = Command::new("rustup");
    cmd.args(["run", toolchain, "cargo", "fuzz"])
        .current_dir(dir)
        .env("AYA_BUILD_SKIP", "1");
    cmd
}

fn install_cargo_fuzz() -> anyhow::Result<()> {
    let version = Command::new("cargo-fuzz").arg("--version").output();
    if let Ok(out) = version
        && String::from_utf8_lossy(&out.stdout).contains(CARGO_FUZZ_VERSION)
    {
        return Ok(());
    }
    eprintln!("fuzz: installing cargo-fuzz {CARGO_FUZZ_VERSION}");
    super::run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())).args([
            "install",
            "cargo-fuzz",
            "--locked",
            "--version",
            CARGO_FUZZ_VERSION,
        ]),
    )
}

fn list(dir: &Path, toolchain: &str) -> anyhow::Result<Vec<String>> {
    let out = cargo_fuzz(dir, toolchain)
        .arg("list")
        .output()
        .context("cannot run cargo fuzz list")?;
    if !out.status.success() {
        bail!(
            "cargo fuzz list failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

/// Runs `target` for `seconds`: new inputs go to a working corpus under
/// `fuzz/target/` (kept between runs, never committed), read together with
/// the committed seeds.
fn run_one(dir: &Path, toolchain: &str, target: &str, seconds: u64) -> anyhow::Result<Outcome> {
    let working = dir.join("target/corpus").join(target);
    let seeds = dir.join("corpus").join(target);
    std::fs::create_dir_all(&working).with_context(|| format!("creating {working:?}"))?;
    std::fs::create_dir_all(&seeds).with_context(|| format!("creating {seeds:?}"))?;
    let mut cmd = cargo_fuzz(dir, toolchain);
    cmd.args(["run", RELEASE, target])
        .arg(&working)
        .arg(&seeds)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .args(["-timeout=20", "-print_final_stats=1"]);
    if let Some((_, dict)) = DICTIONARIES.iter().find(|(t, _)| *t == target) {
        cmd.arg(format!("-dict={}", dir.join("dict").join(dict).display()));
    }
    eprintln!("fuzz: {target} for {seconds} s");
    let out = cmd
        .output()
        .with_context(|| format!("cannot run cargo fuzz run {target}"))?;
    let log = String::from_utf8_lossy(&out.stderr);
    let crashed = !out.status.success();
    if crashed {
        // What broke (a panic's message, a sanitizer's report) with the
        // top of its stack, then the input and where it was saved.
        let lines: Vec<&str> = log.lines().collect();
        let start = lines
            .iter()
            .position(|l| l.contains("panicked at") || l.contains("ERROR:"))
            .unwrap_or(lines.len().saturating_sub(40));
        for line in lines.iter().skip(start).take(30) {
            eprintln!("{line}");
        }
        eprintln!("...");
        for line in lines
            .iter()
            .skip(lines.len().saturating_sub(6).max(start + 30))
        {
            eprintln!("{line}");
        }
    }
    Ok(Outcome {
        target: target.to_owned(),
        executions: stat(&log, "stat::number_of_executed_units:"),
        coverage: coverage(&log),
        crashed,
    })
}

/// A `-print_final_stats` figure.
fn stat(log: &str, name: &str) -> Option<u64> {
    log.lines()
        .rev()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().parse().ok())
}

/// `cov` and `ft` of libFuzzer's last status line (`#N DONE cov: C ft: F`).
fn coverage(log: &str) -> Option<(u64, u64)> {
    let line = log.lines().rev().find(|l| l.contains(" cov: "))?;
    let field = |name: &str| {
        let rest = &line[line.find(name)? + name.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    Some((field(" cov: ")?, field(" ft: ")?))
}
