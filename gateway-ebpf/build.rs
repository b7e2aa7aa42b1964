//! Rebuild the programs when bpf-linker changes: cargo does not track the
//! linker, and a stale object would hide a toolchain upgrade.
fn main() {
    match which::which("bpf-linker") {
        Ok(path) => println!("cargo:rerun-if-changed={}", path.display()),
        Err(err) => println!("cargo:warning=bpf-linker not found: {err}; run `cargo xtask setup`"),
    }
}
