//! Profile-guided release builds. The content stages are most of the CPU a
//! gateway spends on a request, and they are branchy code over text: told
//! which branches a realistic workload takes and which code is hot, the
//! compiler lays the scan out so that both stages read 1 KiB chat bodies
//! ~9% faster (best of rounds on a Zen 4 VM, 2026-12-06).
//!
//! [`profile`] builds the trainer (`bench/examples/train.rs`, which links
//! the scanners' crate `sluice-scan` and the daemon's library, and runs the
//! content stages over generated bodies, none of them the benchmark's) with
//! instrumentation, runs it and merges what it counted into
//! `target/pgo/scan.profdata`; [`rustflags`] build with it. Only the functions the trainer ran get a profile: the proxy,
//! TLS and everything else it never runs compile as without one (a
//! function profiled as never run would be laid out as cold; the bench
//! harness's `sluice-full` target measured no slower). The profile is made
//! again whenever the trainer, and so the code it runs, changed: it never
//! goes stale, and [`check`] fails a build it would not reach.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

use super::setup::LLVM_PREFIX;

/// Where the profile and the instrumented build live, under the workspace.
const DIR: &str = "target/pgo";

/// The instrumented trainer, as [`profile`] builds it.
fn trainer() -> PathBuf {
    super::workspace()
        .join(DIR)
        .join("instrumented/release/examples/train")
}

/// Builds and runs the trainer; returns the merged profile's path, or
/// `None` (with a warning) where no `llvm-profdata` reads rustc's profiles.
pub fn profile() -> anyhow::Result<Option<PathBuf>> {
    let dir = super::workspace().join(DIR);
    let Some(profdata) = llvm_profdata()? else {
        return Ok(None);
    };
    // The caller's flags too, so the trainer's code is the daemon's.
    // Build scripts run instrumented as well: their counts go elsewhere.
    let generate = format!("-Cprofile-generate={}", dir.join("build-scripts").display());
    super::run(
        super::cargo()
            .args(["build", "--release", "--package", "sluice-scan-bench"])
            .args(["--example", "train", "--target-dir"])
            .arg(dir.join("instrumented"))
            .env("RUSTFLAGS", super::rustflags_with(Some(&generate))),
    )?;
    // Rustc lists the profile among each crate's inputs: a new one rebuilds
    // every crate. So it is made again only when the trainer, and so the
    // code it runs, changed.
    let trainer = trainer();
    let out = dir.join("scan.profdata");
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    if let (Some(made), Some(built)) = (modified(&out), modified(&trainer))
        && made > built
    {
        return Ok(Some(out));
    }
    let raw = dir.join("raw");
    if raw.exists() {
        std::fs::remove_dir_all(&raw).with_context(|| format!("cannot clear {}", raw.display()))?;
    }
    super::run(Command::new(&trainer).env("LLVM_PROFILE_FILE", raw.join("train-%p.profraw")))?;
    // Sparse: no record for what the trainer never ran (the proxy code
    // it links but does not call), which a record of zeros would mark
    // cold; without one it is compiled as in a build without a profile.
    super::run(
        Command::new(profdata)
            .args(["merge", "--sparse", "--output"])
            .arg(&out)
            .arg(&raw),
    )?;
    Ok(Some(out))
}

/// A function of the scanners' crate (`sluice-scan`, the injection gate's
/// AVX-512 sieve) the trainer runs: its symbol in the trainer and in the
/// daemon must be the same for the profile to reach the daemon. The hash
/// in it is of the crate's `-C metadata`, which a change of the crate's
/// dependencies' features changes.
const PROBE: &[u8] = b"_ZN11sluice_scan9injection4gate3x865sieve17h";

