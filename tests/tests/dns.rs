//! DNS under default deny with address rules: a name no rule names is
//! answered by Sluice and never asked upstream, where whoever serves its
//! zone would read it (issue 41, part 3), unless the policy opts in with
//! `dns.resolve_unlisted`, which audits every such query and holds it to
//! a low unique-name cap. Sluice's resolver asks a test DNS server that
//! records every question.

use serde_json::{Value, json};
use sluice_e2e::{DaemonBuilder, TestDns, WAIT, in_cgroup, scripts, wait_until};

/// `HOST PORT DOMAIN N`: N fresh names `<i><random hex>.DOMAIN`, each asked
/// as A then AAAA, one at a time. Prints `[{name, type, rcode, answers}]`.
const BURST: &str = r#"
import json, random, socket, struct, sys
host, port, domain, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
token = "%08x" % random.getrandbits(32)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
out = []
for i in range(n):
    name = "%02d%s.%s" % (i, token, domain)
    for qtype in (1, 28):
        qid = random.randrange(65536)
        q = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
        s.sendto(struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q + struct.pack(">HH", qtype, 1), (host, port))
        while True:
            data, _ = s.recvfrom(4096)
            if struct.unpack(">H", data[:2])[0] == qid:
                break
        flags, _, an = struct.unpack(">HHH", data[2:8])
        out.append({"name": name, "type": qtype, "rcode": flags & 0xF, "answers": an})
print(json.dumps(out))
"#;

const ZONE: &str = "tunnel.example";
const NAMES: usize = 40;
/// `dns.max_unique_unlisted_per_minute`'s default.
const UNLISTED_CAP: usize = 10;
const NOERROR: u64 = 0;
const NXDOMAIN: u64 = 3;
const REFUSED: u64 = 5;

/// A policy allowing 127.0.0.1 by address and `listed.example` by name,
/// denying everything else; `dns` is its `network.dns` section.
fn policy(dns: Value) -> Value {
    json!({ "network": {
        "allow_out": ["127.0.0.1/32", "listed.example"],
        "deny_out": ["ALL_TRAFFIC"],
        "dns": dns,
    }})
}

/// One answer of [`BURST`].
#[derive(Debug, serde::Deserialize)]
struct Answered {
    name: String,
    #[serde(rename = "type")]
    qtype: u16,
    rcode: u64,
    answers: u64,
}

fn burst(cgroup: &sluice_e2e::TestCgroup) -> Vec<Answered> {
    let out = in_cgroup(cgroup).python(BURST, &["127.0.0.53", "53", ZONE, &NAMES.to_string()]);
    out.expect_success("a burst of fresh names");
    let answered: Vec<Answered> = serde_json::from_value(out.json()).expect("answers");
    assert_eq!(answered.len(), 2 * NAMES, "{answered:?}");
    answered
}

/// How many queries one audit event stands for: itself, and those folded
/// into it ("N more ... for this reason and domain ...", "N more for this
/// reason under other domains ...").
fn stands_for(event: &Value) -> u64 {
    let detail = event["detail"].as_str().unwrap_or_default();
    1 + detail
        .split("; ")
        .filter_map(|part| part.split_once(" more ")?.0.parse::<u64>().ok())
        .sum::<u64>()
}

fn is_dns(event: &Value, sandbox: &str, reason: &str) -> bool {
    event["event"] == "dns" && event["sandbox"] == sandbox && event["reason"] == reason
}

