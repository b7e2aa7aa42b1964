//! What a well-behaved sandbox sees while another floods Sluice: the p99
//! of its requests before a flood and during it, measured in one run so
//! the two figures share the machine's load.
//!
//! A flood is a script in the flooding sandbox that touches its `ready`
//! file once the flood is under way and stops, printing what it saw as
//! one JSON line, once its `stop` file exists; so no test sleeps for a
//! guessed time, and a flood never outlives its test.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use serde_json::Value;

use crate::{
    DaemonBuilder, HttpsUpstream, TestCa, TestCgroup, eventually, in_cgroup,
    interception::{World, intercepting_policy},
    run::{Output, Running},
};

/// `HOST PORT NAME PATH CAFILE N`: N HTTPS GETs, each on a new connection
/// (the accept, the handshake and the request are what a flood could slow),
/// to HOST:PORT with SNI and Host NAME. Prints `{"ms": [...], "codes": [...]}`.
const PROBE: &str = r#"
import http.client, json, socket, ssl, sys, time
host, port, name, path, cafile, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
ctx = ssl.create_default_context(cafile=cafile)
ms, codes = [], []
for _ in range(n):
    start = time.monotonic()
    try:
        raw = socket.create_connection((host, port), timeout=10)
        tls = ctx.wrap_socket(raw, server_hostname=name)
        conn = http.client.HTTPConnection(name, port, timeout=10)
        conn.sock = tls
        conn.request("GET", path, headers={"Host": name})
        resp = conn.getresponse()
        resp.read()
        codes.append(resp.status)
        conn.close()
    except Exception as e:
        codes.append(0)
    ms.append((time.monotonic() - start) * 1000)
print(json.dumps({"ms": ms, "codes": codes}))
"#;

/// Requests in each of the two samples.
pub const SAMPLE: usize = 100;

/// The well-behaved sandbox and where it sends its requests.
pub struct Probe<'a> {
    pub cgroup: &'a TestCgroup,
    pub port: u16,
    /// SNI and Host; it resolves (statically) to 127.0.0.1.
    pub name: &'a str,
    /// Sluice's CA, which the sandbox trusts.
    pub cafile: &'a str,
}

/// The latencies of one sample, in milliseconds, sorted.
#[derive(Debug, Clone)]
pub struct Sample {
    pub ms: Vec<f64>,
    /// Status codes that were not 200 (0: no answer).
    pub failed: Vec<u64>,
}

impl Sample {
    /// The nearest-rank 99th percentile.
    pub fn p99(&self) -> f64 {
        let rank = (self.ms.len() * 99).div_ceil(100).max(1);
        self.ms[rank - 1]
    }
}

impl Probe<'_> {
    /// [`SAMPLE`] requests, one after another.
    pub fn sample(&self) -> Sample {
        let args = [
            "127.0.0.1".to_owned(),
            self.port.to_string(),
            self.name.to_owned(),
            "/echo".to_owned(),
            self.cafile.to_owned(),
            SAMPLE.to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = in_cgroup(self.cgroup)
            .timeout(Duration::from_secs(120))
            .python(PROBE, &args);
        out.expect_success("the well-behaved sandbox's requests");
        let json = out.json();
        let mut ms: Vec<f64> = json["ms"]
            .as_array()
            .expect("ms")
            .iter()
            .filter_map(Value::as_f64)
            .collect();
        ms.sort_by(f64::total_cmp);
        let failed = json["codes"]
            .as_array()
            .expect("codes")
            .iter()
            .filter_map(Value::as_u64)
            .filter(|&c| c != 200)
            .collect();
        Sample { ms, failed }
    }
}

/// The well-behaved sandbox's p99 before and during one flood.
#[derive(Debug, Clone)]
pub struct P99 {
    pub what: String,
    pub before: Sample,
    pub during: Sample,
}

impl P99 {
    /// Every request served, and the p99 during the flood under ten times
    /// the one before or under a second (a loaded, shared machine makes
    /// a small baseline jumpy). Prints the figures for the README.
    #[track_caller]
    pub fn assert_served(&self) {
        let (before, during) = (self.before.p99(), self.during.p99());
        eprintln!(
            "FLOOD {}: well-behaved sandbox p99 {before:.1} ms before, {during:.1} ms during ({} requests each)",
            self.what, SAMPLE
        );
        assert!(
            self.before.failed.is_empty() && self.during.failed.is_empty(),
            "{}: the well-behaved sandbox was refused: {:?} before, {:?} during",
            self.what,
            self.before.failed,
            self.during.failed
        );
        assert!(
            during < (10.0 * before).max(1000.0),
            "{}: p99 {before:.1} ms before, {during:.1} ms during",
            self.what
        );
    }
}

/// Samples `probe`, starts the flood (`start` returns it once under way),
/// samples again, and hands the flood back for the test to stop and check.
pub fn p99_during<F>(what: &str, probe: &Probe, start: impl FnOnce() -> F) -> (P99, F) {
    // One request first, so the baseline does not pay for the first mint.
    let _ = probe.sample_one();
    let before = probe.sample();
    let flood = start();
    let during = probe.sample();
    let p99 = P99 {
        what: what.to_owned(),
        before,
        during,
    };
    (p99, flood)
}

