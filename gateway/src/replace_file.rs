//! Replacing a file of the daemon's state whole: the bytes go to a temp
//! file of their own beside it (created with `mode`, synced), which is
//! renamed over the name, and the directory is synced, so a crash leaves
//! the old contents or the new, never half. Each write has its own temp
//! file: two writes sharing one wrote into each other's and the second
//! rename found none. Which of two concurrent writes lands last is the
//! caller's to order.

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
