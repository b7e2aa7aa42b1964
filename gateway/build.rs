//! Builds the eBPF programs (`gateway-ebpf`) for the bpf target and leaves the
//! object in OUT_DIR, where `steer::ebpf` embeds it. `AYA_BUILD_SKIP=1` skips
//! that step (for `cargo check`/`clippy` on a machine without bpf-linker):
//! the daemon then builds, but `sluice run` says the programs are missing.
//! The programs are compiled with the nightly named in
//! `gateway-ebpf/toolchain` (`cargo xtask setup` installs it), whose LLVM
//! matches bpf-linker's.
use std::{env, fs, path::PathBuf};

use anyhow::Context as _;

fn main() -> anyhow::Result<()> {
    let out = PathBuf::from(env::var_os("OUT_DIR").context("OUT_DIR not set")?);
    let object = out.join("sluice-ebpf");
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").context("no manifest dir")?)
        .join("../gateway-ebpf");
    let root = root.to_str().context("non-UTF-8 path")?;
    let toolchain_file = format!("{root}/toolchain");
    println!("cargo:rerun-if-changed={toolchain_file}");
    let toolchain =
        fs::read_to_string(&toolchain_file).context("reading gateway-ebpf/toolchain")?;
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "gateway-ebpf",
            root_dir: root,
            ..Default::default()
        }],
        aya_build::Toolchain::Custom(toolchain.trim()),
    )?;
    if !object.exists() {
        // Skipped build: an empty object keeps `include_bytes!` compiling.
        fs::write(&object, b"").context("writing placeholder eBPF object")?;
    }
    Ok(())
}
