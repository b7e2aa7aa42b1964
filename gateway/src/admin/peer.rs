//! The peer guard: decides whether the process at the other end of an admin
//! socket connection may use the API.
//!
//! The socket file is 0600 root, but a root process inside a sandbox may still
//! see it (a shared mount, a leaked path). So the guard also refuses any peer
//! whose cgroup2 path lies in the sandbox root's subtree, and fails closed when
//! it cannot tell where the peer lives.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::sys::socket::{getsockopt, sockopt};
use tokio::net::UnixStream;

/// Who may use the admin API: root, outside the sandbox cgroup subtree.
#[derive(Debug, Clone)]
pub struct PeerGuard {
    /// Cgroup2 path of the sandbox root relative to the cgroup2 mount, always
    /// absolute and without `.`/`..` (see [`normalize_root`]).
    sandbox_root: PathBuf,
    /// Root in production; tests running unprivileged substitute their own uid.
    required_uid: u32,
}

/// Why a peer was refused.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("cannot read the peer's credentials (SO_PEERCRED): {0}")]
    Credentials(io::Error),
    #[error("peer uid {uid} (pid {pid:?}) is not root")]
    NotRoot { uid: u32, pid: Option<i32> },
    #[error("peer pid is not visible from the daemon's pid namespace")]
    NoPid,
    #[error("cannot get a pidfd for peer pid {pid} (SO_PEERPIDFD): {source}")]
    Pidfd { pid: i32, source: Errno },
    #[error("cannot read /proc/{pid}/cgroup: {source}")]
    ReadCgroup { pid: i32, source: io::Error },
    #[error("/proc/{pid}/cgroup has no cgroup2 (`0::`) line")]
    NoCgroup2 { pid: i32 },
    #[error("peer pid {pid} exited while it was being checked")]
    Exited { pid: i32 },
    #[error("peer pid {pid} is in cgroup {cgroup:?}, which is not a plain absolute path")]
    UnclearCgroup { pid: i32, cgroup: String },
    #[error("peer pid {pid} is in cgroup {cgroup}, inside the sandbox root {}", root.display())]
    InSandbox {
        pid: i32,
        cgroup: String,
        root: PathBuf,
    },
}

/// Where a cgroup path lies relative to the sandbox root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    Outside,
    /// The root itself or any descendant.
    Inside,
    /// Relative or containing `.`/`..`: the kernel prints `/../x` for cgroups
    /// outside the reader's cgroup namespace, and such a path cannot be
    /// compared with the root, so the caller must refuse it.
    Unclear,
}

impl PeerGuard {
    /// `sandbox_root_rel` is the sandbox root's cgroup path relative to the
    /// cgroup2 mount, e.g. `/sluice`: the path /proc/PID/cgroup shows, since
    /// the daemon only runs on a mount of the whole hierarchy
    /// ([`crate::cgroup::parse_mountinfo`]). A relative path is taken from the mount
    /// root; one containing `..` becomes `/`, which refuses every peer, since
    /// guessing what it meant could open the API to sandboxes.
    pub fn new(sandbox_root_rel: PathBuf) -> PeerGuard {
        let sandbox_root = normalize_root(&sandbox_root_rel).unwrap_or_else(|| {
            tracing::warn!(
                root = %sandbox_root_rel.display(),
                "admin API: sandbox root contains `..`; refusing every peer"
            );
            PathBuf::from("/")
        });
        PeerGuard {
            sandbox_root,
            required_uid: 0,
        }
    }

    /// The normalized sandbox root this guard compares against.
    pub fn sandbox_root(&self) -> &Path {
        &self.sandbox_root
    }

    /// Lets unprivileged tests talk to their own server.
    #[cfg(test)]
    pub(crate) fn with_required_uid(mut self, uid: u32) -> PeerGuard {
        self.required_uid = uid;
        self
    }

