//! Replacing a file of the daemon's state whole: the bytes go to a temp
//! file of their own beside it (created with `mode`, synced), which is
//! renamed over the name, and the directory is synced, so a crash leaves
//! the old contents or the new, never half. Each write has its own temp
//! file: two writes sharing one wrote into each other's and the second
//! rename found none. Which of two concurrent writes lands last is the
//! caller's to order. State kept as JSON goes through [`read_json`] and
//! [`write_json`].

use std::fs::{self, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// Replaces `dir/name` with `bytes`.
pub fn replace(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.{:016x}.tmp", rand::random::<u64>()));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, dir.join(name))
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written?;
    fs::File::open(dir)?.sync_all()
}

/// Reads `dir/name` as JSON; a missing file is `T::default()`. Errors name
/// the file.
pub fn read_json<T: serde::de::DeserializeOwned + Default>(
    dir: &Path,
    name: &str,
) -> io::Result<T> {
    let path = dir.join(name);
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
}

/// Writes `value` as JSON to `dir/name` whole or not at all ([`replace`]),
/// creating `dir` first.
pub fn write_json<T: serde::Serialize>(
    dir: &Path,
    name: &str,
    value: &T,
    mode: u32,
) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let text = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    replace(dir, name, &text, mode)
}
