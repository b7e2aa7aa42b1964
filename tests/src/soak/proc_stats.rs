//! A process's resident memory, open descriptors and tasks, from /proc.

/// One reading of a process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Seconds since the soak began.
    pub secs: f64,
    pub rss_kib: u64,
    pub fds: u64,
    pub tasks: u64,
}

/// Reads `pid` now; `None` when it is gone.
pub fn sample(pid: u32, secs: f64) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
    Some(Sample {
        secs,
        rss_kib: field("VmRSS:")?,
        fds: u64::try_from(fds).ok()?,
        tasks: field("Threads:")?,
    })
}
