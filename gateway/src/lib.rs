//! Sluice: a transparent egress gateway for sandboxes.
//!
//! eBPF programs (`gateway-ebpf`) steer every socket a sandbox opens to this
//! daemon; the daemon recovers who is talking and where to, decides, and
//! relays. See ARCHITECTURE.md for the map of modules, ports, maps and metrics.
//!
//! No `unsafe` here but in [`sys`] (three system calls, each wrapped in a
//! safe function): the content scanners, with their SIMD, are the
//! `sluice_scan` crate. `deny` rather than `forbid`, because `forbid`
//! admits no exception, not even for `sys`.

#![deny(unsafe_code)]

pub mod admin;
pub mod approvals;
pub mod apps;
pub mod audit;
pub mod bucket;
pub mod cgroup;
pub mod config;
pub mod conn;
pub mod content;
pub mod credentials;
pub mod daemon;
pub mod dns;
pub mod dns_guard;
pub mod drain;
pub mod explain;
pub mod explicit;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod ingress;
pub mod intercept;
pub mod jwt_crit;
pub mod metrics;
pub mod netns;
pub mod outbound;
pub mod policy;
pub mod process;
pub mod proxy;
pub mod redact;
pub mod refuse;
pub mod registry;
pub mod replace_file;
pub mod resolve;
pub mod sandbox_dns;
pub mod scan;
pub mod shown_url;
pub mod steer;
#[allow(
    unsafe_code,
    reason = "the crate's only unsafe: three system calls, each wrapped safely"
)]
pub mod sys;
pub mod tls;
