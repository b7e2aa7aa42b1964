//! The policy engine end to end: names allowed and denied from a sandbox,
//! the SSRF guard, DNS policy and tunnelling caps, and hot reload.

use std::net::{IpAddr, Ipv4Addr};

use serde_json::{Value, json};
use sluice_e2e::{
    DaemonBuilder, HttpServer, WAIT, in_cgroup, run, scripts, sluice_bin, wait_until, write_policy,
};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// curl that fails on HTTP errors too (a 403 from Sluice is a failure).
fn curl(url: &str) -> Vec<String> {
    ["curl", "-sS", "--fail", "--max-time", "10", "-g", url]
        .map(str::to_owned)
        .to_vec()
}

/// curl that resolves `name` to `ip` itself, as after a DNS answer it got,
/// and prints the body and then the status code on a line of its own.
fn curl_resolved(name: &str, port: u16, ip: &str, path: &str) -> Vec<String> {
    let url = format!("http://{name}:{port}{path}");
    [
        "curl",
        "-sS",
        "--max-time",
        "10",
        "-w",
        "\n%{http_code}",
        &url,
    ]
    .map(str::to_owned)
    .into_iter()
    .chain(["--resolve".into(), format!("{name}:{port}:{ip}")])
    .collect()
}

fn denials<'a>(events: &'a [Value], reason: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["verdict"] == "deny" && e["reason"] == reason)
        .collect()
}

#[test]
fn allowed_name_is_reached_by_name_and_denied_name_gets_403_naming_the_rule() {
    let upstream = HttpServer::v4();
    let port = upstream.port();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .host("allowed.test", &[LOCALHOST])
        .host("denied.test", &[LOCALHOST])
        .policy_doc(
            "agent",
            json!({ "network": {
                // The upstream is on loopback, which the SSRF guard refuses
                // unless an address rule names it explicitly. A CIDR is less
                // specific than the exact names, so the names still decide.
                "allow_out": ["allowed.test", format!("127.0.0.0/8:{port}")],
                "deny_out": ["denied.test", "ALL_TRAFFIC"],
            }}),
        )
        .sandbox("sb1", &sb1, None, "agent");
    let daemon = builder.start();

    // By name: curl resolves through Sluice's DNS, then connects.
    let out = in_cgroup(&sb1).run(&curl(&format!("http://allowed.test:{port}/by-name")));
    out.expect_success("curl by name");
    assert_eq!(upstream.connection_count(), 1);

    // The denied name does not even resolve...
    let out = in_cgroup(&sb1).run(&curl(&format!("http://denied.test:{port}/")));
    out.expect_failure("denied name must not resolve");
    // ...and reached by address with its Host, it gets a 403 naming the rule.
    let out = in_cgroup(&sb1).run(&curl_resolved("denied.test", port, "127.0.0.1", "/x"));
    out.expect_success("curl gets an HTTP answer");
    let text = out.stdout_str();
    let (body, code) = text.rsplit_once('\n').expect("body and code");
    assert_eq!(code, "403", "{out}");
    let body: Value = serde_json::from_str(body).expect("JSON body");
    assert_eq!(body["rule"], "agent:network.deny_out[0]", "{body}");
    assert_eq!(body["reason"], "denied_by_rule", "{body}");
    assert_eq!(
        upstream.connection_count(),
        1,
        "the denied request never left"
    );

    // Over TLS the same name is reset (no HTTP to answer with).
    let out = in_cgroup(&sb1).python(
        scripts::TLS_HELLO,
        &["127.0.0.1", &port.to_string(), "denied.test"],
    );
    assert_eq!(out.json()["result"], "reset", "{out}");

    let events = daemon.wait_audit("two denials by deny_out[0]", 2, |e| {
        e["event"] == "connection" && e["rule"] == "agent:network.deny_out[0]"
    });
    assert!(events.iter().any(|e| e["sni"] == "denied.test"));
    assert!(events.iter().any(|e| e["host"] == "denied.test"));
    daemon.wait_metric_at_least(
        "sluice_connections_total{verdict=\"deny\",reason=\"denied_by_rule\"}",
        2.0,
    );
}

