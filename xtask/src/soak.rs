//! `cargo xtask soak [--minutes N]`: the soak with faults
//! (`tests/tests/soak.rs`, docs/soak.md) against the release daemon, for
//! as long as asked. The driver is an ordinary end-to-end test; this only
//! builds the daemon and gives the test its duration.

use std::path::PathBuf;

use crate::{cargo, release_build, run, rustflags_with, workspace};

/// Where cargo puts what it builds: `$CARGO_TARGET_DIR`, else `target/`.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace().join("target"), PathBuf::from)
}

pub fn run_soak(minutes: f64) -> anyhow::Result<()> {
    // Release, as deployed, but the daemon alone: without the profile
    // (which takes a benchmark run to make) and without the scan benchmark
    // crate `cargo xtask test` builds beside it, neither of which a soak's
    // figures depend on.
    release_build(&["sluice"], &rustflags_with(None))?;
    let mut cmd = cargo();
    cmd.args([
        "test",
        "--release",
        "--package",
        "sluice-e2e",
        "--test",
        "soak",
        "--",
        "--nocapture",
    ])
    .env("SLUICE_BIN", target_dir().join("release/sluice"))
    .env("SLUICE_SOAK_MINUTES", minutes.to_string());
    run(&mut cmd)
}
