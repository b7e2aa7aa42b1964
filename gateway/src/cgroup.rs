//! cgroup2 paths: finding the mount, resolving the sandbox root and the
//! cgroups registered under it, and their ids (what the eBPF programs see).
//!
//! The mount is read from /proc/self/mountinfo, never assumed: on hybrid
//! hosts cgroup2 lives at /sys/fs/cgroup/unified, elsewhere at /sys/fs/cgroup.

use std::{
    io,
    os::unix::fs::MetadataExt as _,
    path::{Component, Path, PathBuf},
};

#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error(
        "no cgroup2 filesystem is mounted (see /proc/self/mountinfo); mount one, e.g. `mount -t cgroup2 none /sys/fs/cgroup/unified`"
    )]
    NoMount,
    #[error(
        "cgroup2 is mounted at {mount} from the subtree {root}, not the whole hierarchy: the levels the eBPF programs count and the paths in /proc/PID/cgroup would not match the sandbox root; mount the whole cgroup2 hierarchy and run in the host's cgroup namespace"
    )]
    Subtree { mount: PathBuf, root: String },
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("cgroup {path} does not exist; create it (mkdir) before registering it")]
    Missing { path: PathBuf },
    #[error("cgroup {path} is not below the sandbox root {root}")]
    OutsideRoot { path: PathBuf, root: PathBuf },
    #[error("cgroup path {path} must not contain `..`")]
    Traversal { path: PathBuf },
}

/// Finds the cgroup2 mount point in mountinfo text (pure, for tests): the
/// first mount of the whole hierarchy (its root field `/`). A mount of a
/// subtree alone is an error: the sandbox root's path relative to it would
/// not be what /proc/PID/cgroup shows (so the admin API's peer guard could
/// not place a sandbox's process), nor its depth what the programs count.
pub fn parse_mountinfo(text: &str) -> Result<PathBuf, CgroupError> {
    let mut subtree = None;
    for line in text.lines() {
        // Fields: id parent major:minor root mountpoint options [optional...] - fstype source super
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        if right.split_whitespace().next() != Some("cgroup2") {
            continue;
        }
        let mut fields = left.split_whitespace().skip(3);
        let (Some(root), Some(mountpoint)) = (fields.next(), fields.next()) else {
            continue;
        };
        let mount = PathBuf::from(unescape_mountinfo(mountpoint));
        if root == "/" {
            return Ok(mount);
        }
        subtree.get_or_insert(CgroupError::Subtree {
            mount,
            root: unescape_mountinfo(root),
        });
    }
    Err(subtree.unwrap_or(CgroupError::NoMount))
}

