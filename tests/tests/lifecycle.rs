//! Lifecycle: registering sandboxes at run time, failing closed while the
//! daemon is down (pinned programs stay attached), and resuming after a
//! restart without re-registering and without stacking programs.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sluice_e2e::{
    Daemon, DaemonBuilder, EchoServer, Rule, TestCgroup, in_cgroup,
    scripts::{self, hex},
    tls_scripts::{self, across_a_change, removing_the_sandbox_cuts},
    write_policy,
};

/// The attach types Sluice uses, each exactly once on the root.
const ATTACH_TYPES: [&str; 10] = [
    "post_bind4",
    "post_bind6",
    "connect4",
    "connect6",
    "sendmsg4",
    "sendmsg6",
    "recvmsg4",
    "recvmsg6",
    "sock_create",
    "sock_ops",
];

fn assert_one_program_per_attach_type(daemon: &Daemon, when: &str) {
    let attached: BTreeMap<String, usize> = daemon.attached_programs();
    for kind in ATTACH_TYPES {
        assert_eq!(
            attached.get(kind),
            Some(&1),
            "{when}: expected exactly one {kind} program on the root, bpftool shows {attached:?}"
        );
    }
    for (kind, count) in &attached {
        assert_eq!(
            *count, 1,
            "{when}: {count} {kind} programs attached: {attached:?}"
        );
    }
}

/// Connect, send, expect the echo; returns the probe's JSON result.
fn probe(cgroup: &TestCgroup, upstream: &EchoServer, payload: &str) -> (bool, Value) {
    let out = in_cgroup(cgroup).python(
        scripts::TCP_PROBE,
        &[
            "127.0.0.1",
            &upstream.port().to_string(),
            &hex(payload.as_bytes()),
        ],
    );
    (out.success(), out.json())
}

fn allowed_from(daemon: &Daemon, sandbox: &str, upstream: &EchoServer, n: usize) {
    let dst = upstream.addr_string();
    daemon.wait_audit(&format!("{n} allow events {sandbox} → {dst}"), n, |e| {
        e["event"] == "connection"
            && e["verdict"] == "allow"
            && e["sandbox"] == sandbox
            && e["dst"] == dst.as_str()
    });
}

#[test]
fn restart_after_kill9_resumes_steering_without_bypass() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    let sb2 = builder.cgroup("sb2");
    let stranger = builder.cgroup("stranger");
    builder
        .policy("default", vec![Rule::exact(upstream.addr())])
        .sandbox("sb1", &sb1, None, "default");
    let mut daemon = builder.start();
    assert_one_program_per_attach_type(&daemon, "after the first start");

    // sb2 is added at run time (relative path), so only state_dir knows it.
    daemon
        .cli(&[
            "sandbox", "add", "sb2", "--cgroup", "sb2", "--policy", "default",
        ])
        .expect_success("sluice sandbox add sb2");
    for (cgroup, id) in [(&sb1, "sb1"), (&sb2, "sb2")] {
        let (ok, result) = probe(cgroup, &upstream, &format!("{id} before\n"));
        assert!(ok, "{id} before the crash: {result}");
        allowed_from(&daemon, id, &upstream, 1);
    }
    assert_eq!(upstream.connection_count(), 2);

    daemon.kill9();

    // Down: pins keep the programs attached, so sandboxes fail closed.
    let pins = std::fs::read_dir(daemon.bpffs())
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(
        pins > 0,
        "pins under {} survive kill -9",
        daemon.bpffs().display()
    );
    for (cgroup, id) in [(&sb1, "sb1"), (&sb2, "sb2")] {
        let (ok, result) = probe(cgroup, &upstream, &format!("{id} while down\n"));
        assert!(!ok, "{id} must not connect while sluice is down: {result}");
        assert_eq!(result["stage"], "connect", "{id}: {result}");
        assert_eq!(result["errno"], "ECONNREFUSED", "{id}: {result}");
    }
    let (ok, result) = probe(&stranger, &upstream, "stranger while down\n");
    assert!(
        !ok && result["errno"] == "EPERM",
        "unregistered while down: {result}"
    );
    assert_eq!(
        upstream.connection_count(),
        2,
        "nothing may reach the upstream while sluice is down"
    );

    daemon.restart();
    assert_one_program_per_attach_type(&daemon, "after restart");
    let ids: Vec<Value> = daemon.sandboxes().iter().map(|s| s["id"].clone()).collect();
    assert!(
        ids.contains(&Value::from("sb1")) && ids.contains(&Value::from("sb2")),
        "both sandboxes known after restart: {ids:?}"
    );
    for (cgroup, id) in [(&sb1, "sb1"), (&sb2, "sb2")] {
        let (ok, result) = probe(cgroup, &upstream, &format!("{id} after\n"));
        assert!(ok, "{id} after restart: {result}");
        allowed_from(&daemon, id, &upstream, 2);
    }
    let (ok, result) = probe(&stranger, &upstream, "stranger after\n");
    assert!(
        !ok && result["errno"] == "EPERM",
        "unregistered after restart: {result}"
    );
    assert_eq!(upstream.connection_count(), 4);

    // A second restart (clean this time) still leaves one program each.
    daemon.restart();
    assert_one_program_per_attach_type(&daemon, "after a second restart");
}

