//! Bad input: configs with typos, registrations of cgroups that do not
//! exist, and clients that misbehave. Each ends in a clear error or refusal,
//! never in a crash or a flood of logs.

use std::net::{IpAddr, Ipv4Addr};

use sluice_e2e::{
    Daemon, EchoServer, Rule, WAIT, in_cgroup, require_root, run, scripts, sluice_bin, wait_until,
};

/// `sluice check --config FILE` on `text`; returns (exit code, all output).
fn check(text: &str) -> (Option<i32>, String, std::path::PathBuf, tempfile::TempDir) {
    require_root();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sluice.yaml");
    let policies = dir.path().join("policies");
    std::fs::create_dir(&policies).expect("policy dir");
    std::fs::write(
        policies.join("default.yaml"),
        "network:\n  allow_out: [\"127.0.0.1:80\"]\n  deny_out: [ALL_TRAFFIC]\n",
    )
    .expect("write policy");
    let text = text.replace("POLICY_DIR", &policies.display().to_string());
    std::fs::write(&path, text).expect("write config");
    let out = run::host(
        &[
            sluice_bin().as_os_str(),
            "check".as_ref(),
            "--config".as_ref(),
            path.as_os_str(),
        ],
        WAIT,
    );
    assert!(!out.timed_out, "sluice check hung\n{out}");
    let all = format!("{}{}", out.stdout_str(), out.stderr_str());
    (out.status.code(), all, path, dir)
}

#[test]
fn check_accepts_a_valid_config() {
    let (code, output, _, _dir) = check(
        "listen:\n  tcp_port: 0\npolicy_dir: POLICY_DIR\nsandboxes:\n  - {id: sb1, cgroup: sb1, policy: default}\n",
    );
    assert_eq!(code, Some(0), "valid config rejected:\n{output}");
    assert_eq!(output.trim(), "ok: 1 policies");
}

#[test]
fn check_reports_typo_with_file_line_and_field() {
    let (code, output, path, _dir) =
        check("# sluice config with a typo\nlisten:\n  tcp_prot: 0\npolicy_dir: POLICY_DIR\n");
    assert_eq!(code, Some(1), "typo must fail with exit 1:\n{output}");
    let location = format!("{}:3:", path.display());
    assert!(
        output.contains(&location),
        "expected `{location}` in:\n{output}"
    );
    assert!(output.contains("tcp_prot"), "field named in:\n{output}");

    // Deeper in the file, inside a list entry.
    let (code, output, path, _dir) = check(
        "policy_dir: POLICY_DIR\nsandboxes:\n  - id: sb1\n    cgroup: sb1\n    polcy: default\n",
    );
    assert_eq!(code, Some(1), "typo must fail with exit 1:\n{output}");
    let location = format!("{}:5:", path.display());
    assert!(
        output.contains(&location),
        "expected `{location}` in:\n{output}"
    );
    assert!(output.contains("polcy"), "field named in:\n{output}");
}

#[test]
fn sandbox_add_with_missing_cgroup_fails_naming_the_path() {
    let upstream = EchoServer::v4();
    let (daemon, _sb1) = Daemon::with_sandbox(vec![Rule::exact(upstream.addr())]);

    let missing = "/does/not/exist";
    let out = daemon.cli(&["sandbox", "add", "x", "--cgroup", missing]);
    out.expect_failure("sandbox add with a cgroup that does not exist");
    let all = format!("{}{}", out.stdout_str(), out.stderr_str());
    assert!(all.contains(missing), "message must name {missing}:\n{out}");

    let relative = "no-such-cgroup";
    let out = daemon.cli(&["sandbox", "add", "y", "--cgroup", relative]);
    out.expect_failure("sandbox add with a relative cgroup that does not exist");
    let all = format!("{}{}", out.stdout_str(), out.stderr_str());
    assert!(
        all.contains(relative),
        "message must name {relative}:\n{out}"
    );

    let ids: Vec<String> = daemon
        .sandboxes()
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(ids, ["sb1"], "failed adds must not register anything");
}

#[test]
fn silent_and_instantly_closing_clients_cost_at_most_one_log_line_each() {
    // Only a name allows the upstream, so Sluice must wait for the client's
    // first bytes (an address match alone would let server-first protocols
    // through at once, with nothing to sniff).
    let upstream = EchoServer::v4();
    let mut builder = sluice_e2e::DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .sniff_timeout_ms(1000)
        .host("upstream.test", &[IpAddr::V4(Ipv4Addr::LOCALHOST)])
        .policy(
            "default",
            vec![Rule::host("upstream.test", &[upstream.port()])],
        )
        .sandbox("sb1", &sb1, None, "default");
    let daemon = builder.start();
    let port = upstream.port().to_string();
    let deny = "sluice_connections_total{verdict=\"deny\"}";
    let total = "sluice_connections_total";

    // A client that connects and says nothing: refused at the sniff timeout.
    let before = daemon.stderr_lines().len();
    let mut silent = in_cgroup(&sb1).spawn_python(scripts::SILENT_CLIENT, &["127.0.0.1", &port]);
    daemon.wait_metric_at_least(deny, 1.0);
    daemon.wait_audit("deny of the silent client", 1, |e| {
        e["event"] == "connection"
            && e["verdict"] == "deny"
            && e["sandbox"] == "sb1"
            && e["dst"] == upstream.addr_string()
    });
    wait_until("the silent client to be disconnected", WAIT, || {
        silent.finished()
    });
    let out = silent.wait();
    out.expect_success("silent client");
    assert!(
        out.stdout_str().contains("\"connected\": true"),
        "the silent client connected:\n{out}"
    );
    assert_eq!(
        upstream.connection_count(),
        0,
        "a silent client never reaches the upstream"
    );
    let lines = daemon.stderr_lines();
    assert!(
        lines.len() - before <= 1,
        "a silent client cost {} log lines:\n{}",
        lines.len() - before,
        lines[before..].join("\n")
    );

    // A client that connects and closes at once.
    let counted = daemon.metric(total).unwrap_or(0.0);
    let before = daemon.stderr_lines().len();
    in_cgroup(&sb1)
        .python(scripts::TCP_PROBE, &["127.0.0.1", &port])
        .expect_success("connect and close");
    daemon.wait_metric_at_least(total, counted + 1.0);
    wait_until("no active connections", WAIT, || {
        daemon.metric("sluice_active_connections") == Some(0.0)
    });
    let lines = daemon.stderr_lines();
    assert!(
        lines.len() - before <= 1,
        "a client that closed at once cost {} log lines:\n{}",
        lines.len() - before,
        lines[before..].join("\n")
    );
    assert!(daemon.status().ready, "the daemon is still serving");
}
