//! `cargo xtask bench [--smoke] [--out DIR] [--idle-conns N,...]`: installs the peer proxies,
//! builds the release daemon and the harness, and runs the harness
//! (`bench/harness`, binary `sluice-bench`). A full run into the default
//! `bench/results` also copies the report into README.md's performance
//! section, between its `bench:begin` / `bench:end` markers.
//! `cargo xtask bench --scan` runs the content scanner's benchmark instead.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, bail};

/// Debian packages the peers need: Squid built with OpenSSL (ssl-bump),
/// nginx (the reference reverse proxy).
const PEER_PACKAGES: &[&str] = &["squid-openssl", "nginx", "python3-venv"];
/// Packaged services Debian starts on install; the bench runs its own.
const PEER_SERVICES: &[&str] = &["squid", "nginx"];
/// mitmproxy, and matplotlib for the chart, in a venv of their own.
const VENV: &str = "/opt/sluice-bench-venv";
const PIP_PACKAGES: &[&str] = &["mitmproxy", "matplotlib"];

const README_BEGIN: &str = "<!-- bench:begin -->";
const README_END: &str = "<!-- bench:end -->";

pub fn run(smoke: bool, out: Option<PathBuf>, idle_conns: Option<&str>) -> anyhow::Result<()> {
    install_peers()?;
    let root = super::workspace();
    // The daemon as it ships, and the harness with the same flags.
    let rustflags = super::release_daemon(true)?;
    super::release_build(&["sluice-bench"], &rustflags)?;
    let default_out = root.join("bench/results");
    let out = out.unwrap_or_else(|| {
        if smoke {
            root.join("target/bench-smoke")
        } else {
            default_out.clone()
        }
    });
    let mut command = String::from("cargo xtask bench");
    if smoke {
        command.push_str(" --smoke");
    }
    if let Some(counts) = idle_conns {
        command.push_str(&format!(" --idle-conns {counts}"));
    }
    let mut cmd = Command::new(root.join("target/release/sluice-bench"));
    cmd.arg("run")
        .arg("--out")
        .arg(&out)
        .arg("--command")
        .arg(&command)
        .env("SLUICE_BIN", root.join("target/release/sluice"))
        .current_dir(&root);
    if smoke {
        cmd.arg("--smoke");
    }
    if let Some(counts) = idle_conns {
        cmd.args(["--idle-conns", counts]);
    }
    super::run(&mut cmd)?;
    if !smoke && out == default_out {
        update_readme(&root.join("README.md"), &out.join("latest.md"))?;
    }
    Ok(())
}

/// `cargo xtask bench --scan [-- ARGS]`: the content scanner's criterion
/// benchmark (`bench/benches/scan.rs`), built with the release daemon's
/// flags (profile-guided), so its figures are the shipped code's.
pub fn scan(args: &[String]) -> anyhow::Result<()> {
    let mut cmd = super::cargo();
    cmd.args(["bench", "--package", "sluice-scan-bench", "--bench", "scan"])
        .env(
            "RUSTFLAGS",
            super::release_rustflags(super::pgo::profile()?.as_deref()),
        );
    if !args.is_empty() {
        cmd.arg("--").args(args);
    }
    super::run(&mut cmd)
}

/// Idempotent: checks before installing anything.
pub fn install_peers() -> anyhow::Result<()> {
    let missing: Vec<&str> = PEER_PACKAGES
        .iter()
        .copied()
        .filter(|p| !deb_installed(p))
        .collect();
    if !missing.is_empty() {
        eprintln!("bench setup: installing {}", missing.join(" "));
        super::run(Command::new("apt-get").arg("update").arg("-qq"))?;
        super::run(
            Command::new("apt-get")
                .args(["install", "-y", "-qq", "--no-install-recommends"])
                .args(&missing)
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )?;
        // Debian starts the packaged services; the bench runs its own.
        for service in PEER_SERVICES {
            let _ = Command::new("service").args([service, "stop"]).status();
        }
    }
    let venv = Path::new(VENV);
    let ready = venv.join("bin/mitmdump").is_file()
        && Command::new(venv.join("bin/python"))
            .args(["-c", "import matplotlib"])
            .status()
            .is_ok_and(|s| s.success());
    if !ready {
        eprintln!(
            "bench setup: installing {} into {VENV}",
            PIP_PACKAGES.join(" ")
        );
        super::run(Command::new("python3").args(["-m", "venv", VENV]))?;
        super::run(
            Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet"])
                .args(PIP_PACKAGES),
        )?;
    }
    Ok(())
}

fn deb_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

/// Replaces what lies between the README's markers with the report (its
/// title dropped: the README section has its own).
fn update_readme(readme: &Path, report: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(readme)?;
    let report = std::fs::read_to_string(report)?;
    let body: String = report
        .lines()
        .skip_while(|l| l.starts_with("# ") || l.is_empty())
        .map(|l| {
            // The report's sections become subsections of the README's.
            if l.starts_with("## ") {
                format!("#{l}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let (Some(begin), Some(end)) = (text.find(README_BEGIN), text.find(README_END)) else {
        bail!("README.md has no {README_BEGIN} … {README_END} section");
    };
    let updated = format!("{}{README_BEGIN}\n{body}{}", &text[..begin], &text[end..]);
    std::fs::write(readme, updated).with_context(|| format!("writing {}", readme.display()))?;
    eprintln!("updated the performance section of {}", readme.display());
    Ok(())
}
