//! Which program opened a steered socket. The connect program records the
//! caller's pid, thread and `comm` with the destination; this module adds
//! the executable's path, read from `/proc` once per process and cached, so
//! that audit events, refusals and approval cards say "curl (pid 412)"
//! rather than only a sandbox's name.
//!
//! Not the command line: it carries what the program was given (`curl -d`
//! with a body, a token in a URL), and nothing Sluice writes down may hold
//! a payload byte or a secret.
//!
//! What it is worth: `comm` is whatever the process named itself, and a
//! sandbox that can write and run executables can give any of them any
//! name or path. The executable is read from the kernel's own link
//! (`/proc/PID/exe`), and only while the thread that connected still
//! carries the name the kernel recorded at `connect()` (a process that
//! connected and then ran another program is not taken for that program);
//! a process that is gone, or does not match, has no executable here, and
//! a rule that names executables does not admit it.

use std::{
    num::NonZeroUsize,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use gateway_common::ProcessId;
use serde::{Deserialize, Serialize};

/// How long a process's executable and command line are reused for its
/// later connections. Short: a process may run another program (with the
/// same name) in place.
const FRESH_FOR: Duration = Duration::from_secs(5);

/// How long a lookup may take before the connection goes on without it.
const READ_WITHIN: Duration = Duration::from_millis(200);

/// Processes remembered at once.
const CACHED: usize = 4096;

/// A process as audit events and refusals name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    /// Its thread-group id, as the host numbers it.
    pub pid: u32,
    /// The name the calling thread had at `connect()`.
    pub comm: Box<str>,
    /// The executable, where it could be read and the process still
    /// matched what the kernel recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe: Option<Box<str>>,
}

impl std::fmt::Display for Process {
    /// `curl (pid 412)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (pid {})", self.comm, self.pid)
    }
}

/// A kernel `comm` (NUL-padded, any bytes) as text: control characters and
/// invalid UTF-8 replaced, so it cannot forge audit lines or card text.
pub fn comm_text(raw: &[u8]) -> Box<str> {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    printable(&String::from_utf8_lossy(&raw[..end]))
}

fn printable(text: &str) -> Box<str> {
    text.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect::<String>()
        .into()
}

/// A process as the kernel recorded it (pid, `comm`) → when it was read,
/// and what.
type Cache = lru::LruCache<(u32, [u8; 16]), (Instant, Arc<Process>)>;

/// Reads processes from a `/proc` and keeps what it read for a while.
pub struct Processes {
    proc_root: PathBuf,
    cache: Mutex<Cache>,
}

impl Processes {
    /// `proc_root` is `/proc` but in tests.
    pub fn new(proc_root: impl Into<PathBuf>) -> Processes {
        let cap = NonZeroUsize::new(CACHED).expect("non-zero");
        Processes {
            proc_root: proc_root.into(),
            cache: Mutex::new(lru::LruCache::new(cap)),
        }
    }