/// While the daemon is down its pinned programs still steer every connect
/// to the listener's port: a sandbox that bound that port would be handed
/// its neighbours' connections. No socket under the root may bind it.
#[test]
fn no_sandbox_can_take_the_listener_port_while_the_daemon_is_down() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    let stranger = builder.cgroup("stranger");
    builder
        .policy("default", vec![Rule::exact(upstream.addr())])
        .sandbox("sb1", &sb1, None, "default");
    let mut daemon = builder.start();
    let port = daemon.tcp_port().to_string();
    daemon.kill9();

    for (cgroup, who) in [(&sb1, "sb1"), (&stranger, "an unregistered cgroup")] {
        let out = in_cgroup(cgroup).python(scripts::BIND_PORT, &[&port]);
        let result = out.json();
        for addr in ["127.0.0.1", "0.0.0.0", "::1", "::"] {
            assert_eq!(
                result[addr], "EPERM",
                "{who} bound {addr} port {port} while sluice was down: {result}"
            );
        }
        assert_eq!(
            result["any_port"], "ok",
            "{who}: other binds work: {result}"
        );
    }

    // Back up, the daemon counts and audits the refusals its programs
    // made while it was down, and steers as before.
    daemon.restart();
    daemon.wait_metric_at_least("sluice_ebpf_refusals_total{reason=\"listener_port\"}", 8.0);
    daemon.wait_audit("sb1's bind refused", 4, |e| {
        e["event"] == "kernel_refusal" && e["reason"] == "listener_port" && e["sandbox"] == "sb1"
    });
    let (ok, result) = probe(&sb1, &upstream, "after\n");
    assert!(ok, "sb1 after restart: {result}");
}

#[test]
fn sandboxes_are_added_and_removed_through_the_api() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sbx = builder.cgroup("sbx");
    builder.policy("default", vec![Rule::exact(upstream.addr())]);
    let daemon = builder.start();

    let status = daemon.status();
    assert!(status.ready);
    assert_eq!(status.sandboxes, 0, "{status:?}");
    assert_eq!(
        status.cgroup_root.as_deref(),
        Some(daemon.root().path_str().as_str()),
        "{status:?}"
    );

    let (ok, result) = probe(&sbx, &upstream, "before add\n");
    assert!(!ok && result["errno"] == "EPERM", "unregistered: {result}");

    daemon
        .cli(&[
            "sandbox",
            "add",
            "sbx",
            "--cgroup",
            &sbx.path_str(),
            "--policy",
            "default",
        ])
        .expect_success("sluice sandbox add with an absolute cgroup path");
    let listed = daemon.sandboxes();
    let entry = listed
        .iter()
        .find(|s| s["id"] == "sbx")
        .unwrap_or_else(|| panic!("sbx not listed: {listed:?}"));
    assert_eq!(entry["cgroup_id"], sbx.id(), "{entry}");
    assert_eq!(entry["policy"], "default", "{entry}");
    assert_eq!(daemon.status().sandboxes, 1);
    let table = daemon.cli(&["sandbox", "ls"]);
    table.expect_success("sluice sandbox ls");
    assert!(table.stdout_str().contains("sbx"), "{table}");

    let (ok, result) = probe(&sbx, &upstream, "after add\n");
    assert!(ok, "registered: {result}");
    allowed_from(&daemon, "sbx", &upstream, 1);

    daemon
        .cli(&["sandbox", "rm", "sbx"])
        .expect_success("sluice sandbox rm");
    let (ok, result) = probe(&sbx, &upstream, "after rm\n");
    assert!(!ok && result["errno"] == "EPERM", "removed: {result}");
    assert_eq!(upstream.connection_count(), 1);
    assert!(
        daemon.sandboxes().iter().all(|s| s["id"] != "sbx"),
        "sbx still listed after rm"
    );
}

