//! Relayed connections move in the kernel: plain TCP and passthrough TLS go
//! socket to socket through the relay sockhash (counted under
//! `sluice_relay_connections_total{path="kernel"}`), byte-exact both ways,
//! with half-closes passed on, counted bytes, and revocation cutting them;
//! `relay.in_kernel: false` copies them in user space instead.

use serde_json::json;
use sluice_e2e::{
    Daemon, DaemonBuilder, EchoServer, HttpsUpstream, Rule, in_cgroup,
    interception::{World, allow_loopback, intercepting_policy},
    pki::TestCa,
    scripts,
    stream_body::pattern_sha256,
    tls_scripts::{self, removing_the_sandbox_cuts},
};

const KERNEL: &str = "sluice_relay_connections_total{path=\"kernel\"}";
const USER: &str = "sluice_relay_connections_total{path=\"user\"}";

/// Pseudo-random bytes starting with a NUL (neither TLS nor HTTP: relayed
/// unread), every byte value first.
fn payload(len: usize) -> Vec<u8> {
    let mut payload: Vec<u8> = (0..=255u8).collect();
    let mut x: u32 = 0x9e37_79b9;
    payload.extend((0..len).map(|_| {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (x >> 24) as u8
    }));
    payload
}

/// Sends `payload` from the sandbox to the echo server, half-closes, and
/// reads the echo to its end (the echo server closes only after the
/// sandbox's FIN reached it, so both half-closes are passed on).
fn echo_through(daemon: &Daemon, sandbox: &sluice_e2e::TestCgroup, upstream: &EchoServer) {
    let payload = payload(8 << 20);
    let input = daemon.dir().join("payload.bin");
    let output = daemon.dir().join("echoed.bin");
    std::fs::write(&input, &payload).expect("write payload");
    let out = in_cgroup(sandbox).python(
        scripts::SEND_FILE,
        &[
            "127.0.0.1",
            &upstream.port().to_string(),
            &input.to_string_lossy(),
            &output.to_string_lossy(),
        ],
    );
    out.expect_success("8 MiB through sluice and back, half-closed");
    let echoed = std::fs::read(&output).expect("read echoed bytes");
    assert!(echoed == payload, "echo differs: {} bytes", echoed.len());
    let conns = upstream.wait_closed(1, sluice_e2e::WAIT);
    assert!(
        conns[0].received == payload,
        "upstream received {} bytes",
        conns[0].received.len()
    );
    let len = payload.len() as f64;
    daemon.wait_metric_at_least("sluice_relay_bytes_total{direction=\"upstream\"}", len);
    daemon.wait_metric_at_least("sluice_relay_bytes_total{direction=\"downstream\"}", len);
}

#[test]
fn plain_tcp_moves_in_the_kernel_byte_exact_with_half_close() {
    let upstream = EchoServer::v4();
    let (daemon, sb1) = Daemon::with_sandbox(vec![Rule::exact(upstream.addr())]);
    let programs = daemon.status().programs;
    assert!(
        programs.iter().any(|p| p == "sluice_relay_verdict"),
        "the relay verdict program is listed: {programs:?}"
    );
    echo_through(&daemon, &sb1, &upstream);
    assert_eq!(daemon.metric(KERNEL), Some(1.0), "{}", daemon.metrics());
    assert_eq!(daemon.metric(USER), None, "{}", daemon.metrics());
}

#[test]
fn relay_in_kernel_false_copies_in_user_space() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .policy("default", vec![Rule::exact(upstream.addr())])
        .sandbox("sb1", &sb1, None, "default")
        .config_key("relay", json!({ "in_kernel": false }));
    let daemon = builder.start();
    echo_through(&daemon, &sb1, &upstream);
    assert_eq!(daemon.metric(USER), Some(1.0), "{}", daemon.metrics());
    assert_eq!(daemon.metric(KERNEL), None, "{}", daemon.metrics());
}

