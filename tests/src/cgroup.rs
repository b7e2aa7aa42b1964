//! Test cgroups on the cgroup2 hierarchy, removed (processes killed first)
//! on drop, also after a panic.

use std::{
    io::ErrorKind,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use crate::unique_name;

/// A cgroup directory this test created. Drop kills every process in it and
/// below (`cgroup.kill`), waits until they are gone, then removes the child
/// cgroups depth-first and the directory itself.
#[derive(Debug)]
pub struct TestCgroup {
    path: PathBuf,
}

impl TestCgroup {
    /// Creates `<parent>/<prefix>-<pid>-<n>-<random>`.
    pub fn new_unique(parent: &Path, prefix: &str) -> TestCgroup {
        TestCgroup::create(parent.join(unique_name(prefix)))
    }

    /// Creates `<parent>/<name>`; the name must not exist yet.
    pub fn new_named(parent: &Path, name: &str) -> TestCgroup {
        TestCgroup::create(parent.join(name))
    }

    fn create(path: PathBuf) -> TestCgroup {
        std::fs::create_dir(&path)
            .unwrap_or_else(|e| panic!("create cgroup {}: {e}", path.display()));
        TestCgroup { path }
    }

    /// Creates a child cgroup `name` under this one.
    pub fn child(&self, name: &str) -> TestCgroup {
        TestCgroup::new_named(&self.path, name)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The cgroup id the kernel uses (the cgroupfs inode number).
    pub fn id(&self) -> u64 {
        std::fs::metadata(&self.path)
            .unwrap_or_else(|e| panic!("stat {}: {e}", self.path.display()))
            .ino()
    }

    /// The path as a string, for command lines and configs.
    pub fn path_str(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }

    /// Pids directly in this cgroup.
    pub fn procs(&self) -> Vec<u32> {
        read_procs(&self.path)
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        if let Err(e) = remove_tree(&self.path) {
            eprintln!("warning: cleaning up cgroup {}: {e}", self.path.display());
        }
    }
}

fn read_procs(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// `populated 1` in cgroup.events: a process lives here or below.
fn populated(path: &Path) -> bool {
    std::fs::read_to_string(path.join("cgroup.events"))
        .map(|text| text.lines().any(|l| l.trim() == "populated 1"))
        .unwrap_or(false)
}

/// Kills everything in the cgroup tree at `path`, then removes it
/// depth-first. A missing directory is not an error (a parent's teardown may
/// have removed it already).
pub fn remove_tree(path: &Path) -> Result<(), String> {
    if !path.exists() {
        return Ok(());
    }
    // cgroup.kill kills the whole subtree, including processes forked while
    // the kill runs.
    if let Err(e) = std::fs::write(path.join("cgroup.kill"), "1")
        && e.kind() != ErrorKind::NotFound
    {
        return Err(format!("write cgroup.kill: {e}"));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while populated(path) || !read_procs(path).is_empty() {
        if Instant::now() >= deadline {
            return Err(format!(
                "processes still alive after cgroup.kill: {:?}",
                read_procs(path)
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    remove_dirs(path, deadline)
}

fn remove_dirs(path: &Path, deadline: Instant) -> Result<(), String> {
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("read_dir {}: {e}", path.display())),
    };
    for entry in entries.flatten() {
        if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            remove_dirs(&entry.path(), deadline)?;
        }
    }
    loop {
        match std::fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            // A just-killed task can keep the cgroup busy for a moment.
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(format!("rmdir {}: {e}", path.display())),
        }
    }
}
