//! The soak (`cargo xtask soak`, `tests/tests/soak.rs`): what its driver
//! shares with nothing else. The traffic a sandbox sends ([`CLIENT`]), the
//! faults' schedule, how an error is judged against the faults made
//! meanwhile, how growth is judged from the daemon's samples ([`judge`]),
//! the audit sink that can be made slow and unwritable ([`audit_pipe`]) and
//! reading a process's RSS, descriptors and tasks ([`proc_stats`]).

pub mod audit_pipe;
pub mod judge;
pub mod proc_stats;

/// The sandbox's client: Python, one spec argument, one JSON line per
/// operation to the spec's log file.
pub const CLIENT: &str = include_str!("client.py");
