//! What the orchestrator asks a client process to do, and what the client
//! reports back: serialized as JSON on the command line and on stdout, so
//! a client can run in another cgroup (where Sluice steers it).

use std::{net::SocketAddr, path::PathBuf};

use serde::{Deserialize, Serialize};

/// The line a client prints on stdout as its measured phase starts (its
/// connections opened and warmed), so the harness can sample the proxy.
pub const MEASURING: &str = "MEASURING";

/// How a client reaches the upstream.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Dial {
    /// Where the TCP connection goes: the upstream (direct, and Sluice,
    /// whose eBPF programs steer it), or an explicit proxy.
    pub addr: SocketAddr,
    /// `CONNECT` this authority first (explicit proxies).
    pub connect: Option<String>,
    /// TLS to the upstream's name, trusting only this CA file.
    pub tls: Option<TlsDial>,
    /// The `Host` header.
    pub host: String,
    /// Extra request headers (a credential placeholder).
    pub headers: Vec<(String, String)>,
    /// Move the client into this cgroup before it opens anything.
    pub cgroup: Option<PathBuf>,
    /// Enter this network namespace (`/run/netns/NAME`) before it opens
    /// anything: the web app the ingress publishes listens on loopback
    /// inside one, and its direct connection is dialled from there.
    pub netns: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TlsDial {
    pub sni: String,
    pub ca_file: PathBuf,
}

/// One measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Work {
    /// One GET of `bytes` on one connection.
    Bulk { bytes: u64 },
    /// Closed loop: `conns` connections each sending GETs of `size` bytes
    /// back to back for `secs`; a new connection per request when
    /// `new_conn`.
    Requests {
        size: u64,
        conns: usize,
        secs: f64,
        new_conn: bool,
    },
    /// Connect and finish a TLS handshake, then close, from `conns`
    /// concurrent loops for `secs`.
    Handshakes { conns: usize, secs: f64 },
    /// Open loop: GETs of `size` at `rate` per second spread over `conns`
    /// keep-alive connections for `secs`, latency measured from each
    /// request's intended send time.
    Latency {
        size: u64,
        rate: u64,
        conns: usize,
        secs: f64,
    },
    /// Open `n` connections, one request on each, print `READY <ok>` and
    /// hold them until stdin closes.
    Idle { n: usize, size: u64 },
}

/// What a client measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Outcome {
    /// Requests (or handshakes) completed.
    pub ok: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Body bytes received.
    pub bytes: u64,
    /// Wall time of the measured phase.
    pub secs: f64,
    /// Open loop only: per-request latency from the intended send time, µs.
    pub latencies_us: Vec<u64>,
    /// Open loop only: requests scheduled but not sent or not answered by
    /// the deadline (the target could not keep the rate).
    pub unfinished: u64,
}

impl Outcome {
    pub fn error(&mut self, e: impl std::fmt::Display) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(e.to_string());
        }
    }

    pub fn merge(&mut self, other: Outcome) {
        self.ok += other.ok;
        self.bytes += other.bytes;
        self.errors += other.errors;
        self.unfinished += other.unfinished;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.latencies_us.extend(other.latencies_us);
    }
}
