//! Learn, then lock: a sandbox run under `mode: learn` reaches what it
//! needs (audited `would_deny`), `sluice policy suggest` turns the audit
//! log into a policy, `sluice check` accepts it, and enforced it allows
//! exactly what the run reached.

use serde_json::json;
use sluice_e2e::{
    HttpsUpstream, TestCa, WAIT,
    interception::{World, curl_args},
    run::host,
    sluice_bin,
};

const VISITED: [&str; 5] = [
    "one.test",
    "two.test",
    "three.test",
    "four.test",
    "five.test",
];

#[test]
fn a_learn_mode_run_becomes_a_policy_that_allows_exactly_what_it_did() {
    let plain = HttpsUpstream::plain_v4();
    let port = plain.port();
    let mut names = VISITED.to_vec();
    names.push("unvisited.test");
    // Nothing allowed; learn mode lets the catch-all's refusals through.
    let learn = json!({
        "mode": "learn",
        "network": { "deny_out": ["ALL_TRAFFIC"], "ssrf_guard": false },
    });
    let world = World::start(&TestCa::upstream(), &names, learn);
    let url = |name: &str| format!("http://{name}:{port}/echo");

    // The "agent": one script touching five hosts.
    let script: Vec<String> = VISITED
        .iter()
        .map(|name| format!("curl -sS -o /dev/null -w '%{{http_code}}\\n' {}", url(name)))
        .collect();
    let out = sluice_e2e::in_cgroup(&world.sb1).run(&["sh", "-c", &script.join(" && ")]);
    out.expect_success("the learn-mode run");
    assert_eq!(
        out.stdout_str().lines().collect::<Vec<_>>(),
        ["200"; 5],
        "{out}"
    );
    world
        .daemon
        .wait_audit("each host let through, would_deny", 5, |e| {
            e["event"] == "connection"
                && e["verdict"] == "would_deny"
                && e["rule"] == "p:network.deny_out[0]"
                && e["process"]["comm"] == "curl"
        });

    // Suggest, check, enforce.
    let bin = sluice_bin().to_string_lossy().into_owned();
    let audit = world.daemon.audit_path().to_string_lossy().into_owned();
    let suggested = host(
        &[
            &bin,
            "policy",
            "suggest",
            "--audit",
            &audit,
            "--sandbox",
            "sb1",
            "--since",
            "1h",
        ],
        WAIT,
    );
    suggested.expect_success("sluice policy suggest");
    let mut policy = suggested.stdout_str();
    for name in VISITED {
        assert!(
            policy.contains(&format!("- {{to: \"{name}\", ports: [{port}]}}")),
            "{name} in\n{policy}"
        );
    }
    assert!(!policy.contains("unvisited"), "{policy}");
    // The test's upstream is on loopback, which the SSRF guard refuses.
    policy.push_str("  ssrf_guard: false\n");
    let file = world.daemon.dir().join("suggested.yaml");
    std::fs::write(&file, &policy).expect("write the suggestion");
    let file = file.to_string_lossy().into_owned();
    host(&[&bin, "check", &file], WAIT).expect_success("sluice check of the suggestion");
    std::fs::copy(&file, world.daemon.policy_dir().join("p.yaml")).expect("install it");
    world
        .daemon
        .wait_metric_at_least("sluice_policy_reloads_total{result=\"ok\"}", 1.0);

    for name in VISITED {
        let curl = world.curl(&curl_args(None, &url(name), &[]));
        assert_eq!(curl.code, 200, "{name}: {curl}");
    }
    // By address, naming the host: the sandbox's DNS now refuses the name.
    let direct = format!("http://127.0.0.1:{port}/echo");
    let curl = world.curl(&curl_args(None, &direct, &["-H", "Host: unvisited.test"]));
    assert_eq!(curl.code, 403, "{curl}");
    assert_eq!(curl.json()["reason"], "denied_by_rule", "{curl}");
}
