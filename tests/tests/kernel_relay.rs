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
    tls_scripts::{self, across_a_change},
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
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sbx = builder.cgroup("sbx");
    builder.policy("default", vec![Rule::exact(upstream.addr())]);
    let daemon = builder.start();
    let cgroup = sbx.path_str();
    let add = [
        "sandbox", "add", "sbx", "--cgroup", &cgroup, "--policy", "default",
    ];
    daemon.cli(&add).expect_success("sluice sandbox add");
    let out = across_a_change(
        &sbx,
        daemon.dir(),
        tls_scripts::STREAM_ACROSS_A_CHANGE,
        json!({ "host": "127.0.0.1", "port": upstream.port() }),
        || {
            daemon
                .cli(&["sandbox", "rm", "sbx"])
                .expect_success("sluice sandbox rm");
        },
    );
    out.expect_success("a kernel-relayed stream across its sandbox's removal");
    daemon.wait_metric_at_least(
        "sluice_connections_total{verdict=\"closed\",reason=\"revoked\"}",
        1.0,
    );
    assert_eq!(daemon.metric(KERNEL), Some(1.0), "{}", daemon.metrics());
}