#[test]
fn unlisted_names_reach_no_resolver_unless_the_policy_resolves_them() {
    let upstream = TestDns::start();
    let mut builder = DaemonBuilder::new();
    let (closed, open) = (builder.cgroup("closed"), builder.cgroup("open"));
    builder
        .config_key(
            "resolver",
            json!({ "hosts": {}, "nameservers": [upstream.addr()], "system": false }),
        )
        .policy_doc("closed", policy(json!({})))
        .policy_doc("open", policy(json!({ "resolve_unlisted": true })))
        .sandbox("closed", &closed, None, "closed")
        .sandbox("open", &open, None, "open");
    let daemon = builder.start();

    // Default deny: every fresh name is NXDOMAIN, answered by Sluice.
    let answered = burst(&closed);
    assert!(
        answered
            .iter()
            .all(|a| a.rcode == NXDOMAIN && a.answers == 0),
        "{answered:?}"
    );
    // A listed name is asked upstream: the resolver is reachable, and
    // answers arrive only after any question left, so none did.
    let out =
        in_cgroup(&closed).python(scripts::DNS_QUERY, &["127.0.0.53", "53", "listed.example"]);
    out.expect_success("a listed name");
    assert_eq!(out.json()["answers"], json!(["127.0.0.1"]), "{out}");
    assert_eq!(
        upstream.asked_under(ZONE),
        [],
        "no unlisted name left Sluice"
    );
    assert_eq!(upstream.asked_under("listed.example").len(), 1);
    let refused = daemon.wait_audit("the unlisted names refused", 1, |e| {
        is_dns(e, "closed", "dns_unlisted_name")
    });
    assert_eq!(refused[0]["verdict"], "deny", "{}", refused[0]);
    assert_eq!(
        refused[0]["rule"], "closed:network.deny_out[0]",
        "{}",
        refused[0]
    );
    daemon.wait_metric_at_least(
        "sluice_dns_refusals_total{reason=\"dns_unlisted_name\"}",
        (2 * NAMES) as f64,
    );

    // resolve_unlisted: asked upstream, answers filtered by the address
    // rules (127.0.0.1 is allowed), until the low unique-name cap.
    let answered = burst(&open);
    let (first, rest) = answered.split_at(2 * UNLISTED_CAP);
    for a in first {
        let want = if a.qtype == 1 { 1 } else { 0 };
        assert_eq!((a.rcode, a.answers), (NOERROR, want), "{a:?}");
    }
    assert!(rest.iter().all(|a| a.rcode == REFUSED), "{rest:?}");
    let mut heard: Vec<(String, u16)> = upstream
        .asked_under(ZONE)
        .into_iter()
        .map(|asked| (asked.name, asked.qtype))
        .collect();
    heard.sort();
    let mut resolved: Vec<(String, u16)> =
        first.iter().map(|a| (a.name.clone(), a.qtype)).collect();
    resolved.sort();
    assert_eq!(
        heard, resolved,
        "exactly the names under the cap were asked"
    );
    daemon.wait_audit("the cap refusing the rest", 1, |e| {
        is_dns(e, "open", "dns_unique_subdomains")
    });

    // Every forwarded query is audited, folded: the last folds are told
    // with the next event of their kind, so ask a name again (no new name
    // for the cap) until the events account for every query admitted.
    let again = &first[0].name;
    let mut admitted = 2 * UNLISTED_CAP as u64;
    wait_until(
        "audit events accounting for every resolved query",
        WAIT,
        || {
            let out = in_cgroup(&open).python(scripts::DNS_QUERY, &["127.0.0.53", "53", again]);
            out.expect_success("a name asked again");
            assert_eq!(out.json()["rcode"], 0, "{out}");
            admitted += 1;
            let told: u64 = daemon
                .audit()
                .iter()
                .filter(|e| is_dns(e, "open", "resolved_unlisted"))
                .map(stands_for)
                .sum();
            assert!(told <= admitted, "{told} told of {admitted}");
            told == admitted
        },
    );
    let events = daemon.audit();
    let resolved: Vec<&Value> = events
        .iter()
        .filter(|e| is_dns(e, "open", "resolved_unlisted"))
        .collect();
    assert!(resolved.len() >= 2, "{resolved:?}");
    for event in resolved {
        assert_eq!(event["verdict"], "allow", "{event}");
        assert_eq!(
            event["rule"], "open:network.dns.resolve_unlisted",
            "{event}"
        );
    }
}

/// An explicit-proxy sandbox's CONNECT names are looked up through its
/// own DNS gate: under a wildcard its token and policy both grant, fresh
/// subdomains meet the unique-name cap as a steered sandbox's queries do,
/// so a tunnel's names stop reaching the name server at the cap; the
/// tunnels past it are refused (403 `dns_refused`), audited.
#[test]
fn explicit_proxy_names_meet_the_sandboxs_dns_caps() {
    const CAP: usize = 5;
    let upstream = TestDns::start();
    upstream.nxdomain(ZONE);
    let keys = tempfile::tempdir().expect("tempdir");
    let sluice = sluice_e2e::sluice_bin().to_string_lossy().into_owned();
    let dir = keys.path().to_string_lossy().into_owned();
    let run = |args: &[&str]| sluice_e2e::run::host(args, WAIT);
    run(&[&sluice, "token", "keygen", "--dir", &dir]).expect_success("sluice token keygen");
    let mut builder = DaemonBuilder::new();
    builder
        .config_key(
            "resolver",
            json!({ "hosts": {}, "nameservers": [upstream.addr()], "system": false }),
        )
        .config_key(
            "explicit_proxy",
            json!({
                "listen": "127.0.0.1:0",
                "public_key_file": keys.path().join("token.pub"),
                "sandboxes": [{ "id": "vm-1", "policy": "p" }],
            }),
        )
        .policy_doc(
            "p",
            json!({ "network": {
                "allow_out": [format!("*.{ZONE}")],
                "deny_out": ["ALL_TRAFFIC"],
                "dns": { "max_unique_subdomains_per_minute": CAP },
            }}),
        );
    let daemon = builder.start();
    let status = daemon.cli(&["status"]);
    status.expect_success("sluice status");
    let status: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    let proxy = format!(
        "http://{}",
        status["explicit_proxy_addr"].as_str().expect("addr")
    );
    let key = keys.path().join("token.key").to_string_lossy().into_owned();
    let grant = format!("*.{ZONE}:443");
    let token = run(&[
        &sluice,
        "token",
        "mint",
        "--key",
        &key,
        "--sandbox",
        "vm-1",
        "--connection",
        &grant,
    ]);
    token.expect_success("sluice token mint");
    let user = format!("vm:{}", token.stdout_str().trim());

    let tag = format!("{:08x}", std::process::id());
    let mut refused = 0;
    for i in 0..NAMES / 4 {
        let url = format!("https://{i:02}{tag}.{ZONE}/");
        let curl = [
            "curl",
            "-sS",
            "--max-time",
            "10",
            "--proxy",
            &proxy,
            "--proxy-user",
            &user,
            &url,
        ];
        let out = sluice_e2e::run::host(&curl, WAIT);
        if out.stderr_str().contains(" 403") {
            refused += 1;
        }
    }
    let names: std::collections::BTreeSet<String> = upstream
        .asked_under(ZONE)
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert!(!names.is_empty(), "the first names are looked up");
    assert!(
        names.len() <= CAP,
        "past the cap no name is asked: {names:?}"
    );
    assert_eq!(refused, NAMES / 4 - names.len(), "the others are refused");
    daemon.wait_audit("the capped lookups", 1, |e| {
        e["event"] == "explicit_proxy" && e["reason"] == "dns_refused"
    });
}
