//! What loading and attaching the steering's eBPF object can fail with,
//! and the small helpers both of its users share (`ebpf`, the programs
//! that steer; `relay`, the kernel relay): taking a map out of the
//! object, naming a map's error, locking a shared map handle.

use std::{path::PathBuf, sync::Mutex};

use aya::{Ebpf, programs::ProgramError};

#[derive(Debug, thiserror::Error)]
pub enum SteerError {
    #[error(
        "this binary was built without its eBPF programs (AYA_BUILD_SKIP); rebuild with `cargo xtask build`"
    )]
    NoObject,
    #[error("bpffs: {0}")]
    Bpffs(String),
    #[error("loading the eBPF object: {0}")]
    Load(#[from] aya::EbpfError),
    #[error("program {name}: {source}")]
    Program {
        name: &'static str,
        source: ProgramError,
    },
    #[error("pinning {path}: {message}")]
    Pin { path: PathBuf, message: String },
    #[error("map {name}: {message}")]
    Map { name: &'static str, message: String },
    #[error("cannot open cgroup {path}: {source}")]
    Cgroup {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub(super) fn take<T>(ebpf: &mut Ebpf, name: &'static str) -> Result<T, SteerError>
where
    T: TryFrom<aya::maps::Map, Error = aya::maps::MapError>,
{
    let map = ebpf.take_map(name).ok_or(SteerError::Map {
        name,
        message: "missing from the eBPF object".to_owned(),
    })?;
    T::try_from(map).map_err(|e| map_err(name, e))
}

pub(super) fn map_err(name: &'static str, err: aya::maps::MapError) -> SteerError {
    SteerError::Map {
        name,
        message: err.to_string(),
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding a map handle leaves the map itself consistent.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