/// mountinfo escapes space, tab, newline and backslash as octal (`\040`).
fn unescape_mountinfo(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(byte) => {
                out.push(byte as char);
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The cgroup2 mount point of this host.
pub fn cgroup2_mount() -> Result<PathBuf, CgroupError> {
    let path = PathBuf::from("/proc/self/mountinfo");
    let text = std::fs::read_to_string(&path).map_err(|source| CgroupError::Io { path, source })?;
    parse_mountinfo(&text)
}

/// Joins `given` to `base` unless it is absolute; refuses `..` so a
/// registration cannot climb out of the sandbox root by spelling.
pub fn join(base: &Path, given: &Path) -> Result<PathBuf, CgroupError> {
    if given.components().any(|c| c == Component::ParentDir) {
        return Err(CgroupError::Traversal {
            path: given.to_owned(),
        });
    }
    Ok(if given.is_absolute() {
        given.to_owned()
    } else {
        base.join(given)
    })
}

/// True when `path` is strictly below `root`, compared by components.
pub fn is_below(root: &Path, path: &Path) -> bool {
    path != root && path.starts_with(root)
}

/// The cgroup id the kernel reports for a cgroup2 directory (its inode).
pub fn cgroup_id(path: &Path) -> Result<u64, CgroupError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(meta.ino()),
        Ok(_) => Err(CgroupError::Missing {
            path: path.to_owned(),
        }),
        Err(source) if source.kind() == io::ErrorKind::NotFound => Err(CgroupError::Missing {
            path: path.to_owned(),
        }),
        Err(source) => Err(CgroupError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// The sandbox root cgroup: where the programs are attached.
#[derive(Debug, Clone)]
pub struct SandboxRoot {
    /// The cgroup2 mount point.
    pub mount: PathBuf,
    /// Absolute path of the root cgroup directory.
    pub path: PathBuf,
    /// Its path inside the hierarchy (`/sluice`), as /proc/PID/cgroup shows it.
    pub relative: PathBuf,
    /// Its level in the hierarchy (the cgroup2 root is 0).
    pub level: u32,
    pub id: u64,
}

impl SandboxRoot {
    /// Resolves `configured` (absolute, or relative to the mount) and creates
    /// the directory when missing.
    pub fn open(configured: &Path) -> Result<SandboxRoot, CgroupError> {
        let mount = cgroup2_mount()?;
        let path = join(&mount, configured)?;
        if !is_below(&mount, &path) {
            return Err(CgroupError::OutsideRoot {
                path,
                root: mount.clone(),
            });
        }
        std::fs::create_dir_all(&path).map_err(|source| CgroupError::Io {
            path: path.clone(),
            source,
        })?;
        let relative = Path::new("/").join(path.strip_prefix(&mount).unwrap_or(&path));
        let level = relative
            .components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .count() as u32;
        let id = cgroup_id(&path)?;
        Ok(SandboxRoot {
            mount,
            path,
            relative,
            level,
            id,
        })
    }

    /// Resolves a registered cgroup (absolute, or relative to the root): it
    /// must exist and lie strictly below the root. Returns (path, id).
    pub fn member(&self, given: &Path) -> Result<(PathBuf, u64), CgroupError> {
        let path = join(&self.path, given)?;
        if !is_below(&self.path, &path) {
            return Err(CgroupError::OutsideRoot {
                path,
                root: self.path.clone(),
            });
        }
        let id = cgroup_id(&path)?;
        Ok((path, id))
    }

    /// The path of a cgroup id below the root, for audit events (a walk; only
    /// used on refusals, which are rare).
    pub fn find(&self, id: u64) -> Option<PathBuf> {
        fn walk(dir: &Path, id: u64, depth: u32) -> Option<PathBuf> {
            if depth > gateway_common::MAX_CGROUP_DEPTH + 1 {
                return None;
            }
            for entry in std::fs::read_dir(dir).ok()?.flatten() {
                let meta = entry.metadata().ok()?;
                if meta.is_dir() {
                    if meta.ino() == id {
                        return Some(entry.path());
                    }
                    if let Some(found) = walk(&entry.path(), id, depth + 1) {
                        return Some(found);
                    }
                }
            }
            None
        }
        if id == self.id {
            return Some(self.path.clone());
        }
        walk(&self.path, id, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_cgroup2_in_hybrid_and_unified_layouts() {
        let hybrid = "\
30 24 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let found = |text: &str| parse_mountinfo(text).ok();
        assert_eq!(found(hybrid), Some(PathBuf::from("/sys/fs/cgroup/unified")));
        let unified = "35 24 0:30 / /sys/fs/cgroup rw shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(found(unified), Some(PathBuf::from("/sys/fs/cgroup")));
        let none = "30 24 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n";
        assert!(matches!(parse_mountinfo(none), Err(CgroupError::NoMount)));
        let escaped = "41 31 0:38 / /mnt/my\\040cg rw - cgroup2 cgroup2 rw\n";
        assert_eq!(found(escaped), Some(PathBuf::from("/mnt/my cg")));
    }

    /// A subtree mounted alone (a bind of one cgroup; a container's mount
    /// read from outside its cgroup namespace) is refused: paths relative to
    /// it are not the ones /proc/PID/cgroup shows. A whole-hierarchy mount
    /// beside it is taken.
    #[test]
    fn a_subtree_mount_alone_is_refused() {
        let bind = "50 30 0:30 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        match parse_mountinfo(bind) {
            Err(CgroupError::Subtree { mount, root }) => {
                assert_eq!(mount, PathBuf::from("/sys/fs/cgroup"));
                assert_eq!(root, "/kubepods/pod1");
            }
            other => panic!("a subtree mount was taken: {other:?}"),
        }
        let outside = "50 30 0:30 /../.. /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert!(matches!(
            parse_mountinfo(outside),
            Err(CgroupError::Subtree { .. })
        ));
        let both = format!("{bind}51 30 0:30 / /mnt/cgroup2 rw - cgroup2 cgroup2 rw\n");
        assert_eq!(
            parse_mountinfo(&both).ok(),
            Some(PathBuf::from("/mnt/cgroup2"))
        );
    }

    #[test]
    fn join_and_below() {
        let root = Path::new("/cg/sluice");
        let cases: &[(&str, Option<&str>, bool)] = &[
            ("sb1", Some("/cg/sluice/sb1"), true),
            ("/cg/sluice/sb1/s", Some("/cg/sluice/sb1/s"), true),
            ("/cg/sluice", Some("/cg/sluice"), false),
            ("/cg/sluice-other/x", Some("/cg/sluice-other/x"), false),
            ("../escape", None, false),
            ("sb1/../../x", None, false),
        ];
        for (given, joined, below) in cases {
            let got = join(root, Path::new(given)).ok();
            assert_eq!(got.as_deref(), joined.map(Path::new), "{given}");
            if let Some(path) = got {
                assert_eq!(is_below(root, &path), *below, "{given}");
            }
        }
    }

    #[test]
    fn missing_cgroup_names_its_path() {
        let err = cgroup_id(Path::new("/does/not/exist")).expect_err("missing");
        assert!(err.to_string().contains("/does/not/exist"), "{err}");
    }
}