/// Fails unless `daemon` links the library the profile was made on: the
/// same crate to the compiler, which a change of dependency features
/// between the trainer's build and the daemon's would quietly break (the
/// build would succeed, without the profile).
pub fn check(daemon: &Path) -> anyhow::Result<()> {
    let symbols = |path: &Path| -> anyhow::Result<Vec<Vec<u8>>> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        Ok(probes_in(&bytes))
    };
    let probes = symbols(&trainer())?;
    if probes.is_empty() {
        bail!(
            "the trainer has no symbol {}: update pgo::PROBE to a function it runs",
            String::from_utf8_lossy(PROBE)
        );
    }
    if symbols(daemon)? != probes {
        bail!(
            "{} is not built from the library the profile was made on (its dependencies' \
             features differ from the trainer's build): the profile did not apply",
            daemon.display()
        );
    }
    Ok(())
}

/// The flags of a build that uses `profile` (an absolute path: cargo runs
/// rustc from each package's directory).
pub fn rustflags(profile: &Path) -> String {
    format!("-Cprofile-use={}", profile.display())
}

/// Every symbol of [`PROBE`] in a binary, in the legacy mangling: the
/// prefix, sixteen hex digits of a hash of the crate and the item, then `E`.
fn probes_in(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut found: Vec<Vec<u8>> = bytes
        .windows(PROBE.len() + 17)
        .filter(|w| w.starts_with(PROBE) && w.ends_with(b"E"))
        .map(<[u8]>::to_vec)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The major version of rustc's LLVM, from `rustc -vV`.
fn llvm_major(rustc_verbose: &str) -> Option<&str> {
    rustc_verbose
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .and_then(|v| v.split('.').next())
}

/// The `llvm-profdata` of rustc's LLVM: a profile is read by the LLVM that
/// wrote its format, so the tool must be of the same major version as
/// rustc's. The toolchain's own (rustup's `llvm-tools`) where installed,
/// else LLVM 22's, which `cargo xtask setup` installs and rustc 1.9x uses.
/// With neither, the build goes on without a profile, saying so: the scan
/// is then ~9% slower than the README's figures.
fn llvm_profdata() -> anyhow::Result<Option<PathBuf>> {
    let rustc = |arg: &str| -> anyhow::Result<String> {
        let out = Command::new("rustc")
            .arg(arg)
            .output()
            .with_context(|| format!("cannot run rustc {arg}"))?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let verbose = rustc("-vV")?;
    let major = llvm_major(&verbose).context("rustc -vV names no LLVM version")?;
    let host = verbose
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .context("rustc -vV names no host")?;
    let toolchain = PathBuf::from(rustc("--print=sysroot")?)
        .join("lib/rustlib")
        .join(host)
        .join("bin/llvm-profdata");
    let candidates = [toolchain, Path::new(LLVM_PREFIX).join("bin/llvm-profdata")];
    for tool in &candidates {
        let Ok(out) = Command::new(tool).arg("--version").output() else {
            continue;
        };
        if String::from_utf8_lossy(&out.stdout).contains(&format!("LLVM version {major}.")) {
            return Ok(Some(tool.clone()));
        }
    }
    eprintln!(
        "warning: no llvm-profdata of LLVM {major} (rustc's) among {candidates:?}: building \
         without the content stages' profile (rustup component add llvm-tools provides one)"
    );
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_llvm_major_version_is_read_from_rustc() {
        let verbose = "rustc 1.95.0 (59807616e 2026-04-14)\nhost: x86_64-unknown-linux-gnu\nLLVM version: 22.1.2\n";
        assert_eq!(llvm_major(verbose), Some("22"));
        assert_eq!(llvm_major("rustc 1.95.0\n"), None);
    }

    #[test]
    fn probes_are_the_whole_symbols_each_once() {
        let a = [PROBE, b"0123456789abcdefE"].concat();
        let b = [PROBE, b"fedcba9876543210E"].concat();
        // A truncated one, and one with a longer tail, are not symbols.
        let bytes = [
            &a[..],
            b"\0",
            &b,
            b"\0",
            &a,
            b"\0",
            PROBE,
            b"0123E\0",
            PROBE,
            b"0123456789abcdef0E",
        ]
        .concat();
        assert_eq!(probes_in(&bytes), vec![a, b]);
    }
}
