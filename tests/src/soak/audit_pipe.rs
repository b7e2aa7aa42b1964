//! The daemon's audit sink as a named pipe the soak reads: drained as fast
//! as it comes, read slowly (so the daemon's writes wait on a full pipe),
//! or not read at all (no reader: every write fails with `EPIPE`, as on
//! a sink that went away), and back.

use std::{
    io::Read,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering},
    },
    time::Duration,
};

/// How the pipe is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Drain {
    Fast = 0,
    /// 512 bytes every 100 ms (5 KiB/s, a few dozen events a second).
    Slow = 1,
    /// No reader.
    Closed = 2,
}

pub struct AuditPipe {
    path: PathBuf,
    drain: Arc<AtomicU8>,
    bytes: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl AuditPipe {
    /// A FIFO at `path` and its reader (which opens it once the daemon does).
    pub fn new(path: &Path) -> AuditPipe {
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .unwrap_or_else(|e| panic!("mkfifo {}: {e}", path.display()));
        let pipe = AuditPipe {
            path: path.to_owned(),
            drain: Arc::new(AtomicU8::new(Drain::Fast as u8)),
            bytes: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (path, drain, bytes, stop) = (
            pipe.path.clone(),
            pipe.drain.clone(),
            pipe.bytes.clone(),
            pipe.stop.clone(),
        );
        std::thread::spawn(move || read_loop(&path, &drain, &bytes, &stop));
        pipe
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn set(&self, drain: Drain) {
        self.drain.store(drain as u8, Ordering::SeqCst);
    }

    /// Audit bytes read so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::SeqCst)
    }
}

impl Drop for AuditPipe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn read_loop(path: &Path, drain: &AtomicU8, bytes: &AtomicU64, stop: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::SeqCst) {
        if drain.load(Ordering::SeqCst) == Drain::Closed as u8 {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        // Blocks until the daemon holds the write end (at its start).
        let Ok(mut file) = std::fs::File::open(path) else {
            return;
        };
        loop {
            let mode = drain.load(Ordering::SeqCst);
            if mode == Drain::Closed as u8 || stop.load(Ordering::SeqCst) {
                break;
            }
            let want = if mode == Drain::Slow as u8 {
                512
            } else {
                buf.len()
            };
            match file.read(&mut buf[..want]) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    bytes.fetch_add(n as u64, Ordering::SeqCst);
                }
            }
            if mode == Drain::Slow as u8 {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}