/// TLS the policy does not decrypt: 16 MiB down and up, checked by SHA-256
/// at the far end, through the kernel path.
#[test]
fn passthrough_tls_moves_in_the_kernel_byte_exact() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["pass.test"], &ca);
    let policy = intercepting_policy(
        &allow_loopback("pass.test", upstream.port()),
        json!({ "decide_without_decryption": true }),
    );
    let world = World::start(&ca, &["pass.test"], policy);
    let n: u64 = 16 * 1024 * 1024 + 4321;
    let spec = |mode: &str| {
        json!({
            "mode": mode, "n": n, "host": "pass.test", "port": upstream.port(),
            "cafile": world.upstream_ca,
        })
    };
    let timeout = std::time::Duration::from_secs(120);
    let down = world.python(tls_scripts::BULK_TRANSFER, &spec("download"), timeout);
    down.expect_success("passthrough download");
    assert_eq!(down.json()["sha256"], pattern_sha256(n), "{down}");
    let up = world.python(tls_scripts::BULK_TRANSFER, &spec("upload"), timeout);
    up.expect_success("passthrough upload");
    let upload = upstream
        .requests()
        .into_iter()
        .find(|r| r.path == "/upload")
        .expect("upload recorded");
    assert_eq!(upload.body_len, n);
    assert_eq!(
        upload.body_sha256,
        up.json()["sha256"].as_str().map(str::to_owned)
    );
    assert_eq!(world.metric(KERNEL), 2.0, "{}", world.daemon.metrics());
    assert_eq!(world.metric(USER), 0.0);
    world
        .daemon
        .wait_metric_at_least("sluice_relay_bytes_total{direction=\"upstream\"}", n as f64);
    world.daemon.wait_metric_at_least(
        "sluice_relay_bytes_total{direction=\"downstream\"}",
        n as f64,
    );
}

/// A kernel-relayed stream whose sandbox is removed is cut at once.
#[test]
fn a_revoked_kernel_relay_is_cut() {
    let daemon = removing_the_sandbox_cuts(
        "a kernel-relayed stream",
        |upstream| json!({ "host": "127.0.0.1", "port": upstream.port() }),
    );
    assert_eq!(daemon.metric(KERNEL), Some(1.0), "{}", daemon.metrics());
}

/// Connections each ordering test opens: the handover of a direction to
/// the kernel happens once per connection, so each one is a try.
const CONNECTIONS: usize = 50;

/// Sandbox side of the ordering tests. `up FILE N`: N connections, each
/// sending FILE's bytes as chunks of 1 to 64 bytes, one send per chunk
/// from the moment it connects (no delay: each a segment of its own), while
/// reading the echo; then a half-close, and the echo must be FILE's bytes
/// exactly. `down FILE N`: N connections, each sending one NUL (so the
/// connection is relayed unread; no half-close, which would leave it to
/// the user-space copy) and reading until EOF what the upstream sends at
/// once: FILE's bytes exactly. Prints one JSON line.
const CHUNKS: &str = r#"
import json, socket, sys, threading
mode, src, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
host, port = sys.argv[4], int(sys.argv[5])
data = open(src, "rb").read()
sizes, at, k = [], 0, 0
while at < len(data):
    size = min(1 + (k * 37) % 64, len(data) - at)
    sizes.append(size)
    at += size
    k += 1
bad = []
for i in range(n):
    s = socket.create_connection((host, port), timeout=15)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    got, errors = [], []
    def read():
        try:
            while True:
                c = s.recv(1 << 16)
                if not c:
                    return
                got.append(c)
        except OSError as e:
            errors.append(repr(e))
    reader = threading.Thread(target=read)
    reader.start()
    try:
        if mode == "up":
            at = 0
            for size in sizes:
                s.sendall(data[at:at + size])
                at += size
            s.shutdown(socket.SHUT_WR)
        else:
            s.sendall(b"\0")
    except OSError as e:
        errors.append(repr(e))
    reader.join()
    s.close()
    got = b"".join(got)
    if errors or got != data:
        first = next((j for j in range(min(len(got), len(data))) if got[j] != data[j]), None)
        bad.append({"conn": i, "received": len(got), "first_difference": first, "errors": errors})
print(json.dumps({"ok": not bad, "connections": n, "sizes": len(sizes), "bad": bad[:5]}))
sys.exit(0 if not bad else 1)
"#;