#[test]
fn names_resolving_to_internal_addresses_are_refused_unless_the_cidr_is_allowed() {
    let upstream = HttpServer::v4();
    let port = upstream.port();
    let mut builder = DaemonBuilder::new();
    let (guarded, opened) = (builder.cgroup("guarded"), builder.cgroup("opened"));
    builder
        .host("internal.test", &[LOCALHOST])
        .host("metadata.test", &["169.254.169.254".parse().expect("ip")])
        .policy_doc(
            "guarded",
            json!({ "network": { "allow_out": ["internal.test", "metadata.test"] } }),
        )
        .policy_doc(
            "opened",
            json!({ "network": { "allow_out": ["internal.test", format!("127.0.0.0/8:{port}")] } }),
        )
        .sandbox("guarded", &guarded, None, "guarded")
        .sandbox("opened", &opened, None, "opened");
    let daemon = builder.start();

    let out = in_cgroup(&guarded).run(&curl(&format!("http://internal.test:{port}/")));
    out.expect_failure("a loopback answer for an allowed name");
    let out = in_cgroup(&guarded).run(&curl("http://metadata.test/latest/meta-data/"));
    out.expect_failure("the metadata address for an allowed name");
    let events = daemon.wait_audit("two SSRF refusals", 2, |e| {
        e["event"] == "connection" && e["reason"] == "ssrf" && e["sandbox"] == "guarded"
    });
    assert!(
        events
            .iter()
            .all(|e| e["rule"] == "guarded:network.ssrf_guard"),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| e["dst"] == "169.254.169.254:80"),
        "{events:?}"
    );
    assert_eq!(upstream.connection_count(), 0);

    // The same name, with the CIDR allowed explicitly: through.
    in_cgroup(&opened)
        .run(&curl(&format!("http://internal.test:{port}/")))
        .expect_success("explicit CIDR allow");
    assert_eq!(upstream.connection_count(), 1);
}

#[test]
fn a_changed_dns_answer_never_redirects_a_connection_to_a_refused_address() {
    // rebind.test answers 127.0.0.2 (allowed explicitly); a rebinding
    // attacker's second answer would be 127.0.0.1 (not allowed). Sluice
    // checks and dials the address the sandbox connects to, whatever the
    // name says, so the rebound connection is refused and the upstream on
    // 127.0.0.1 hears nothing.
    let good = HttpServer::start("127.0.0.2".parse().expect("ip"));
    let port = good.port();
    let bad = HttpServer::start(LOCALHOST);
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .host("rebind.test", &["127.0.0.2".parse().expect("ip")])
        .policy_doc(
            "p",
            json!({ "network": {
                "allow_out": ["rebind.test", format!("127.0.0.2:{port}")],
                "deny_out": ["ALL_TRAFFIC"],
            }}),
        )
        .sandbox("sb1", &sb1, None, "p");
    let daemon = builder.start();

    let out = in_cgroup(&sb1).run(&curl_resolved("rebind.test", port, "127.0.0.2", "/"));
    assert!(out.stdout_str().ends_with("\n200"), "first answer\n{out}");
    let out = in_cgroup(&sb1).run(&curl_resolved("rebind.test", bad.port(), "127.0.0.1", "/"));
    assert!(out.stdout_str().ends_with("\n403"), "rebound answer\n{out}");
    daemon.wait_audit("refusal of the rebound connection", 1, |e| {
        e["verdict"] == "deny" && e["dst"] == format!("127.0.0.1:{}", bad.port())
    });
    assert_eq!(good.connection_count(), 1);
    assert_eq!(bad.connection_count(), 0);
}

