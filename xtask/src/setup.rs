//! Installs what building and testing need on a fresh Debian machine, as
//! root and without prompts; each step checks first, so a second run is quick.

use std::process::Command;

use anyhow::{Context as _, bail};

/// Debian packages: LLVM for bpf-linker, bpftool for inspection, the
/// tools the end-to-end tests run inside sandboxes, and the validators of
/// deploy/ (systemd-analyze; python3-venv for the Kubernetes validator).
const PACKAGES: &[&str] = &[
    "llvm-22-dev",
    "libpolly-22-dev",
    "libzstd-dev",
    "zlib1g-dev",
    "bpftool",
    "iproute2",
    "util-linux",
    "curl",
    "dnsutils",
    "python3",
    "python3-venv",
    "systemd",
];

/// Where the Kubernetes manifest validator lives (a Python venv), outside
/// the work tree so a fresh clone reuses it; tests look here.
pub const TOOLS_VENV: &str = "/opt/sluice-dev/venv";
/// Validates manifests offline: it bundles the Kubernetes JSON schemas.
const KUBERNETES_VALIDATE: &str = "kubernetes-validate==1.37.0";

/// The bpf-linker release this project is verified with, built against LLVM 22.
const BPF_LINKER_VERSION: &str = "0.13.0";
pub const LLVM_PREFIX: &str = "/usr/lib/llvm-22";

pub fn run() -> anyhow::Result<()> {
    apt_packages()?;
    nightly_rust_src()?;
    bpf_linker()?;
    manifest_validator()
}

/// A venv holding kubernetes-validate, for the deploy/ tests.
fn manifest_validator() -> anyhow::Result<()> {
    let venv = std::path::Path::new(TOOLS_VENV);
    let bin = venv.join("bin/kubernetes-validate");
    let current = Command::new(&bin).arg("--version").output();
    if let Ok(out) = current
        && out.status.success()
        && let version = String::from_utf8_lossy(&out.stdout)
        && KUBERNETES_VALIDATE.ends_with(&format!("=={}", version.trim()))
    {
        return Ok(());
    }
    eprintln!("setup: installing {KUBERNETES_VALIDATE} into {TOOLS_VENV}");
    super::run(Command::new("python3").args(["-m", "venv"]).arg(venv))?;
    super::run(Command::new(venv.join("bin/pip")).args(["install", "--quiet", KUBERNETES_VALIDATE]))
}

fn apt_packages() -> anyhow::Result<()> {
    let missing: Vec<&str> = PACKAGES.iter().copied().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("setup: installing {}", missing.join(" "));
    super::run(Command::new("apt-get").arg("update").arg("-qq"))?;
    super::run(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

fn installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

/// The nightly that compiles the eBPF programs (`-Z build-std=core`),
/// pinned in `gateway-ebpf/toolchain` (gateway's build script reads the
/// same file): its LLVM must be the one bpf-linker is built against, and
/// the plain `nightly` channel moved on to LLVM 23, whose bitcode
/// bpf-linker's LLVM 22 refuses ("Invalid record").
pub const EBPF_TOOLCHAIN: &str = include_str!("../../gateway-ebpf/toolchain");

fn nightly_rust_src() -> anyhow::Result<()> {
    let toolchain = EBPF_TOOLCHAIN.trim();
    let has_src = Command::new("rustup")
        .args(["component", "list", "--installed", "--toolchain", toolchain])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("rust-src"))
        .unwrap_or(false);
    if has_src {
        return Ok(());
    }
    eprintln!("setup: installing {toolchain} with rust-src");
    super::run(Command::new("rustup").args([
        "toolchain",
        "install",
        toolchain,
        "--profile",
        "minimal",
        "--component",
        "rust-src",
    ]))
}

fn bpf_linker() -> anyhow::Result<()> {
    let version = Command::new("bpf-linker").arg("--version").output();
    if let Ok(out) = version
        && String::from_utf8_lossy(&out.stdout).contains(BPF_LINKER_VERSION)
    {
        return Ok(());
    }
    eprintln!("setup: building bpf-linker {BPF_LINKER_VERSION} against LLVM 22 (a few minutes)");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args([
            "install",
            "bpf-linker",
            "--version",
            BPF_LINKER_VERSION,
            "--no-default-features",
            "--features",
            "llvm-22",
        ])
        // bpf-linker 0.13 finds LLVM through LLVM_PREFIX; llvm-sys through its own variable.
        .env("LLVM_PREFIX", LLVM_PREFIX)
        .env("LLVM_SYS_221_PREFIX", LLVM_PREFIX)
        .status()
        .context("cannot run cargo install")?;
    if !status.success() {
        bail!("building bpf-linker failed ({status}); is llvm-22-dev installed?");
    }
    Ok(())
}