/// Runs [`CHUNKS`] in `sandbox` against `port`, `CONNECTIONS` times.
fn chunks(
    daemon: &Daemon,
    sandbox: &sluice_e2e::TestCgroup,
    mode: &str,
    data: &[u8],
    port: u16,
) -> sluice_e2e::Output {
    let file = daemon.dir().join(format!("chunks-{mode}.bin"));
    std::fs::write(&file, data).expect("write chunks");
    in_cgroup(sandbox)
        .timeout(std::time::Duration::from_secs(120))
        .python(
            CHUNKS,
            &[
                mode,
                &file.to_string_lossy(),
                &CONNECTIONS.to_string(),
                "127.0.0.1",
                &port.to_string(),
            ],
        )
}

/// The handover of each direction to the kernel keeps the byte order: a
/// sandbox that writes small chunks back to back from the moment it
/// connects (while the upstream echoes them) gets everything to the
/// upstream, and back, in order. Bytes sent right after the daemon read
/// the ones before them could once be redirected ahead of those.
#[test]
fn back_to_back_chunks_keep_their_order_upstream() {
    let upstream = EchoServer::v4();
    let (daemon, sb1) = Daemon::with_sandbox(vec![Rule::exact(upstream.addr())]);
    let data = payload(48 * 1024);
    let out = chunks(&daemon, &sb1, "up", &data, upstream.port());
    // What the upstream got first: a reordering shows there, the echo
    // would only repeat it.
    let conns = upstream.wait_closed(CONNECTIONS, sluice_e2e::WAIT);
    for (i, conn) in conns.iter().enumerate() {
        let first = conn.received.iter().zip(&data).position(|(a, b)| a != b);
        assert!(
            conn.received == data,
            "connection {i}: upstream received {} bytes, not the chunks in order \
             (first difference at {first:?})\n{out}",
            conn.received.len()
        );
    }
    out.expect_success("every byte in order on every connection, and back");
    relayed_in_the_kernel(&daemon);
}

/// The same downstream: an upstream that writes small chunks back to back
/// the moment it accepts, then half-closes; the sandbox reads them all, in
/// order, and the end.
#[test]
fn back_to_back_chunks_keep_their_order_downstream() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind upstream");
    let addr = listener.local_addr().expect("local_addr");
    let data = payload(48 * 1024);
    let served = data.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let data = served.clone();
            std::thread::spawn(move || send_chunks(stream, &data));
        }
    });
    let (daemon, sb1) = Daemon::with_sandbox(vec![Rule::exact(addr)]);
    chunks(&daemon, &sb1, "down", &data, addr.port())
        .expect_success("every byte in order on every connection");
    relayed_in_the_kernel(&daemon);
}

/// Writes `data` as chunks of 1 to 64 bytes (one write each, no delay),
/// half-closes, and reads what the sandbox sent until its end.
fn send_chunks(mut stream: std::net::TcpStream, data: &[u8]) {
    use std::io::{Read as _, Write as _};
    let _ = stream.set_nodelay(true);
    let mut at = 0;
    for k in 0.. {
        if at == data.len() {
            break;
        }
        let size = (1 + (k * 37) % 64).min(data.len() - at);
        if stream.write_all(&data[at..at + size]).is_err() {
            return;
        }
        at += size;
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut sink = [0u8; 1024];
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
}

/// Every connection was relayed, most of them in the kernel: a sandbox
/// that sent everything and its FIN before the daemon got to it is copied
/// in user space (the kernel takes only established sockets).
fn relayed_in_the_kernel(daemon: &Daemon) {
    sluice_e2e::eventually("every connection counted", sluice_e2e::WAIT, || {
        let kernel = daemon.metric(KERNEL).unwrap_or(0.0);
        let user = daemon.metric(USER).unwrap_or(0.0);
        if kernel + user >= CONNECTIONS as f64 {
            Ok(())
        } else {
            Err(format!("kernel {kernel}, user {user}"))
        }
    });
    let kernel = daemon.metric(KERNEL).unwrap_or(0.0);
    assert!(
        kernel >= (CONNECTIONS / 2) as f64,
        "{kernel} of {CONNECTIONS} in the kernel\n{}",
        daemon.metrics()
    );
}