#[test]
fn dns_for_denied_names_is_nxdomain_or_refused_and_tunnels_are_cut_off() {
    let mut builder = DaemonBuilder::new();
    let (nx, refused) = (builder.cgroup("nx"), builder.cgroup("refused"));
    builder
        .host("allowed.test", &[LOCALHOST])
        .host("denied.test", &[LOCALHOST])
        .policy_doc(
            "nx",
            json!({ "network": {
                "allow_out": ["allowed.test", "*.tunnel.test"],
                "deny_out": ["ALL_TRAFFIC"],
                "dns": { "max_unique_subdomains_per_minute": 10 },
            }}),
        )
        .policy_doc(
            "refused",
            json!({ "network": {
                "allow_out": ["allowed.test"],
                "deny_out": ["ALL_TRAFFIC"],
                "dns": { "denied_answer": "refused" },
            }}),
        )
        .sandbox("nx", &nx, None, "nx")
        .sandbox("refused", &refused, None, "refused");
    let daemon = builder.start();
    let query = |cgroup, name: &str| -> Value {
        let out = in_cgroup(cgroup).python(scripts::DNS_QUERY, &["127.0.0.53", "53", name]);
        out.expect_success("DNS query");
        out.json()
    };

    assert_eq!(query(&nx, "allowed.test")["answers"], json!(["127.0.0.1"]));
    assert_eq!(query(&nx, "denied.test")["rcode"], 3, "NXDOMAIN");
    assert_eq!(query(&refused, "denied.test")["rcode"], 5, "REFUSED");

    // A tunnel: ever-new subdomains of one domain. The first ten get their
    // (NXDOMAIN) answer, then the cap refuses.
    let out = in_cgroup(&nx).python(
        scripts::DNS_STREAM,
        &["127.0.0.53", "53", "tunnel.test", "25"],
    );
    out.expect_success("query stream");
    let codes: Vec<Value> = serde_json::from_value(out.json()).expect("codes");
    assert!(codes[..10].iter().all(|c| *c == json!(3)), "{codes:?}");
    assert!(codes[10..].iter().all(|c| *c == json!(5)), "{codes:?}");
    // Ordinary lookups of a known name keep working.
    assert_eq!(query(&nx, "allowed.test")["rcode"], 0);

    let events = daemon.audit();
    assert!(
        !denials(&events, "dns_denied_name").is_empty(),
        "{events:?}"
    );
    let tunnel = denials(&events, "dns_unique_subdomains");
    assert!(!tunnel.is_empty(), "{events:?}");
    assert_eq!(tunnel[0]["sandbox"], "nx");
    daemon.wait_metric_at_least(
        "sluice_dns_refusals_total{reason=\"dns_unique_subdomains\"}",
        15.0,
    );
}

#[test]
fn dns_over_tcp_gets_the_same_policy() {
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .host("allowed.test", &[LOCALHOST])
        .host("denied.test", &[LOCALHOST])
        .policy_doc(
            "p",
            json!({ "network": { "allow_out": ["allowed.test"], "deny_out": ["ALL_TRAFFIC"] } }),
        )
        .sandbox("sb1", &sb1, None, "p");
    let _daemon = builder.start();
    let dig = |name: &str| {
        in_cgroup(&sb1).run(&["dig", "+tcp", "+time=3", "+tries=1", "@127.0.0.53", name])
    };
    let out = dig("allowed.test");
    out.expect_success("dig +tcp");
    assert!(out.stdout_str().contains("status: NOERROR"), "{out}");
    assert!(out.stdout_str().contains("127.0.0.1"), "{out}");
    let out = dig("denied.test");
    assert!(out.stdout_str().contains("status: NXDOMAIN"), "{out}");
}

#[test]
fn policy_edits_apply_without_restart_and_broken_edits_keep_the_old_policy() {
    let upstream = HttpServer::v4();
    let target = upstream.addr().to_string();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    let allowing = json!({ "network": { "allow_out": [target], "deny_out": ["ALL_TRAFFIC"] } });
    builder
        .policy_doc("p", allowing.clone())
        .sandbox("sb1", &sb1, None, "p");
    let daemon = builder.start();
    let url = format!("http://{target}/");
    let args = curl(&url);
    let reaches = || in_cgroup(&sb1).run(&args).success();
    assert!(reaches(), "allowed at start");
    assert_eq!(daemon.metric("sluice_policy_synchronized"), Some(1.0));

    // Deny it: new connections are refused, no restart.
    let denying = json!({ "network": { "deny_out": ["ALL_TRAFFIC"] } });
    write_policy(&daemon.policy_dir(), "p", &denying);
    wait_until("the edit to take effect", WAIT, || !reaches());
    daemon.wait_metric_at_least("sluice_policy_reloads_total{result=\"ok\"}", 1.0);

    // A broken edit: the previous (denying) policy stays, the gauge drops.
    std::fs::write(
        daemon.policy_dir().join("p.yaml"),
        "network:\n  allow_out: [\"*bad\"]\n  bogus: 1\n",
    )
    .expect("write broken policy");
    wait_until("the gauge to drop", WAIT, || {
        daemon.metric("sluice_policy_synchronized") == Some(0.0)
    });
    assert!(!reaches(), "still the previous policy");

    // Fixed: synchronized again, and the fix applies.
    write_policy(&daemon.policy_dir(), "p", &allowing);
    wait_until("the fix to take effect", WAIT, || {
        daemon.metric("sluice_policy_synchronized") == Some(1.0) && reaches()
    });
}

