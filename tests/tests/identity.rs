//! Identity: Sluice knows which sandbox (and session) each connection comes
//! from and where it was going, also under load; a cgroup under the root
//! that nobody registered gets EPERM for everything.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use sluice_e2e::{
    DaemonBuilder, EchoServer, Rule, TestCgroup, WAIT, in_cgroup,
    scripts::{self, hex},
};

/// One echo exchange from `cgroup` to `upstream`; panics unless echoed.
fn echo_from(cgroup: &TestCgroup, upstream: &EchoServer, payload: &str) {
    in_cgroup(cgroup)
        .python(
            scripts::TCP_PROBE,
            &[
                "127.0.0.1",
                &upstream.port().to_string(),
                &hex(payload.as_bytes()),
            ],
        )
        .expect_success(&format!(
            "echo {payload:?} from {}",
            cgroup.path().display()
        ));
}

#[test]
fn unregistered_cgroup_gets_eperm() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    let stranger = builder.cgroup("stranger");
    let deeper = stranger.child("deeper");
    builder
        .policy("default", vec![Rule::exact(upstream.addr())])
        .sandbox("sb1", &sb1, None, "default");
    let daemon = builder.start();

    // The registered sandbox reaches the upstream ...
    echo_from(&sb1, &upstream, "registered\n");

    // ... the unregistered cgroups, and those below them, reach nothing.
    for cgroup in [&stranger, &deeper] {
        let out = in_cgroup(cgroup).python(
            scripts::TCP_PROBE,
            &["127.0.0.1", &upstream.port().to_string(), &hex(b"leak\n")],
        );
        out.expect_failure("TCP connect from an unregistered cgroup");
        let result = out.json();
        assert_eq!(result["stage"], "connect", "{result}");
        assert_eq!(result["errno"], "EPERM", "{result}");

        let out = in_cgroup(cgroup).python(scripts::DNS_QUERY, &["127.0.0.1", "53", "x.test"]);
        out.expect_failure("DNS from an unregistered cgroup");
        assert_eq!(out.json()["errno"], "EPERM", "{out}");
    }
    assert_eq!(
        upstream.connection_count(),
        1,
        "only the registered sandbox's connection arrived"
    );

    daemon.wait_metric_at_least(
        "sluice_ebpf_refusals_total{reason=\"unregistered_cgroup\"}",
        1.0,
    );
    let events = daemon.wait_audit("kernel refusal for the stranger cgroup", 1, |e| {
        e["event"] == "kernel_refusal"
            && e["verdict"] == "deny"
            && e["reason"] == "unregistered_cgroup"
    });
    assert!(events[0]["cgroup"].is_string(), "{}", events[0]);
}