    /// Checks the peer of an accepted connection. Reads procfs (memory only,
    /// no disk), so it is cheap enough to call from an async task.
    pub fn check(&self, stream: &UnixStream) -> Result<(), PeerError> {
        let cred = stream.peer_cred().map_err(PeerError::Credentials)?;
        if cred.uid() != self.required_uid {
            return Err(PeerError::NotRoot {
                uid: cred.uid(),
                pid: cred.pid(),
            });
        }
        // Pid 0: the peer lives in a pid namespace we cannot see into.
        let pid = cred.pid().filter(|pid| *pid > 0).ok_or(PeerError::NoPid)?;

        // SO_PEERCRED's pid is a number taken at connect(); the peer may have
        // exited and the number gone to another process since. A pidfd pins the
        // connecting process: if it is still alive after we read its cgroup,
        // the file we read was its own.
        let pidfd = peer_pidfd(stream, pid)?;
        let contents = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .map_err(|source| PeerError::ReadCgroup { pid, source })?;
        if pidfd.as_ref().is_some_and(|fd| pidfd_pid(fd) != Some(pid)) {
            return Err(PeerError::Exited { pid });
        }

        let cgroup = parse_cgroup2(&contents).ok_or(PeerError::NoCgroup2 { pid })?;
        match placement(cgroup, &self.sandbox_root) {
            Placement::Outside => Ok(()),
            Placement::Inside => Err(PeerError::InSandbox {
                pid,
                cgroup: cgroup.to_owned(),
                root: self.sandbox_root.clone(),
            }),
            Placement::Unclear => Err(PeerError::UnclearCgroup {
                pid,
                cgroup: cgroup.to_owned(),
            }),
        }
    }
}

/// The peer's pidfd, or `None` on kernels before 6.5 that lack SO_PEERPIDFD;
/// there the check falls back to the bare pid.
fn peer_pidfd(stream: &UnixStream, pid: i32) -> Result<Option<OwnedFd>, PeerError> {
    match getsockopt(stream, sockopt::PeerPidfd) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::ENOPROTOOPT) => Ok(None),
        Err(source) => Err(PeerError::Pidfd { pid, source }),
    }
}

/// The pid a pidfd refers to in our pid namespace; `None` once the process
/// has exited (the kernel then reports -1) or when it cannot be read.
fn pidfd_pid(fd: &OwnedFd) -> Option<i32> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
    parse_fdinfo_pid(&info).filter(|pid| *pid > 0)
}

/// The `Pid:` field of a pidfd's fdinfo.
fn parse_fdinfo_pid(info: &str) -> Option<i32> {
    info.lines()
        .find_map(|line| line.strip_prefix("Pid:"))
        .and_then(|rest| rest.trim().parse().ok())
}

/// The cgroup2 path from `/proc/<pid>/cgroup`: the `0::<path>` line. Paths may
/// contain `:`, so only the first two separators split.
pub(crate) fn parse_cgroup2(contents: &str) -> Option<&str> {
    contents.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("0"), Some(""), Some(path)) => Some(path),
            _ => None,
        }
    })
}

/// Where `cgroup` (as printed in `/proc/<pid>/cgroup`) lies relative to `root`
/// (normalized). Component-wise, so `/sluice-other` is not under `/sluice`.
pub(crate) fn placement(cgroup: &str, root: &Path) -> Placement {
    // A removed cgroup's path is printed with this suffix; its processes
    // are still where they were.
    let cgroup = cgroup.strip_suffix(" (deleted)").unwrap_or(cgroup);
    if !cgroup.starts_with('/')
        || cgroup
            .split('/')
            .any(|component| component == "." || component == "..")
    {
        return Placement::Unclear;
    }
    if Path::new(cgroup).starts_with(root) {
        Placement::Inside
    } else {
        Placement::Outside
    }
}

