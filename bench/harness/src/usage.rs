//! What a proxy under test spends: the CPU time of its whole process tree
//! (the process, its threads, and its children: nginx's worker, Squid's
//! certificate helpers) and the tree's resident memory, read from
//! `/proc/PID/stat`. The harness samples it when a client starts its
//! measured phase and again when the client reports, so the CPU figure
//! covers exactly the requests the outcome counts (not the connections'
//! warm-up, nor their teardown).

use nix::unistd::{SysconfVar, sysconf};

/// The fields of one `/proc/PID/stat` line the harness needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub pid: u32,
    pub ppid: u32,
    /// utime + stime + cutime + cstime, in clock ticks: the process's own
    /// CPU (all its threads) and that of children it has reaped, so a
    /// helper that exits between two samples is not lost.
    pub ticks: u64,
    /// Resident set, pages.
    pub rss_pages: u64,
}

/// Parses a `/proc/PID/stat` line. The command name (field 2) is in
/// parentheses and may hold spaces and parentheses itself, so fields are
/// counted from the last `)`.
pub fn parse_stat(line: &str) -> Option<Stat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let pid = line[..open].trim().parse().ok()?;
    // Field 3 (state) is index 0 here; field n is index n - 3.
    let rest: Vec<&str> = line[close + 1..].split_whitespace().collect();
    let field = |n: usize| -> Option<u64> { rest.get(n - 3)?.parse().ok() };
    Some(Stat {
        pid,
        ppid: u32::try_from(field(4)?).ok()?,
        ticks: field(14)? + field(15)? + field(16)? + field(17)?,
        rss_pages: field(24)?,
    })
}

/// `root` and every process descending from it, by parent links.
pub fn tree(root: u32, all: &[Stat]) -> Vec<Stat> {
    let mut members: Vec<Stat> = all.iter().filter(|s| s.pid == root).copied().collect();
    let mut i = 0;
    while i < members.len() {
        let parent = members[i].pid;
        members.extend(all.iter().filter(|s| s.ppid == parent && s.pid != root));
        i += 1;
    }
    members
}

/// One reading of a process tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    pub ticks: u64,
    pub rss_kib: u64,
}

/// Sums a tree's CPU ticks and resident memory.
pub fn total(members: &[Stat], page_kib: u64) -> Sample {
    Sample {
        ticks: members.iter().map(|s| s.ticks).sum(),
        rss_kib: members.iter().map(|s| s.rss_pages * page_kib).sum(),
    }
}

/// Reads `root`'s tree now (every process in /proc, then the tree by
/// parent links); `None` when `root` has gone.
pub fn sample(root: u32) -> Option<Sample> {
    let all: Vec<Stat> = std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            entry.file_name().to_str()?.parse::<u32>().ok()?;
            parse_stat(&std::fs::read_to_string(entry.path().join("stat")).ok()?)
        })
        .collect();
    let members = tree(root, &all);
    if members.is_empty() {
        return None;
    }
    Some(total(&members, page_kib()))
}

/// What a proxy spent over a measured phase, and its memory at its end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// CPU time of the tree over the phase, µs.
    pub cpu_us: f64,
    /// The tree's RSS when the phase ended (right after the load), KiB.
    pub rss_kib: u64,
}

/// The usage between two samples of the same tree.
pub fn between(start: Sample, end: Sample, ticks_per_sec: u64) -> Usage {
    Usage {
        cpu_us: end.ticks.saturating_sub(start.ticks) as f64 * 1e6 / ticks_per_sec.max(1) as f64,
        rss_kib: end.rss_kib,
    }
}

/// CPU µs per unit of work (requests, MB); none for no work.
pub fn per_unit(cpu_us: f64, units: f64) -> Option<f64> {
    (units > 0.0).then(|| cpu_us / units)
}

/// Clock ticks per second of the stat times (`sysconf(_SC_CLK_TCK)`).
pub fn ticks_per_sec() -> u64 {
    sysconf_or(SysconfVar::CLK_TCK, 100)
}

fn page_kib() -> u64 {
    sysconf_or(SysconfVar::PAGE_SIZE, 4096) / 1024
}

fn sysconf_or(var: SysconfVar, default: u64) -> u64 {
    sysconf(var)
        .ok()
        .flatten()
        .and_then(|v| u64::try_from(v).ok())
        .filter(|v| *v > 0)
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(pid: u32, comm: &str, ppid: u32, times: [u64; 4], rss: u64) -> String {
        // Fields 3..=24 as the kernel writes them; the ones not read are 0.
        let [utime, stime, cutime, cstime] = times;
        format!(
            "{pid} ({comm}) S {ppid} 1 1 0 -1 4194560 100 0 0 0 {utime} {stime} {cutime} {cstime} \
             20 0 1 0 12345 1000000 {rss} 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0"
        )
    }

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let stat = parse_stat(&line(42, "nginx", 7, [11, 22, 3, 4], 512)).expect("parses");
        assert_eq!(
            stat,
            Stat {
                pid: 42,
                ppid: 7,
                ticks: 40,
                rss_pages: 512
            }
        );
        // A name with spaces and parentheses does not shift the fields.
        let odd = parse_stat(&line(9, "a) (b c", 1, [1, 2, 0, 0], 3)).expect("parses");
        assert_eq!((odd.pid, odd.ppid, odd.ticks, odd.rss_pages), (9, 1, 3, 3));
        assert_eq!(parse_stat("12 (truncated) S 1 2"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn a_tree_is_the_root_and_its_descendants_only() {
        let stat = |pid, ppid, ticks| Stat {
            pid,
            ppid,
            ticks,
            rss_pages: 1,
        };
        let all = [
            stat(1, 0, 1000),
            stat(10, 1, 5),  // the proxy
            stat(11, 10, 7), // its worker
            stat(12, 11, 1), // a helper of the worker
            stat(20, 1, 99), // unrelated
        ];
        let members = tree(10, &all);
        let mut pids: Vec<u32> = members.iter().map(|s| s.pid).collect();
        pids.sort_unstable();
        assert_eq!(pids, [10, 11, 12]);
        assert_eq!(
            total(&members, 4),
            Sample {
                ticks: 13,
                rss_kib: 12
            }
        );
        assert!(tree(99, &all).is_empty());
    }

    #[test]
    fn cpu_per_request_from_ticks() {
        let start = Sample {
            ticks: 1_000,
            rss_kib: 10,
        };
        let end = Sample {
            ticks: 1_250,
            rss_kib: 30,
        };
        // 250 ticks at 100 Hz = 2.5 s of CPU.
        let usage = between(start, end, 100);
        assert_eq!(
            usage,
            Usage {
                cpu_us: 2_500_000.0,
                rss_kib: 30
            }
        );
        // 2.5 s over 50,000 requests: 50 µs each.
        assert_eq!(per_unit(usage.cpu_us, 50_000.0), Some(50.0));
        assert_eq!(per_unit(usage.cpu_us, 0.0), None);
        // A tree whose ticks went backwards (a member gone unreaped) counts 0.
        assert_eq!(between(end, start, 100).cpu_us, 0.0);
    }

    #[test]
    fn this_process_can_be_sampled() {
        let me = sample(std::process::id()).expect("own stat");
        assert!(me.rss_kib > 0);
        assert!(ticks_per_sec() > 0);
    }
}