impl Probe<'_> {
    fn sample_one(&self) -> Output {
        let args = [
            "127.0.0.1".to_owned(),
            self.port.to_string(),
            self.name.to_owned(),
            "/echo".to_owned(),
            self.cafile.to_owned(),
            "1".to_owned(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        in_cgroup(self.cgroup).python(PROBE, &args)
    }
}

/// A flood script running in a sandbox, with its ready and stop files.
pub struct Flood {
    running: Option<Running>,
    ready: PathBuf,
    stop: PathBuf,
}

impl Flood {
    /// Starts `script` in `cgroup` with `READY STOP` before `args`, and
    /// returns once it has touched READY (panicking, with its output, if it
    /// ended first).
    pub fn start(cgroup: &TestCgroup, dir: &Path, script: &str, args: &[&str]) -> Flood {
        let name = crate::unique_name("flood");
        let ready = dir.join(format!("{name}.ready"));
        let stop = dir.join(format!("{name}.stop"));
        let (r, s) = (ready.to_string_lossy(), stop.to_string_lossy());
        let mut all = vec![r.as_ref(), s.as_ref()];
        all.extend_from_slice(args);
        let mut running = in_cgroup(cgroup)
            .timeout(Duration::from_secs(300))
            .spawn_python(script, &all);
        let started = eventually("the flood to be under way", Duration::from_secs(60), || {
            if ready.exists() {
                return Ok(true);
            }
            match running.finished() {
                true => Ok(false),
                false => Err("not ready".to_owned()),
            }
        });
        if !started {
            panic!(
                "the flood ended before it was under way:\n{}",
                running.wait()
            );
        }
        Flood {
            running: Some(running),
            ready,
            stop,
        }
    }

    /// Asks the flood to stop and returns what it printed (its last line,
    /// as JSON).
    pub fn stop(mut self) -> Value {
        std::fs::write(&self.stop, b"").expect("write the stop file");
        let out = self.running.take().expect("running").wait();
        out.expect_success("the flood");
        let _ = std::fs::remove_file(&self.ready);
        out.json()
    }
}

/// The Python prelude flood scripts share: `ready()`, `stopped()`, and
/// HTTP/2 frames and HPACK literals written by hand (a client library
/// would refuse to send what a flood sends).
pub const PRELUDE: &str = r#"
import json, os, socket, ssl, struct, sys, time
READY, STOP = sys.argv[1], sys.argv[2]
ARGS = sys.argv[3:]
def ready():
    open(READY, "w").close()
def stopped():
    return os.path.exists(STOP)
def frame(kind, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", sid) + payload
def hint(n, bits, first=0):
    top = (1 << bits) - 1
    if n < top:
        return bytes([first | n])
    out = [first | top]
    n -= top
    while n >= 128:
        out.append((n & 127) | 128)
        n >>= 7
    out.append(n)
    return bytes(out)
def hstr(s):
    return hint(len(s), 7) + s
def literal(name, value):
    return b"\x00" + hstr(name) + hstr(value)
def request(host, path=b"/echo"):
    # :method GET, :scheme https (static table), then :authority and :path.
    return b"\x82\x87" + literal(b":authority", host) + literal(b":path", path)
def tls(port, name, cafile, alpn):
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols([alpn])
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    s = ctx.wrap_socket(raw, server_hostname=name)
    assert s.selected_alpn_protocol() == alpn, s.selected_alpn_protocol()
    return s
def h2(port, name, cafile):
    s = tls(port, name, cafile, "h2")
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0))
    return s
class H2:
    # One connection's frames as they come (read without blocking between
    # sends): counts by kind, the GOAWAY code, whether it closed.
    def __init__(self, s):
        self.s, self.buf, self.goaway, self.closed, self.kinds = s, b"", None, False, {}
    def send(self, data):
        try:
            self.s.settimeout(10)
            self.s.sendall(data)
        except OSError:
            self.closed = True
    def poll(self, wait=0.0):
        if self.closed:
            return
        try:
            self.s.settimeout(wait)
            while True:
                data = self.s.recv(65536)
                if not data:
                    self.closed = True
                    return
                self.buf += data
                while len(self.buf) >= 9:
                    n = int.from_bytes(self.buf[:3], "big")
                    if len(self.buf) < 9 + n:
                        break
                    kind = self.buf[3]
                    self.kinds[kind] = self.kinds.get(kind, 0) + 1
                    if kind == 7:
                        self.goaway = int.from_bytes(self.buf[13:17], "big")
                    self.buf = self.buf[9 + n:]
                self.s.settimeout(0.0)
        except (socket.timeout, ssl.SSLWantReadError, BlockingIOError):
            pass
        except OSError:
            self.closed = True
    def close(self):
        self.s.close()
"#;

/// An intercepting world (see [`World::start_with`]) whose sandbox `sb1`
/// floods, with a second sandbox `sb2` under the same policy, the
/// well-behaved one.
pub fn world_with_good_sandbox(
    ca: &TestCa,
    names: &[&str],
    policy: Value,
    tweak: impl FnOnce(&mut DaemonBuilder),
) -> (World, TestCgroup) {
    let mut good = None;
    let world = World::start_with(ca, names, policy, |builder| {
        let cgroup = builder.cgroup("sb2");
        builder.sandbox("sb2", &cgroup, None, "p");
        tweak(builder);
        good = Some(cgroup);
    });
    (world, good.expect("sb2"))
}

/// Open file descriptors of process `pid`.
pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The flooded upstream (`api.test`) and the well-behaved sandbox's
/// (`good.test`), both on 127.0.0.1, and an intercepting policy allowing
/// both; so what reached the flooded one is counted apart.
pub fn two_upstreams(ca: &TestCa) -> (HttpsUpstream, HttpsUpstream, Value) {
    let flooded = HttpsUpstream::v4(&["api.test"], ca);
    let good = HttpsUpstream::v4(&["good.test"], ca);
    let policy = intercepting_policy(
        &[
            "api.test".to_owned(),
            "good.test".to_owned(),
            format!("127.0.0.0/8:{}", flooded.port()),
            format!("127.0.0.0/8:{}", good.port()),
        ],
        serde_json::json!({}),
    );
    (flooded, good, policy)
}