/// Makes `root` absolute and drops `.`; `None` if it contains `..`.
pub(crate) fn normalize_root(root: &Path) -> Option<PathBuf> {
    let mut normalized = PathBuf::from("/");
    for component in root.components() {
        match component {
            Component::Normal(name) => normalized.push(name),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(normalized)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_table() {
        let cases = [
            ("/sluice", "/sluice", Placement::Inside),
            ("/sluice/sb1", "/sluice", Placement::Inside),
            ("/sluice/sb1/session-a/deeper", "/sluice", Placement::Inside),
            ("/sluice/", "/sluice", Placement::Inside),
            ("/sluice/sb1 (deleted)", "/sluice", Placement::Inside),
            ("/sluice-other", "/sluice", Placement::Outside),
            ("/sluicex/sb1", "/sluice", Placement::Outside),
            ("/", "/sluice", Placement::Outside),
            (
                "/system.slice/sluice.service",
                "/sluice",
                Placement::Outside,
            ),
            ("/a/sluice", "/sluice", Placement::Outside),
            (
                "/kubepods/sluice/sb1",
                "/kubepods/sluice",
                Placement::Inside,
            ),
            ("/kubepods", "/kubepods/sluice", Placement::Outside),
            ("/", "/", Placement::Inside),
            ("/anything", "/", Placement::Inside),
            ("/../../sluice/sb1", "/sluice", Placement::Unclear),
            ("/sluice/../x", "/sluice", Placement::Unclear),
            ("/./sluice", "/sluice", Placement::Unclear),
            ("sluice/sb1", "/sluice", Placement::Unclear),
            ("", "/sluice", Placement::Unclear),
        ];
        for (cgroup, root, want) in cases {
            assert_eq!(
                placement(cgroup, Path::new(root)),
                want,
                "cgroup {cgroup:?} root {root:?}"
            );
        }
    }

    #[test]
    fn normalize_root_table() {
        let cases = [
            ("/sluice", Some("/sluice")),
            ("sluice", Some("/sluice")),
            ("/sluice/", Some("/sluice")),
            ("./sluice/./x", Some("/sluice/x")),
            ("", Some("/")),
            ("/", Some("/")),
            ("/sluice/../etc", None),
            ("..", None),
        ];
        for (root, want) in cases {
            assert_eq!(
                normalize_root(Path::new(root)),
                want.map(PathBuf::from),
                "root {root:?}"
            );
        }
    }

    #[test]
    fn guard_new_fails_closed_on_dotdot() {
        assert_eq!(
            PeerGuard::new(PathBuf::from("/a/../b")).sandbox_root(),
            Path::new("/")
        );
        assert_eq!(
            PeerGuard::new(PathBuf::from("sluice")).sandbox_root(),
            Path::new("/sluice")
        );
    }

    #[test]
    fn parse_cgroup2_table() {
        let hybrid = "9:name=systemd:/\n4:memory:/x\n1:cpu:/\n0::/sluice/sb1\n";
        let cases = [
            (hybrid, Some("/sluice/sb1")),
            ("0::/\n", Some("/")),
            ("0::/a:b/c\n", Some("/a:b/c")),
            ("0::/x (deleted)", Some("/x (deleted)")),
            ("1:cpu:/\n", None),
            ("0:cpu:/x\n", None),
            ("", None),
            ("garbage", None),
        ];
        for (contents, want) in cases {
            assert_eq!(parse_cgroup2(contents), want, "contents {contents:?}");
        }
    }

    #[test]
    fn parse_fdinfo_pid_table() {
        let cases = [
            (
                "pos:\t0\nflags:\t02000002\nPid:\t9695\nNSpid:\t9695\n",
                Some(9695),
            ),
            ("Pid:\t-1\nNSpid:\t-1\n", Some(-1)),
            ("pos:\t0\n", None),
            ("Pid:\tx\n", None),
        ];
        for (info, want) in cases {
            assert_eq!(parse_fdinfo_pid(info), want, "info {info:?}");
        }
    }
}