/// Removing a sandbox must reach the connections it already has open, not
/// only its next ones: a relayed TCP stream is cut.
#[test]
fn removing_a_sandbox_cuts_its_relayed_connections() {
    removing_the_sandbox_cuts(
        "a relayed connection",
        |upstream| json!({ "host": "127.0.0.1", "port": upstream.port() }),
    );
}

/// DNS over TCP is a connection like any other: removing the sandbox ends
/// it, so a resolver socket kept open cannot outlive its sandbox.
#[test]
fn removing_a_sandbox_cuts_its_dns_over_tcp_connections() {
    removing_the_sandbox_cuts(
        "a DNS-over-TCP connection",
        |_| json!({ "host": "127.0.0.1", "dns": "example.test" }),
    );
}

/// A reload that leaves a connection's policy as it was leaves the
/// connection too: editing one policy must not cut every sandbox's streams.
#[test]
fn an_edit_to_another_policy_leaves_relayed_connections_open() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sbx = builder.cgroup("sbx");
    builder
        .policy("default", vec![Rule::exact(upstream.addr())])
        .policy("other", vec![Rule::exact(upstream.addr())])
        .sandbox("sbx", &sbx, None, "default");
    let daemon = builder.start();

    let spec = json!({ "host": "127.0.0.1", "port": upstream.port(), "stays_open": true });
    let out = across_a_change(
        &sbx,
        daemon.dir(),
        tls_scripts::STREAM_ACROSS_A_CHANGE,
        spec,
        || {
            write_policy(
                &daemon.policy_dir(),
                "other",
                &json!({ "network": { "deny_out": ["ALL_TRAFFIC"] } }),
            );
            daemon.wait_metric_at_least("sluice_policy_reloads_total{result=\"ok\"}", 1.0);
        },
    );
    out.expect_success("a relayed connection across an edit to another policy");
    let revoked = "sluice_connections_total{verdict=\"closed\",reason=\"revoked\"}";
    assert_eq!(daemon.metric(revoked).unwrap_or(0.0), 0.0);
}

/// A saved registration that cannot be restored at a start (its policy
/// missing for now) is not lost: it stays saved, comes back at the start
/// after the policy returns, and `sandbox rm` can still drop it.
#[test]
fn a_saved_registration_that_cannot_be_restored_yet_is_kept() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sbx = builder.cgroup("sbx");
    builder
        .policy("default", vec![Rule::exact(upstream.addr())])
        .policy("other", vec![Rule::exact(upstream.addr())]);
    let mut daemon = builder.start();
    let listed = |daemon: &Daemon| daemon.sandboxes().iter().any(|s| s["id"] == "sbx");
    daemon
        .cli(&[
            "sandbox",
            "add",
            "sbx",
            "--cgroup",
            &sbx.path_str(),
            "--policy",
            "other",
        ])
        .expect_success("sluice sandbox add");

    daemon.kill9();
    let file = daemon.policy_dir().join("other.yaml");
    let policy = std::fs::read(&file).expect("read policy");
    std::fs::remove_file(&file).expect("remove policy");
    daemon.restart();
    assert!(!listed(&daemon), "restored without its policy");
    let (ok, _) = probe(&sbx, &upstream, "unrestored\n");
    assert!(!ok, "an unrestored sandbox is refused");

    std::fs::write(&file, &policy).expect("write policy");
    daemon.restart();
    assert!(listed(&daemon), "back once its policy is");
    let (ok, result) = probe(&sbx, &upstream, "restored\n");
    assert!(ok, "{result}");

    // Unrestorable again, then removed while so: gone for good.
    daemon.kill9();
    std::fs::remove_file(&file).expect("remove policy");
    daemon.restart();
    daemon
        .cli(&["sandbox", "rm", "sbx"])
        .expect_success("sluice sandbox rm of an unrestored registration");
    std::fs::write(&file, &policy).expect("write policy");
    daemon.restart();
    assert!(!listed(&daemon), "removed while unrestored");
}
