//! End-to-end harness for Sluice: real eBPF programs, real cgroups and
//! network namespaces, run as root.
//!
//! Every test builds its own world (daemon, cgroups, namespaces, upstream
//! servers) so tests run in parallel. Everything a test creates is removed on
//! drop, also after a panic. A test that cannot run (not root, no daemon
//! binary) panics with a message saying why: it never passes silently.

#![forbid(unsafe_code)]

pub mod answering_upstream;
pub mod cgroup;
pub mod daemon;
pub mod dns_server;
pub mod flood;
pub mod https_upstream;
pub mod interception;
pub mod llm_mock;
pub mod netns;
pub mod oauth;
pub mod pki;
pub mod prom;
pub mod run;
pub mod scripts;
pub mod soak;
pub mod stream_body;
pub mod tls_scripts;
pub mod upstream;
pub mod viewer;
pub mod webhook;

use std::{
    path::{Path, PathBuf},
    sync::{
        Mutex, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

pub use cgroup::TestCgroup;
pub use daemon::{Daemon, DaemonBuilder, Rule, write_policy};
pub use dns_server::TestDns;
pub use https_upstream::{HttpsUpstream, RequestRecord, UpstreamOptions};
pub use netns::TestNetns;
pub use pki::TestCa;
pub use run::{Output, Sandboxed, in_cgroup};
pub use upstream::{EchoServer, HttpServer, Recorded};
pub use viewer::ViewerKeys;

/// How long any single "eventually" condition may take by default.
pub const WAIT: Duration = Duration::from_secs(15);

/// Panics unless the test runs as root: these tests attach eBPF programs,
/// create cgroups and network namespaces.
pub fn require_root() {
    let euid = nix::unistd::geteuid();
    assert!(
        euid.is_root(),
        "sluice end-to-end tests must run as root (euid is {euid}); they attach eBPF \
         programs and create cgroups and network namespaces. Run them with sudo or in CI."
    );
}

/// The daemon binary: `$SLUICE_BIN`, else `<workspace>/target/debug/sluice`.
/// Panics when it does not exist.
pub fn sluice_bin() -> PathBuf {
    let path = match std::env::var_os("SLUICE_BIN") {
        Some(path) => PathBuf::from(path),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/sluice"),
    };
    assert!(
        path.is_file(),
        "the sluice binary is missing at {} (set SLUICE_BIN or run `cargo build -p sluice` first)",
        path.display()
    );
    path
}

/// One mount from /proc/self/mountinfo.
#[derive(Debug, Clone)]
pub struct Mount {
    pub mount_point: PathBuf,
    pub fstype: String,
}

/// Parses /proc/self/mountinfo (mount point is field 5; the filesystem type
/// follows the ` - ` separator).
pub fn mounts() -> Vec<Mount> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").expect("read /proc/self/mountinfo");
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mount_point = left.split(' ').nth(4)?;
            let fstype = right.split(' ').next()?;
            Some(Mount {
                mount_point: PathBuf::from(unescape_mountinfo(mount_point)),
                fstype: fstype.to_owned(),
            })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mountinfo(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let value = bytes[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            out.push(value as u8);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where cgroup2 is mounted (these machines use a hybrid layout, so it is
/// not necessarily /sys/fs/cgroup). Panics when cgroup2 is not mounted.
pub fn cgroup2_mount() -> PathBuf {
    static MOUNT: OnceLock<PathBuf> = OnceLock::new();
    MOUNT
        .get_or_init(|| {
            mounts()
                .into_iter()
                .find(|m| m.fstype == "cgroup2")
                .map(|m| m.mount_point)
                .expect("cgroup2 is not mounted (no `cgroup2` entry in /proc/self/mountinfo)")
        })
        .clone()
}

/// Where pins go. bpffs is mounted at /sys/fs/bpf if it is not already.
pub fn bpffs_mount() -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let target = PathBuf::from("/sys/fs/bpf");
    let mounted = mounts()
        .iter()
        .any(|m| m.fstype == "bpf" && m.mount_point == target);
    if !mounted {
        let out = run::host(&["mount", "-t", "bpf", "bpf", "/sys/fs/bpf"], WAIT);
        assert!(
            out.success(),
            "bpffs is not mounted at /sys/fs/bpf and mounting it failed:\n{out}"
        );
    }
    target
}

/// A name no other test (in this process or another) uses: pid, a
/// per-process counter and random bits.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}-{:08x}", std::process::id(), random_u32())
}

fn random_u32() -> u32 {
    use std::io::Read;
    let mut buf = [0u8; 4];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .expect("read /dev/urandom");
    u32::from_ne_bytes(buf)
}

/// Polls `cond` until it holds; panics with `what` after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    eventually(what, timeout, || {
        if cond() { Ok(()) } else { Err(String::new()) }
    })
}

/// Polls `attempt` until it returns `Ok`; after `timeout`, panics with `what`
/// and the last error, so a failure says what was seen instead.
pub fn eventually<T>(
    what: &str,
    timeout: Duration,
    mut attempt: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(5);
    loop {
        let last = match attempt() {
            Ok(value) => return value,
            Err(last) => last,
        };
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}\nlast seen: {last}");
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(100));
    }
}

/// The real python3 executable (not a pyenv shim), so commands in a
/// sandbox start fast and do not run shell wrappers there.
pub fn python3() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let out = run::host(
                &["python3", "-c", "import sys; print(sys.executable)"],
                WAIT,
            );
            assert!(out.success(), "python3 is required:\n{out}");
            PathBuf::from(out.stdout_str().trim())
        })
        .clone()
}
