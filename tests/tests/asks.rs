//! Destinations the network policy asks a person about (`network.unmatched:
//! ask`, `ask_out`), end to end: a connection to a name no rule covers
//! parks at its first bytes and reaches nothing until a person decides
//! through `sluice approvals`; "always" writes the destination into the
//! sandbox's overlay (listed, kept across a restart, removable), "reject"
//! and expiry refuse naming the asking rule. Overlays edited directly
//! (`sluice sandbox policy`) decide at once and are audited.

use serde_json::{Value, json};
use sluice_e2e::{
    HttpsUpstream, TestCa, WAIT, in_cgroup,
    interception::{Curl, World},
    wait_until,
};

/// Every destination is asked about; loopback (where the test upstream
/// listens) is not refused as internal, so only the person decides.
fn asking(timeout_ms: u64, ca: &TestCa) -> World {
    let policy = json!({ "network": {
        "unmatched": "ask",
        "ssrf_guard": false,
        "decide_without_decryption": false,
    }});
    World::start_with(ca, &["api.test", "other.test"], policy, |builder| {
        builder.config_key("approvals", json!({ "timeout_ms": timeout_ms }));
    })
}

fn parked(world: &World) -> Vec<Value> {
    let out = world.daemon.cli(&["approvals", "ls", "--json"]);
    out.expect_success("sluice approvals ls");
    serde_json::from_slice(&out.stdout).expect("a JSON array")
}

/// The one card parked, once it is.
fn card(world: &World) -> Value {
    let mut card = Value::Null;
    wait_until("the connection parked", WAIT, || {
        card = parked(world).pop().unwrap_or(Value::Null);
        !card.is_null()
    });
    card
}

fn cli(world: &World, args: &[&str]) -> String {
    let out = world.daemon.cli(args);
    out.expect_success(&args.join(" "));
    out.stdout_str()
}

#[test]
fn asked_connections_park_until_a_person_decides() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test", "other.test"], &ca);
    let port = upstream.port();
    let mut world = asking(60_000, &ca);
    let https = |world: &World, name: &str| {
        let url = format!("https://{name}:{port}/echo");
        in_cgroup(&world.sb1).spawn(&world.curl_https(&url, &[]))
    };

    // Parked at its ClientHello: the card names the destination, the
    // asking rule and the program; nothing reached the upstream.
    let waiting = https(&world, "api.test");
    let asked = card(&world);
    assert_eq!(
        (
            &asked["kind"],
            &asked["host"],
            &asked["port"],
            &asked["rule"]
        ),
        (
            &json!("network"),
            &json!("api.test"),
            &json!(port),
            &json!("p:network.unmatched")
        ),
        "{asked}"
    );
    assert_eq!(asked["process"]["comm"], "curl", "{asked}");
    assert_eq!(upstream.request_count(), 0, "forwarded while parked");

    // Approved always: this connection goes on, and the overlay has it.
    let id = asked["id"].as_str().expect("id");
    cli(
        &world,
        &["approvals", "approve", id, "--always", "--by", "alice"],
    );
    let curl = Curl::parse(waiting.wait());
    assert_eq!(curl.code, 200, "{curl}");
    let target = format!("api.test:{port}");
    let listed = cli(&world, &["policy", "overlay", "ls"]);
    assert!(
        listed.contains(&target) && listed.contains("alice"),
        "{listed}"
    );
    world
        .daemon
        .wait_audit("the overlay entry audited", 1, |e| {
            e["event"] == "overlay" && e["verdict"] == "add" && e["rule"] == target.as_str()
        });

    // Later connections pass unasked, by the overlay's rule, after a
    // restart too.
    world.daemon.restart();
    let curl = Curl::parse(https(&world, "api.test").wait());
    assert_eq!(curl.code, 200, "{curl}");
    world.daemon.wait_audit("allowed by the overlay", 1, |e| {
        e["event"] == "connection" && e["rule"] == "p:overlay.allow_out[0]"
    });
    assert!(parked(&world).is_empty());

    // Rejected: 403 naming the asking rule (plain HTTP shows the body),
    // and the upstream saw nothing.
    let before = upstream.request_count();
    let url = format!("http://other.test:{port}/echo");
    let waiting = in_cgroup(&world.sb1).spawn(&world.curl_https(&url, &[]));
    let asked = card(&world);
    cli(
        &world,
        &["approvals", "reject", asked["id"].as_str().expect("id")],
    );
    let curl = Curl::parse(waiting.wait());
    assert_eq!(curl.code, 403, "{curl}");
    let body = curl.json();
    assert_eq!(
        (&body["reason"], &body["rule"]),
        (&json!("approval_rejected"), &json!("p:network.unmatched")),
        "{body}"
    );
    assert_eq!(upstream.request_count(), before);

    // Removed from the overlay: asked again.
    cli(&world, &["policy", "overlay", "rm", "sb1", &target]);
    let waiting = https(&world, "api.test");
    let asked = card(&world);
    assert_eq!(asked["host"], "api.test", "{asked}");
    cli(
        &world,
        &["approvals", "reject", asked["id"].as_str().expect("id")],
    );
    assert_ne!(Curl::parse(waiting.wait()).code, 200);

    // Edited directly: allowed at once, listed by `sandbox policy`.
    let out = cli(
        &world,
        &["sandbox", "policy", "sb1", "--add-allow", "other.test"],
    );
    assert!(out.contains("other.test"), "{out}");
    let curl = Curl::parse(https(&world, "other.test").wait());
    assert_eq!(curl.code, 200, "{curl}");
    let bad = world
        .daemon
        .cli(&["sandbox", "policy", "sb1", "--add-allow", "not a name"]);
    assert!(!bad.status.success(), "{bad}");
    assert!(bad.stderr_str().contains("overlay.allow_out"), "{bad}");
}

#[test]
fn an_unanswered_ask_fails_closed() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test"], &ca);
    let port = upstream.port();
    let world = asking(300, &ca);
    let url = format!("http://api.test:{port}/echo");
    let curl = Curl::parse(
        in_cgroup(&world.sb1)
            .spawn(&world.curl_https(&url, &[]))
            .wait(),
    );
    assert_eq!(curl.code, 403, "{curl}");
    let body = curl.json();
    assert_eq!(
        (&body["reason"], &body["rule"]),
        (&json!("approval_expired"), &json!("p:network.unmatched")),
        "{body}"
    );
    assert_eq!(upstream.request_count(), 0);
}