    /// The process behind `id`; `None` where the kernel recorded none.
    /// Reads `/proc` off the async threads, at most 200 ms; a
    /// process that could not be read in time is named by pid and `comm`.
    pub async fn lookup(self: &Arc<Self>, id: ProcessId) -> Option<Arc<Process>> {
        if id.tgid == 0 {
            return None;
        }
        let key = (id.tgid, id.comm);
        let now = Instant::now();
        if let Some((at, process)) = self.lock().get(&key)
            && now.duration_since(*at) < FRESH_FOR
        {
            return Some(process.clone());
        }
        let this = self.clone();
        let read = tokio::task::spawn_blocking(move || read(&this.proc_root, id));
        let process = match tokio::time::timeout(READ_WITHIN, read).await {
            Ok(Ok(process)) => Arc::new(process),
            _ => {
                return Some(Arc::new(Process {
                    pid: id.tgid,
                    comm: comm_text(&id.comm),
                    exe: None,
                }));
            }
        };
        self.lock().put(key, (now, process.clone()));
        Some(process)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Reads one process. Its executable counts only while the thread that
/// connected still has the name recorded then (or, the thread gone, the
/// process does): otherwise it has run something else since.
fn read(proc_root: &Path, id: ProcessId) -> Process {
    let dir = proc_root.join(id.tgid.to_string());
    let comm = comm_text(&id.comm);
    let now_named = std::fs::read(dir.join("task").join(id.tid.to_string()).join("comm"))
        .or_else(|_| std::fs::read(dir.join("comm")))
        .ok()
        .map(|raw| comm_text(raw.strip_suffix(b"\n").unwrap_or(&raw)));
    let same = now_named.as_deref() == Some(&*comm);
    let exe = same
        .then(|| std::fs::read_link(dir.join("exe")).ok())
        .flatten()
        .map(|path| printable(&path.to_string_lossy()));
    Process {
        pid: id.tgid,
        comm,
        exe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_comm(name: &str) -> [u8; 16] {
        let mut comm = [0u8; 16];
        comm[..name.len()].copy_from_slice(name.as_bytes());
        comm
    }

    #[test]
    fn kernel_text_becomes_printable() {
        let cases: &[(&[u8], &str)] = &[
            (b"curl\0\0\0\0\0\0\0\0\0\0\0\0", "curl"),
            (b"exactly16bytes!!", "exactly16bytes!!"),
            (b"evil\nline\0", "evil\u{fffd}line"),
            (b"\xff\xfeab\0", "\u{fffd}\u{fffd}ab"),
            (b"\0", ""),
        ];
        for (raw, want) in cases {
            assert_eq!(&*comm_text(raw), *want, "{raw:?}");
        }
    }

    #[test]
    fn a_process_is_named_by_comm_and_pid() {
        let process = Process {
            pid: 412,
            comm: "curl".into(),
            exe: Some("/usr/bin/curl".into()),
        };
        assert_eq!(process.to_string(), "curl (pid 412)");
        let json = serde_json::to_value(&process).expect("json");
        assert_eq!(
            json,
            serde_json::json!({"pid": 412, "comm": "curl", "exe": "/usr/bin/curl"})
        );
    }

    /// A fake `/proc/PID` with a thread, its name and an executable link.
    fn fake_proc(root: &Path, pid: u32, tid: u32, thread_comm: &str, exe: &str) {
        let dir = root.join(pid.to_string());
        let task = dir.join("task").join(tid.to_string());
        std::fs::create_dir_all(&task).expect("dirs");
        std::fs::write(task.join("comm"), format!("{thread_comm}\n")).expect("comm");
        std::fs::write(dir.join("comm"), "main\n").expect("comm");
        std::os::unix::fs::symlink(exe, dir.join("exe")).expect("exe");
    }

    #[tokio::test]
    async fn the_executable_counts_only_while_the_thread_keeps_its_name() {
        let root = tempfile::tempdir().expect("tmp");
        fake_proc(root.path(), 10, 11, "worker", "/usr/bin/git");
        fake_proc(root.path(), 20, 20, "git", "/tmp/other");
        let processes = Arc::new(Processes::new(root.path()));
        let id = |tgid, tid, comm| ProcessId {
            tgid,
            tid,
            comm: raw_comm(comm),
        };
        let cases = [
            // The connecting thread, named as recorded: the executable holds.
            (id(10, 11, "worker"), Some("/usr/bin/git")),
            // Renamed (or ran another program) since connect(): not trusted.
            (id(20, 20, "curl"), None),
            // Gone: named only.
            (id(30, 30, "curl"), None),
        ];
        for (id, want) in cases {
            let process = processes.lookup(id).await.expect("recorded");
            assert_eq!(process.exe.as_deref(), want, "{id:?}");
            assert_eq!(process.pid, id.tgid);
            assert_eq!(&*process.comm, &*comm_text(&id.comm));
        }
        let first = processes
            .lookup(id(10, 11, "worker"))
            .await
            .expect("cached");
        assert_eq!(first.exe.as_deref(), Some("/usr/bin/git"));
        // Nothing recorded (a socket from before the programs knew processes).
        assert!(processes.lookup(ProcessId::default()).await.is_none());
    }
}