#[test]
fn concurrent_connections_keep_identity_and_destination() {
    const SANDBOXES: usize = 4;
    const PER_SANDBOX: usize = 50;
    let mut builder = DaemonBuilder::new();
    builder.sniff_timeout_ms(10_000);
    let mut sandboxes = Vec::new();
    for i in 0..SANDBOXES {
        let id = format!("sb{i}");
        let upstream = EchoServer::v4();
        let cgroup = builder.cgroup(&id);
        let policy = format!("only-{id}");
        builder
            .policy(&policy, vec![Rule::exact(upstream.addr())])
            .sandbox(&id, &cgroup, None, &policy);
        sandboxes.push((id, cgroup, upstream));
    }
    let daemon = builder.start();

    let outputs: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = sandboxes
            .iter()
            .map(|(id, cgroup, upstream)| {
                scope.spawn(move || {
                    in_cgroup(cgroup).timeout(WAIT * 4).python(
                        scripts::MANY_CONNECTIONS,
                        &[
                            "127.0.0.1",
                            &upstream.port().to_string(),
                            id,
                            &PER_SANDBOX.to_string(),
                        ],
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread"))
            .collect()
    });
    for ((id, _, _), out) in sandboxes.iter().zip(&outputs) {
        out.expect_success(&format!("{PER_SANDBOX} concurrent connections from {id}"));
    }

    for (id, _, upstream) in &sandboxes {
        let conns = upstream.wait_closed(PER_SANDBOX, WAIT);
        let got: BTreeSet<String> = conns
            .iter()
            .map(|c| String::from_utf8_lossy(&c.received).into_owned())
            .collect();
        let want: BTreeSet<String> = (0..PER_SANDBOX).map(|n| format!("{id} {n}\n")).collect();
        assert_eq!(conns.len(), PER_SANDBOX, "connections at {id}'s upstream");
        assert_eq!(got, want, "payloads at {id}'s upstream");
    }

    let total = SANDBOXES * PER_SANDBOX;
    let allows = daemon.wait_audit("every connection allowed", total, |e| {
        e["event"] == "connection" && e["verdict"] == "allow"
    });
    assert_eq!(
        allows.len(),
        total,
        "exactly one allow event per connection"
    );
    let mut per_sandbox: BTreeMap<String, usize> = BTreeMap::new();
    for event in &allows {
        let sandbox = event["sandbox"].as_str().unwrap_or_default();
        let (_, _, upstream) = sandboxes
            .iter()
            .find(|(id, _, _)| id == sandbox)
            .unwrap_or_else(|| panic!("allow event for an unknown sandbox: {event}"));
        assert_eq!(
            event["dst"],
            upstream.addr_string(),
            "original destination of {event}"
        );
        *per_sandbox.entry(sandbox.to_owned()).or_default() += 1;
    }
    for (id, _, _) in &sandboxes {
        assert_eq!(
            per_sandbox.get(id),
            Some(&PER_SANDBOX),
            "allow events of {id}"
        );
    }
    let audit = daemon.audit();
    let denies: Vec<&Value> = audit.iter().filter(|e| e["verdict"] == "deny").collect();
    assert!(denies.is_empty(), "no refusals expected: {denies:?}");
}

#[test]
fn sessions_and_deeper_cgroups_are_identified() {
    // One upstream per client, so the destination tells the clients apart.
    let to_session = EchoServer::v4();
    let to_deep = EchoServer::v4();
    let to_side = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    let session = sb1.child("sess1");
    let deep = session.child("deep");
    let side = sb1.child("side");
    let side_deeper = side.child("deeper");
    builder
        .policy(
            "default",
            vec![
                Rule::exact(to_session.addr()),
                Rule::exact(to_deep.addr()),
                Rule::exact(to_side.addr()),
            ],
        )
        .sandbox("sb1", &sb1, None, "default");
    let daemon = builder.start();

    daemon
        .cli(&[
            "session",
            "add",
            "sb1",
            "s1",
            "--cgroup",
            &session.path_str(),
        ])
        .expect_success("sluice session add");
    let listed = daemon.sandboxes();
    let sb = listed
        .iter()
        .find(|s| s["id"] == "sb1")
        .unwrap_or_else(|| panic!("sb1 not listed: {listed:?}"));
    assert!(
        sb["sessions"].to_string().contains("s1"),
        "session s1 listed under sb1: {sb}"
    );

    echo_from(&session, &to_session, "session\n");
    echo_from(&deep, &to_deep, "deep\n");
    echo_from(&side_deeper, &to_side, "side\n");

    let allow_to = |upstream: &EchoServer| {
        let dst = upstream.addr_string();
        let events = daemon.wait_audit(&format!("allow → {dst}"), 1, |e| {
            e["event"] == "connection" && e["verdict"] == "allow" && e["dst"] == dst.as_str()
        });
        events[0].clone()
    };
    let event = allow_to(&to_session);
    assert_eq!(event["sandbox"], "sb1", "{event}");
    assert_eq!(event["session"], "s1", "{event}");
    // The nearest registered ancestor of sess1/deep is the session.
    let event = allow_to(&to_deep);
    assert_eq!(event["sandbox"], "sb1", "{event}");
    assert_eq!(event["session"], "s1", "{event}");
    // side/deeper is below the sandbox, in no session.
    let event = allow_to(&to_side);
    assert_eq!(event["sandbox"], "sb1", "{event}");
    assert!(event["session"].is_null(), "no session expected: {event}");

    // Once the session is removed, its cgroup belongs to the sandbox itself.
    daemon
        .cli(&["session", "rm", "sb1", "s1"])
        .expect_success("sluice session rm");
    echo_from(&session, &to_session, "after rm\n");
    let events = daemon.wait_audit("second allow → session upstream", 2, |e| {
        e["event"] == "connection"
            && e["verdict"] == "allow"
            && e["dst"] == to_session.addr_string()
    });
    assert_eq!(events[1]["sandbox"], "sb1", "{}", events[1]);
    assert!(
        events[1]["session"].is_null(),
        "session removed: {}",
        events[1]
    );
}

#[test]
fn sandbox_cannot_reach_admin_socket_or_metrics() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .policy("default", vec![Rule::exact(upstream.addr())])
        .sandbox("sb1", &sb1, None, "default");
    let daemon = builder.start();
    let bin = sluice_e2e::sluice_bin().to_string_lossy().into_owned();
    let sock = daemon.admin_socket().to_string_lossy().into_owned();

    // The same command works from the host ...
    daemon.status();
    // ... but a root process inside the sandbox is refused by the admin API.
    let out = in_cgroup(&sb1).run(&[bin.as_str(), "status", "--admin-socket", &sock]);
    out.expect_failure("sluice status from inside a sandbox");
    // 125 would be the harness failing to enter the cgroup, not a refusal.
    assert_ne!(out.status.code(), Some(125), "{out}");
    assert!(!out.stderr.is_empty(), "a refusal says why:\n{out}");
    let out = in_cgroup(&sb1).run(&[
        bin.as_str(),
        "sandbox",
        "add",
        "escape",
        "--cgroup",
        "sb1",
        "--admin-socket",
        &sock,
    ]);
    out.expect_failure("sluice sandbox add from inside a sandbox");
    assert!(
        daemon.sandboxes().iter().all(|s| s["id"] != "escape"),
        "a sandbox registered something"
    );

    // Metrics are a loopback TCP destination like any other: not allowed.
    let url = format!("http://{}/metrics", daemon.metrics_addr());
    in_cgroup(&sb1)
        .run(&["curl", "-sS", "--fail", "--max-time", "10", &url])
        .expect_failure("curl to the metrics endpoint from a sandbox");
    daemon.wait_audit("deny sb1 → metrics", 1, |e| {
        e["event"] == "connection"
            && e["verdict"] == "deny"
            && e["sandbox"] == "sb1"
            && e["dst"] == daemon.metrics_addr().to_string()
    });
}

/// Registrations and removals may arrive together from the control plane.
/// A registration awaits its namespace's listeners between entering the
/// registry and the kernel; a removal in that gap must not leave a kernel
/// entry that nothing owns. Whatever order they ran in, the identity map
/// ends holding exactly the cgroups the registry lists.
#[test]
fn concurrent_registrations_and_removals_leave_the_kernel_as_the_registry() {
    let (daemon, _sb1) = sluice_e2e::Daemon::with_sandbox(vec![]);
    let netns = sluice_e2e::TestNetns::new();
    let netns = netns.path().to_str().expect("utf-8 path").to_owned();
    let ids: Vec<String> = (0..12).map(|i| format!("race{i}")).collect();
    let _cgroups: Vec<TestCgroup> = ids.iter().map(|id| daemon.root().child(id)).collect();
    std::thread::scope(|scope| {
        for id in &ids {
            let (daemon, netns) = (&daemon, &netns);
            scope.spawn(move || {
                daemon.cli(&[
                    "sandbox", "add", id, "--cgroup", id, "--netns", netns, "--policy", "default",
                ])
            });
            scope.spawn(move || daemon.cli(&["sandbox", "rm", id]));
        }
    });
    let status = daemon.cli(&["status"]);
    status.expect_success("sluice status");
    let status: Value = serde_json::from_str(&status.stdout_str()).expect("status JSON");
    let registered = &status["registered_cgroups"];
    let maps = status["maps"].as_array().expect("maps");
    let identity = maps
        .iter()
        .find(|m| m["name"] == "SLUICE_IDENTITY")
        .map(|m| &m["entries"])
        .expect("the identity map");
    assert_eq!(identity, registered, "{status}");
}