/// Deploy tools may swap the whole policy directory (`mv`): the swap is a
/// change like any other, and edits in the new directory are seen too.
#[test]
fn a_policy_directory_swapped_whole_is_followed() {
    let upstream = HttpServer::v4();
    let target = upstream.addr().to_string();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    let allowing = json!({ "network": { "allow_out": [target], "deny_out": ["ALL_TRAFFIC"] } });
    let denying = json!({ "network": { "deny_out": ["ALL_TRAFFIC"] } });
    builder
        .policy_doc("p", allowing.clone())
        .sandbox("sb1", &sb1, None, "p");
    let daemon = builder.start();
    let args = curl(&format!("http://{target}/"));
    let reaches = || in_cgroup(&sb1).run(&args).success();
    assert!(reaches(), "allowed at start");

    let dir = daemon.policy_dir();
    let new = dir.with_extension("new");
    std::fs::create_dir(&new).expect("mkdir");
    write_policy(&new, "p", &denying);
    std::fs::rename(&dir, dir.with_extension("old")).expect("mv policies policies.old");
    std::fs::rename(&new, &dir).expect("mv policies.new policies");
    wait_until("the swapped directory to take effect", WAIT, || !reaches());

    write_policy(&dir, "p", &allowing);
    wait_until("an edit in the new directory to take effect", WAIT, reaches);
}

#[test]
fn sluice_check_passes_the_shipped_policies_and_locates_every_error() {
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies");
    let bin = sluice_bin();
    let out = run::host(
        &[bin.as_os_str(), "check".as_ref(), shipped.as_os_str()],
        WAIT,
    );
    out.expect_success("sluice check policies/");
    assert!(
        !out.stderr_str().contains("warning"),
        "{}",
        out.stderr_str()
    );

    let dir = tempfile::tempdir().expect("tempdir");
    // Valid, but its PII stage never sees HTTPS: passed, with a warning.
    // (Unset, decryption would follow the PII stage: no warning.)
    let relay = dir.path().join("relay.yaml");
    let text = "network: {decide_without_decryption: true}\npii: {enabled: true}\ndry_run: true\n";
    std::fs::write(&relay, text).expect("write");
    let out = run::host(
        &[bin.as_os_str(), "check".as_ref(), relay.as_os_str()],
        WAIT,
    );
    out.expect_success("a relay policy with content stages");
    let text = out.stderr_str();
    assert!(
        text.contains("warning: policy `relay`: dry_run, pii act on plain HTTP only"),
        "{text}"
    );
    let broken = dir.path().join("broken.yaml");
    std::fs::write(
        &broken,
        "network:\n  allow_out:\n    - \"*bad\"\n    - \"10.0.0.1/8\"\n  deny_out: [ALL_TRAFFIC]\ntransformations:\n  - {pattern: \"(\", replacement: x}\n",
    )
    .expect("write");
    let out = run::host(
        &[bin.as_os_str(), "check".as_ref(), broken.as_os_str()],
        WAIT,
    );
    out.expect_failure("broken policy");
    let text = out.stderr_str();
    let at = |line: usize| format!("{}:{line}:", broken.display());
    for line in [3, 4, 7] {
        assert!(
            text.contains(&at(line)),
            "expected an error at line {line}:\n{text}"
        );
    }
}

#[test]
fn explain_names_the_rule_that_decides_each_stage() {
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .host("allowed.test", &[LOCALHOST])
        .host("denied.test", &[LOCALHOST])
        .policy_doc(
            "p",
            json!({ "network": {
                "allow_out": ["allowed.test", "127.0.0.0/8:443"],
                "deny_out": ["denied.test", "ALL_TRAFFIC"],
            }}),
        )
        .sandbox("sb1", &sb1, None, "p");
    let daemon = builder.start();
    let config = daemon.config_path().display().to_string();
    let explain = |args: &[&str]| {
        let mut all = vec!["explain", "--config", config.as_str()];
        all.extend_from_slice(args);
        daemon.cli(&all)
    };

    let out = explain(&["--sandbox", "sb1", "https://allowed.test/v1/models"]);
    out.expect_success("explain by sandbox");
    let text = out.stdout_str();
    let network = text
        .lines()
        .find(|l| l.starts_with("network"))
        .expect("network line");
    assert!(
        network.contains("allow") && network.contains("p:network.allow_out[0]"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("dns") && l.contains("answer")),
        "{text}"
    );

    let out = explain(&["--policy", "p", "-X", "POST", "http://denied.test/x"]);
    out.expect_success("explain by policy");
    let text = out.stdout_str();
    assert!(text.contains("p:network.deny_out[0]"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("dns") && l.contains("refuse")),
        "{text}"
    );

    let out = explain(&[
        "--policy",
        "p",
        "--address",
        "169.254.169.254",
        "https://allowed.test/",
    ]);
    out.expect_success("explain with an address");
    assert!(
        out.stdout_str().contains("p:network.ssrf_guard (ssrf;"),
        "{out}"
    );
}

