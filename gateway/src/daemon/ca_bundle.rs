//! Writing a sandbox's CA bundle into a file system the sandbox controls.
//!
//! The bundle's path usually lies inside the sandbox's root file system
//! (`ROOTFS/etc/ssl/sluice.pem`), and the daemon writes it as root, again
//! at every restart. Any component of that path may be a symbolic link the
//! sandbox planted: followed, it would have the daemon create or truncate
//! a file anywhere on the host (`etc/ssl -> /etc`, or a link at the temp
//! name pointing at `/etc/shadow`). So the path is walked a component at a
//! time from `/` with `O_NOFOLLOW`, missing directories are made on the
//! way, and the file is written through the last directory's descriptor:
//! a link anywhere is an error naming it, and swapping a component after
//! it was opened changes nothing. Operators give the resolved path.

use std::ffi::OsStr;
use std::io::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, OFlag, openat, renameat};
use nix::sys::stat::{Mode, fchmod, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};

/// Why a bundle could not be written.
#[derive(Debug, thiserror::Error)]
pub(super) enum BundleError {
    #[error("the path must be absolute")]
    Relative,
    #[error("the path must name a file, with no `.` or `..` component")]
    NotAFile,
    #[error("{0} is a symbolic link or not a directory; give the resolved path")]
    Link(String),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

/// Writes `bytes` to `path` (mode 0644), creating missing directories
/// (0755), following no symbolic link on the way. Atomic: the bytes go to
/// a fresh temp file in the same directory, renamed over the name.
pub(super) fn write(path: &Path, bytes: &[u8]) -> Result<(), BundleError> {
    if !path.is_absolute() {
        return Err(BundleError::Relative);
    }
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(name) => parts.push(name),
            _ => return Err(BundleError::NotAFile),
        }
    }
    let file = parts.pop().ok_or(BundleError::NotAFile)?;
    let io = |at: &Path, err: Errno| BundleError::Io(at.display().to_string(), err.into());

    let mut dir = open_dir(AT_FDCWD, OsStr::new("/")).map_err(|e| io(Path::new("/"), e))?;
    let mut walked = Path::new("/").to_path_buf();
    for name in parts {
        walked.push(name);
        dir = match open_dir(&dir, name) {
            Ok(next) => next,
            Err(Errno::ENOENT) => {
                match mkdirat(&dir, name, Mode::from_bits_truncate(0o755)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(io(&walked, e)),
                }
                open_dir(&dir, name).map_err(|e| refused(&walked, e))?
            }
            Err(e) => return Err(refused(&walked, e)),
        };
    }

    // A name of our own, created exclusively: a link planted at a fixed
    // temp name would otherwise be written through.
    let tmp = format!(
        ".{}.sluice-{:016x}",
        file.to_string_lossy(),
        rand::random::<u64>()
    );
    let fd = openat(
        &dir,
        tmp.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o644),
    )
    .map_err(|e| io(&walked.join(&tmp), e))?;
    let written = (|| -> std::io::Result<()> {
        // The umask may have narrowed the mode; the bundle holds no secret.
        fchmod(&fd, Mode::from_bits_truncate(0o644))?;
        let mut out = std::fs::File::from(fd);
        out.write_all(bytes)?;
        out.sync_all()?;
        // A link at the final name is replaced, never followed.
        Ok(renameat(&dir, tmp.as_str(), &dir, file)?)
    })();
    written.map_err(|err| {
        let _ = unlinkat(&dir, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
        BundleError::Io(path.display().to_string(), err)
    })
}

fn open_dir<Fd: AsFd>(at: Fd, name: &OsStr) -> Result<OwnedFd, Errno> {
    openat(
        at,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// A component that could not be opened as a directory: with
/// `O_NOFOLLOW | O_DIRECTORY` a link gives ELOOP or ENOTDIR.
fn refused(at: &Path, err: Errno) -> BundleError {
    match err {
        Errno::ELOOP | Errno::ENOTDIR => BundleError::Link(at.display().to_string()),
        other => BundleError::Io(at.display().to_string(), other.into()),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt as _, symlink};

    use super::*;

    #[test]
    fn writes_the_file_and_makes_missing_directories() {
        let root = tempfile::tempdir().expect("tempdir");
        let path = root.path().join("rootfs/etc/ssl/sluice.pem");
        write(&path, b"one").expect("write");
        write(&path, b"two").expect("rewrite");
        assert_eq!(std::fs::read(&path).expect("read"), b"two");
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        // No temp file is left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, [OsStr::new("sluice.pem")]);
    }

    #[test]
    fn a_planted_link_is_never_followed() {
        let root = tempfile::tempdir().expect("tempdir");
        let outside = root.path().join("host");
        std::fs::create_dir(&outside).expect("mkdir");
        let shadow = outside.join("shadow");
        std::fs::write(&shadow, "root:secret").expect("write");
        let rootfs = root.path().join("rootfs");
        std::fs::create_dir_all(rootfs.join("etc")).expect("mkdir");

        // A directory component that is a link to the host's.
        symlink(&outside, rootfs.join("etc/ssl")).expect("link");
        let err = write(&rootfs.join("etc/ssl/shadow"), b"bundle").expect_err("a link");
        assert!(
            matches!(err, BundleError::Link(ref at) if at.ends_with("etc/ssl")),
            "{err}"
        );

        // The file itself a link: replaced, the target untouched.
        std::fs::remove_file(rootfs.join("etc/ssl")).expect("unlink");
        std::fs::create_dir(rootfs.join("etc/ssl")).expect("mkdir");
        symlink(&shadow, rootfs.join("etc/ssl/sluice.pem")).expect("link");
        write(&rootfs.join("etc/ssl/sluice.pem"), b"bundle").expect("write");
        assert_eq!(std::fs::read(&shadow).expect("read"), b"root:secret");
        let meta = std::fs::symlink_metadata(rootfs.join("etc/ssl/sluice.pem")).expect("stat");
        assert!(meta.file_type().is_file());
        assert_eq!(
            std::fs::read(rootfs.join("etc/ssl/sluice.pem")).expect("read"),
            b"bundle"
        );
    }

    #[test]
    fn relative_and_dotted_paths_are_refused() {
        assert!(matches!(
            write(Path::new("etc/x.pem"), b""),
            Err(BundleError::Relative)
        ));
        assert!(matches!(
            write(Path::new("/tmp/../etc/x.pem"), b""),
            Err(BundleError::NotAFile)
        ));
        assert!(matches!(
            write(Path::new("/"), b""),
            Err(BundleError::NotAFile)
        ));
    }
}