/// A TLS hello that offers Encrypted Client Hello may name another server
/// inside than its SNI: under `encrypted_client_hello: refuse`, one that is
/// not decrypted is reset and audited; the same hello without ECH passes.
#[test]
fn encrypted_client_hello_is_refused_where_the_policy_says_so() {
    let upstream = sluice_e2e::EchoServer::v4();
    let port = upstream.port();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .host("echo.test", &[LOCALHOST])
        .policy_doc(
            "strict",
            json!({ "network": {
                "allow_out": ["echo.test", format!("127.0.0.0/8:{port}")],
                "deny_out": ["ALL_TRAFFIC"],
                "encrypted_client_hello": "refuse",
            }}),
        )
        .sandbox("sb1", &sb1, None, "strict");
    let daemon = builder.start();
    let hello = |ech: &str| {
        let out = in_cgroup(&sb1).python(
            scripts::RAW_HELLO,
            &["127.0.0.1", &port.to_string(), "echo.test", ech],
        );
        out.expect_success("a raw ClientHello");
        out.json()["result"].clone()
    };
    assert_eq!(hello("0"), "data", "a hello without ECH is relayed");
    assert_eq!(hello("1"), "reset", "a hello offering ECH is refused");
    assert_eq!(upstream.connection_count(), 1, "the refused one never left");
    let events = daemon.wait_audit("the ECH refusal", 1, |e| {
        e["event"] == "connection" && e["reason"] == "encrypted_client_hello"
    });
    assert_eq!(
        events[0]["rule"], "strict:network.encrypted_client_hello",
        "{}",
        events[0]
    );
    assert_eq!(events[0]["sni"], "echo.test", "{}", events[0]);
}

/// `deny_out: [0.0.0.0/0]`, as the seeds write "all traffic", denies IPv6
/// too (it used to deny IPv4 only, IPv6 falling through to the default
/// allow); with a port, it keeps to IPv4.
#[test]
fn a_portless_ipv4_slash_zero_in_deny_out_denies_ipv6_too() {
    let v4 = HttpServer::v4();
    let v6 = HttpServer::v6();
    let mut builder = DaemonBuilder::new();
    let all = builder.cgroup("all");
    let web = builder.cgroup("web");
    builder
        .policy_doc(
            "all",
            // The SSRF guard off: loopback is refused only by the rule.
            json!({ "network": { "ssrf_guard": false, "deny_out": ["0.0.0.0/0"] } }),
        )
        .policy_doc(
            "web",
            json!({ "network": { "ssrf_guard": false, "deny_out": ["0.0.0.0/0:443"] } }),
        )
        .sandbox("all", &all, None, "all")
        .sandbox("web", &web, None, "web");
    let daemon = builder.start();

    for url in [
        format!("http://127.0.0.1:{}/", v4.port()),
        format!("http://[::1]:{}/", v6.port()),
    ] {
        let out = in_cgroup(&all).run(&curl(&url));
        out.expect_failure("denied by deny_out[0]");
    }
    daemon.wait_audit("both families denied by deny_out[0]", 2, |e| {
        e["event"] == "connection"
            && e["verdict"] == "deny"
            && e["rule"] == "all:network.deny_out[0]"
    });
    assert_eq!(v4.connection_count() + v6.connection_count(), 0);

    // With a port the entry keeps to IPv4 (and to that port).
    let out = in_cgroup(&web).run(&curl(&format!("http://[::1]:{}/", v6.port())));
    out.expect_success("IPv6 is not denied by 0.0.0.0/0:443");
    assert_eq!(v6.connection_count(), 1);
}
