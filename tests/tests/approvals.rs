//! Apps and approvals end to end: a request whose app action is `ask`
//! parks before any credential is injected; the control plane hears of it
//! through the webhook and decides through the admin API (`sluice
//! approvals`); approved requests reach the upstream with the credential,
//! rejected and expired ones get 403 naming why. Session grants, task
//! pre-approvals (never over `deny`), and a thousand parked requests that
//! leave other sandboxes' traffic flowing.

use serde_json::{Value, json};
use sluice_e2e::{
    HttpsUpstream, TestCa, TestCgroup, WAIT, eventually,
    flood::{Probe, SAMPLE, p99_during},
    in_cgroup,
    interception::{Curl, World, intercepting_policy},
    run::Running,
    wait_until,
    webhook::WebhookReceiver,
};

const SECRET: &str = "sk-live-REALsecret0123456789abcdefXYZ";

/// The catalogue: one app on api.test whose actions the upstream's `/echo`
/// tells apart by method.
fn catalogue() -> Value {
    json!([{
        "name": "tracker",
        "hosts": ["api.test"],
        "actions": [
            { "name": "issues.read", "method": "GET", "path": "/echo" },
            { "name": "issues.create", "method": "POST", "path": "/echo" },
            { "name": "repo.delete", "method": "DELETE", "path": "/**" },
        ],
    }])
}

/// An intercepting policy that allows api.test, served on loopback `port`.
fn api_policy(port: u16) -> Value {
    intercepting_policy(
        &["api.test".to_owned(), format!("127.0.0.0/8:{port}")],
        json!({}),
    )
}

/// Sandbox sb1 under a policy that gives tracker's actions auto / ask /
/// deny, with credential `api` (bearer) bound to api.test; `approvals` is
/// the daemon config's section.
fn world(ca: &TestCa, port: u16, approvals: Value) -> World {
    let apps = json!([{
        "app": "tracker",
        "actions": { "issues.read": "auto", "issues.create": "ask", "repo.delete": "deny" },
    }]);
    world_with_apps(ca, port, apps, approvals)
}

/// [`world`] with the policy's `apps` section given (`null`: none).
fn world_with_apps(ca: &TestCa, port: u16, apps: Value, approvals: Value) -> World {
    let mut policy = api_policy(port);
    policy["credentials"] = json!([{ "credential": "api" }]);
    if !apps.is_null() {
        policy["apps"] = apps;
    }
    World::start_with(ca, &["api.test"], policy, |builder| {
        let path = builder.dir().join("api.secret");
        std::fs::write(&path, format!("{SECRET}\n")).expect("write secret");
        builder
            .credential(json!({
                "name": "api",
                "source": { "file": path },
                "hosts": ["api.test"],
                "scheme": { "type": "bearer" },
            }))
            .config_key("apps", catalogue())
            .config_key("approvals", approvals);
    })
}

fn placeholder(world: &World) -> String {
    let out = world.daemon.cli(&["sandbox", "env", "sb1"]);
    out.expect_success("sluice sandbox env");
    let text = out.stdout_str();
    text.lines()
        .find_map(|l| l.strip_prefix("export API="))
        .unwrap_or_else(|| panic!("no API placeholder in:\n{text}"))
        .trim_matches('\'')
        .to_owned()
}

/// Registers session `id` of sb1 (a child cgroup), with extra CLI flags.
fn session(world: &World, id: &str, flags: &[&str]) -> TestCgroup {
    let cgroup = world.sb1.child(id);
    let path = cgroup.path_str();
    let mut args = vec!["session", "add", "sb1", id, "--cgroup", &path];
    args.extend_from_slice(flags);
    world.daemon.cli(&args).expect_success("sluice session add");
    cgroup
}

/// curl `method https://api.test:PORT/echo` with the placeholder bearer,
/// started in `cgroup` (not waited for).
fn request(world: &World, cgroup: &TestCgroup, method: &str, port: u16, bearer: &str) -> Running {
    let url = format!("https://api.test:{port}/echo");
    let args = world.curl_https(&url, &["-X", method, "-H", bearer, "-d", "{}"]);
    in_cgroup(cgroup).spawn(&args)
}

fn finish(running: Running) -> Curl {
    Curl::parse(running.wait())
}

fn parked(world: &World) -> Vec<Value> {
    let out = world.daemon.cli(&["approvals", "ls", "--json"]);
    out.expect_success("sluice approvals ls");
    match serde_json::from_slice(&out.stdout) {
        Ok(Value::Array(list)) => list,
        _ => panic!("approvals ls --json did not print a JSON array:\n{out}"),
    }
}

fn decide(world: &World, args: &[&str]) {
    let mut all = vec!["approvals"];
    all.extend_from_slice(args);
    world
        .daemon
        .cli(&all)
        .expect_success("sluice approvals decide");
}

fn authorization(upstream: &HttpsUpstream) -> Option<String> {
    upstream
        .requests()
        .last()
        .and_then(|r| r.header("authorization").map(str::to_owned))
}

/// A policy that binds the app's credential but does not list the app:
/// its requests are asked for (`apps.default` unset), never waved through
/// with the credential; `default: deny` refuses them.
#[test]
fn an_app_the_policy_does_not_list_is_never_waved_through() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test"], &ca);
    let port = upstream.port();
    let approvals = json!({ "timeout_ms": 60_000 });
    let world = world_with_apps(&ca, port, Value::Null, approvals.clone());
    let bearer = format!("Authorization: Bearer {}", placeholder(&world));
    // `issues.read`, which a policy listing the app could make auto.
    let waiting = request(&world, &world.sb1, "GET", port, &bearer);
    let mut card = Value::Null;
    wait_until("the request parked", WAIT, || {
        card = parked(&world).pop().unwrap_or(Value::Null);
        !card.is_null()
    });
    assert_eq!(
        (&card["app"], &card["action"]),
        (&json!("tracker"), &Value::Null),
        "{card}"
    );
    assert_eq!(upstream.request_count(), 0, "forwarded while parked");
    decide(&world, &["reject", card["id"].as_str().expect("id")]);
    let curl = finish(waiting);
    assert_eq!(curl.code, 403, "{curl}");
    let body = curl.json();
    assert_eq!(
        (&body["reason"], &body["rule"]),
        (&json!("approval_rejected"), &json!("p:apps.default")),
        "{body}"
    );
    assert_eq!(upstream.request_count(), 0);
    drop(world);

    let world = world_with_apps(&ca, port, json!({ "default": "deny" }), approvals);
    let bearer = format!("Authorization: Bearer {}", placeholder(&world));
    let curl = finish(request(&world, &world.sb1, "GET", port, &bearer));
    assert_eq!(curl.code, 403, "{curl}");
    let body = curl.json();
    assert_eq!(
        (&body["reason"], &body["rule"]),
        (&json!("app_action_denied"), &json!("p:apps.default")),
        "{body}"
    );
    assert_eq!(upstream.request_count(), 0);
}

#[test]
fn ask_parks_until_a_person_decides() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test"], &ca);
    let port = upstream.port();
    // The first delivery fails: the card arrives on a retry.
    let hook = WebhookReceiver::start(1);
    let world = world(
        &ca,
        port,
        json!({
            "timeout_ms": 60_000,
            "webhook": { "url": hook.url(), "initial_backoff_ms": 50 },
        }),
    );
    let bearer = format!("Authorization: Bearer {}", placeholder(&world));
    let s1 = session(&world, "s1", &[]);
    let s2 = session(&world, "s2", &[]);

    // auto: straight through, with the credential.
    let curl = finish(request(&world, &s1, "GET", port, &bearer));
    assert_eq!(curl.code, 200, "{curl}");
    assert_eq!(authorization(&upstream), Some(format!("Bearer {SECRET}")));

    // deny: 403 naming the rule, the upstream untouched.
    let before = upstream.request_count();
    let curl = finish(request(&world, &s1, "DELETE", port, &bearer));
    assert_eq!(curl.code, 403, "{curl}");
    let body = curl.json();
    assert_eq!(body["reason"], "app_action_denied", "{body}");
    assert_eq!(body["rule"], "p:apps.tracker.repo.delete", "{body}");
    assert_eq!(upstream.request_count(), before);
    // Audited with its path, never its query (which may carry what the
    // content stages would redact).
    let url = format!("https://api.test:{port}/echo?email=ana%40example.com");
    let args = world.curl_https(&url, &["-X", "DELETE", "-H", &bearer]);
    let curl = finish(in_cgroup(&s1).spawn(&args));
    assert_eq!(curl.code, 403, "{curl}");
    let denied = world.daemon.wait_audit("both deletes denied", 2, |e| {
        e["event"] == "approval" && e["reason"] == "app_action_denied"
    });
    for event in &denied {
        assert_eq!(event["detail"], "DELETE /echo", "{event}");
    }

    // ask, approved once: parked (the webhook gets the card, nothing
    // reaches the upstream), then forwarded with the real credential.
    let waiting = request(&world, &s1, "POST", port, &bearer);
    let card = hook.wait_card(1);
    assert!(
        hook.attempts() >= 2,
        "the first delivery failed and was retried"
    );
    for (key, want) in [
        ("sandbox", json!("sb1")),
        ("session", json!("s1")),
        ("app", json!("tracker")),
        ("action", json!("issues.create")),
        ("method", json!("POST")),
        ("host", json!("api.test")),
        ("path", json!("/echo")),
    ] {
        assert_eq!(card[key], want, "{key} in {card}");
    }
    let headers = card["headers"].as_array().expect("header names");
    assert!(headers.contains(&json!("authorization")), "{card}");
    assert!(!card.to_string().contains("Bearer"), "names only: {card}");
    assert_eq!(world.metric("sluice_approvals_parked"), 1.0);
    let listed = parked(&world);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], card["id"]);
    assert_eq!(
        upstream.request_count(),
        before,
        "nothing forwarded while parked"
    );
    let id = card["id"].as_str().expect("id").to_owned();
    decide(&world, &["approve", &id, "--by", "alice"]);
    let curl = finish(waiting);
    assert_eq!(curl.code, 200, "{curl}");
    assert_eq!(
        upstream.requests().last().map(|r| r.method.clone()),
        Some("POST".to_owned())
    );
    assert_eq!(authorization(&upstream), Some(format!("Bearer {SECRET}")));
    assert_eq!(world.metric("sluice_approvals_parked"), 0.0);
    world.daemon.wait_audit("the approval by alice", 1, |e| {
        e["event"] == "approval" && e["reason"] == "approve_once" && e["by"] == "alice"
    });

    // ask, rejected: 403 saying so, the upstream untouched.
    let before = upstream.request_count();
    let waiting = request(&world, &s1, "POST", port, &bearer);
    let card = hook.wait_card(2);
    decide(
        &world,
        &["reject", card["id"].as_str().expect("id"), "--by", "bob"],
    );
    let curl = finish(waiting);
    assert_eq!(curl.code, 403, "{curl}");
    assert_eq!(curl.json()["reason"], "approval_rejected");
    assert_eq!(upstream.request_count(), before);
    world.daemon.wait_audit("the rejection by bob", 1, |e| {
        e["event"] == "approval" && e["reason"] == "approval_rejected" && e["by"] == "bob"
    });

    // Approved for the session: the next matching request in s1 passes
    // without asking; in s2 it still asks.
    let waiting = request(&world, &s1, "POST", port, &bearer);
    let card = hook.wait_card(3);
    decide(
        &world,
        &["approve", "--session", card["id"].as_str().expect("id")],
    );
    assert_eq!(finish(waiting).code, 200);
    let curl = finish(request(&world, &s1, "POST", port, &bearer));
    assert_eq!(curl.code, 200, "granted for the session: {curl}");
    assert_eq!(hook.cards().len(), 3, "no card for a granted request");
    let waiting = request(&world, &s2, "POST", port, &bearer);
    let card = hook.wait_card(4);
    assert_eq!(card["session"], "s2");
    decide(&world, &["reject", card["id"].as_str().expect("id")]);
    assert_eq!(finish(waiting).code, 403);
    assert_eq!(world.metric("sluice_approvals_parked"), 0.0);
    world.daemon.wait_audit("the session grant used", 1, |e| {
        e["event"] == "approval" && e["reason"] == "session_grant" && e["session"] == "s1"
    });
}

#[test]
fn task_pre_approval_covers_ask_never_deny() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test"], &ca);
    let port = upstream.port();
    let world = world(&ca, port, json!({ "timeout_ms": 60_000 }));
    let bearer = format!("Authorization: Bearer {}", placeholder(&world));

    // An unknown app cannot be pre-approved (a typo would park forever).
    let cgroup = world.sb1.child("bad");
    let path = cgroup.path_str();
    world
        .daemon
        .cli(&[
            "session",
            "add",
            "sb1",
            "bad",
            "--cgroup",
            &path,
            "--pre-approve",
            "trackr",
        ])
        .expect_failure("unknown app");
    drop(cgroup);

    let task = session(&world, "t1", &["--pre-approve", "tracker"]);
    let listed = world.daemon.sandboxes();
    let sessions = listed[0]["sessions"].as_array().expect("sessions");
    assert!(
        sessions
            .iter()
            .any(|s| s["id"] == "t1" && s["task"]["pre_approved_apps"] == json!(["tracker"])),
        "{listed:?}"
    );
    // ask → allowed for the task run, with the credential, never parked.
    let curl = finish(request(&world, &task, "POST", port, &bearer));
    assert_eq!(curl.code, 200, "{curl}");
    assert_eq!(authorization(&upstream), Some(format!("Bearer {SECRET}")));
    // deny stays deny.
    let before = upstream.request_count();
    let curl = finish(request(&world, &task, "DELETE", port, &bearer));
    assert_eq!(curl.code, 403, "{curl}");
    assert_eq!(curl.json()["reason"], "app_action_denied");
    assert_eq!(upstream.request_count(), before);
    world.daemon.wait_audit("the task pre-approval", 1, |e| {
        e["event"] == "approval" && e["reason"] == "task_pre_approved" && e["session"] == "t1"
    });

    // A plain session of the same sandbox still parks.
    let plain = session(&world, "s1", &[]);
    let waiting = request(&world, &plain, "POST", port, &bearer);
    let listed = eventually("the plain session's request to park", WAIT, || {
        let list = parked(&world);
        if list.len() == 1 {
            Ok(list)
        } else {
            Err(format!("{list:?}"))
        }
    });
    decide(&world, &["reject", listed[0]["id"].as_str().expect("id")]);
    assert_eq!(finish(waiting).code, 403);
}

#[test]
fn undecided_requests_expire_closed() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test"], &ca);
    let port = upstream.port();
    let world = world(&ca, port, json!({ "timeout_ms": 1_000 }));
    let bearer = format!("Authorization: Bearer {}", placeholder(&world));
    let before = upstream.request_count();
    let curl = finish(request(&world, &world.sb1, "POST", port, &bearer));
    assert_eq!(curl.code, 403, "{curl}");
    let body = curl.json();
    assert_eq!(body["reason"], "approval_expired", "{body}");
    assert_eq!(body["app"], "tracker");
    assert_eq!(upstream.request_count(), before);
    assert_eq!(world.metric("sluice_approvals_parked"), 0.0);
    world.daemon.wait_audit("the expiry", 1, |e| {
        e["event"] == "approval" && e["reason"] == "approval_expired" && e["by"] == "expiry"
    });
}

/// A parked request whose client leaves (a closed connection, a reset
/// stream) is unparked, and that outcome is audited like the others.
#[test]
fn a_parked_request_whose_client_leaves_is_unparked_and_audited() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test"], &ca);
    let port = upstream.port();
    let world = world(&ca, port, json!({ "timeout_ms": 60_000 }));
    let bearer = format!("Authorization: Bearer {}", placeholder(&world));
    let url = format!("https://api.test:{port}/echo");
    for (n, http) in ["--http1.1", "--http2"].into_iter().enumerate() {
        let args = world.curl_https(&url, &[http, "-X", "POST", "-H", &bearer, "-d", "{}"]);
        let running = in_cgroup(&world.sb1).spawn(&args);
        wait_until("the request to park", WAIT, || parked(&world).len() == 1);
        let pid = i32::try_from(running.pid()).expect("pid");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL)
            .expect("kill curl");
        let _ = running.wait();
        wait_until("the request to be unparked", WAIT, || {
            parked(&world).is_empty()
        });
        world.daemon.wait_audit("the client gone", n + 1, |e| {
            e["event"] == "approval" && e["reason"] == "client_gone" && e["verdict"] == "deny"
        });
    }
    assert_eq!(upstream.request_count(), 0);
}

/// Opens N TLS connections to HOST:PORT (HOST resolved once; 64 handshakes at a time) and
/// sends one POST /echo on each, then waits for the answers.
const PARK_MANY: &str = r#"
import asyncio, socket, ssl, sys, resource
host, port, n, cafile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
# Resolved once: the sandbox's DNS is rate limited.
ip = socket.gethostbyname(host)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
ctx = ssl.create_default_context(cafile=cafile)
async def one(sem):
    async with sem:
        r, w = await asyncio.open_connection(ip, port, ssl=ctx, server_hostname=host)
        w.write(f"POST /echo HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: 0\r\n\r\n".encode())
        await w.drain()
    return await r.readline()
async def main():
    sem = asyncio.Semaphore(64)
    await asyncio.gather(*(one(sem) for _ in range(n)))
asyncio.run(main())
"#;

#[test]
fn a_thousand_parked_requests_leave_other_traffic_flowing() {
    const PARKED: usize = 1_000;
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test"], &ca);
    let port = upstream.port();
    let mut policy = api_policy(port);
    policy["apps"] = json!([{ "app": "tracker", "actions": { "issues.create": "ask" } }]);
    // The other sandbox's policy waves the app's requests through.
    let mut other = api_policy(port);
    other["apps"] = json!({ "default": "auto" });
    let mut sb2 = None;
    let world = World::start_with(&ca, &["api.test"], policy, |builder| {
        let cgroup = builder.cgroup("sb2");
        builder
            .policy_doc("other", other)
            .sandbox("sb2", &cgroup, None, "other")
            .config_key("apps", catalogue())
            .config_key("approvals", json!({ "timeout_ms": 600_000 }));
        sb2 = Some(cgroup);
    });
    let sb2 = sb2.expect("sb2");
    let url = format!("https://api.test:{port}/echo");
    // Warm up (the minted certificate, the upstream pool), then measure.
    let curl = Curl::parse(in_cgroup(&sb2).run(&world.curl_https(&url, &[])));
    assert_eq!(curl.code, 200, "{curl}");
    let rss_before = world.daemon.rss_kib();

    let cafile = world.sluice_ca.clone();
    let args = [
        "api.test".to_owned(),
        port.to_string(),
        PARKED.to_string(),
        cafile,
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // Another sandbox's requests go on meanwhile: its p99 before the
    // thousand park and while they wait.
    let probe = Probe {
        cgroup: &sb2,
        port,
        name: "api.test",
        cafile: &world.sluice_ca,
    };
    let before = upstream.request_count();
    let mut rss_parked = 0;
    let (p99, many) = p99_during("approval queue flood", &probe, || {
        let mut many = in_cgroup(&world.sb1)
            .timeout(std::time::Duration::from_secs(300))
            .spawn_python(PARK_MANY, &args);
        let opened = eventually("a thousand parked requests", 4 * WAIT, || {
            if many.finished() {
                return Ok(false);
            }
            match world.metric("sluice_approvals_parked") {
                n if n >= PARKED as f64 => Ok(true),
                n => Err(format!("{n} parked")),
            }
        });
        if !opened {
            panic!("the client ended early:\n{}", many.wait());
        }
        rss_parked = world.daemon.rss_kib();
        many
    });
    p99.assert_served();
    // One warm-up request and two samples, all forwarded.
    assert_eq!(upstream.request_count(), before + 1 + 2 * SAMPLE);
    assert_eq!(parked(&world).len(), PARKED);
    let per_request = (rss_parked.saturating_sub(rss_before)) as f64 / PARKED as f64;
    eprintln!(
        "daemon RSS: {rss_before} KiB before, {rss_parked} KiB with {PARKED} parked ({per_request:.1} KiB each)"
    );
    // A parked request holds its connection (TLS, HTTP state) and a card.
    assert!(
        per_request < 64.0,
        "{per_request:.1} KiB per parked request ({rss_before} → {rss_parked} KiB)"
    );

    // The clients leave: every parked request is dropped, the gauge says so.
    drop(many);
    wait_until("the parked requests to be dropped", WAIT, || {
        world.metric("sluice_approvals_parked") == 0.0
    });
    assert!(parked(&world).is_empty());
}

/// Capability tokens: a sandbox off this node (`vm-1`, no cgroup) reaches
/// Sluice as an HTTP proxy with a token; expired, wrongly signed and
/// other-sandbox tokens get 407, a valid one reaches only its connections,
/// through the same pipeline (the app's `deny`, dry runs), and a tunnel
/// spliced unread carries only the name it was granted for.
#[test]
fn capability_tokens_gate_the_explicit_proxy() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test", "other.test", "pass.test"], &ca);
    let plain = HttpsUpstream::plain_v4();
    let (port, plain_port) = (upstream.port(), plain.port());
    // A port nothing listens on (taken from the kernel, then let go).
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut policy = intercepting_policy(
        &[
            "api.test".to_owned(),
            "other.test".to_owned(),
            "plain.test".to_owned(),
            "pass.test".to_owned(),
            format!("127.0.0.0/8:{port}"),
            format!("127.0.0.0/8:{plain_port}"),
            format!("127.0.0.0/8:{closed_port}"),
        ],
        json!({ "passthrough": ["pass.test"] }),
    );
    policy["apps"] =
        json!([{ "app": "tracker", "actions": { "repo.delete": "deny", "*": "auto" } }]);
    let keys = tempfile_dir();
    let sluice = sluice_e2e::sluice_bin().to_string_lossy().into_owned();
    let keygen = |dir: &std::path::Path| {
        let dir = dir.to_string_lossy().into_owned();
        sluice_e2e::run::host(&[sluice.as_str(), "token", "keygen", "--dir", &dir], WAIT)
            .expect_success("sluice token keygen");
    };
    keygen(&keys.path().join("good"));
    keygen(&keys.path().join("rogue"));
    let public = keys.path().join("good/token.pub");
    let world = World::start_with(
        &ca,
        &["api.test", "other.test", "plain.test", "pass.test"],
        policy,
        |builder| {
            builder.config_key("apps", catalogue()).config_key(
                "explicit_proxy",
                json!({
                    "listen": "127.0.0.1:0",
                    "public_key_file": public,
                    "sandboxes": [{ "id": "vm-1", "policy": "p" }],
                }),
            );
        },
    );
    let status = world.daemon.cli(&["status"]);
    status.expect_success("sluice status");
    let status: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    let proxy = format!(
        "http://{}",
        status["explicit_proxy_addr"]
            .as_str()
            .expect("explicit_proxy_addr in status")
    );
    let mint = |key: &str, sandbox: &str, extra: &[&str]| {
        let key = keys
            .path()
            .join(key)
            .join("token.key")
            .to_string_lossy()
            .into_owned();
        let api = format!("api.test:{port}");
        let plain = format!("plain.test:{plain_port}");
        let pass = format!("pass.test:{port}");
        let closed = format!("pass.test:{closed_port}");
        let pass_plain = format!("pass.test:{plain_port}");
        let mut args = vec![
            sluice.as_str(),
            "token",
            "mint",
            "--key",
            &key,
            "--sandbox",
            sandbox,
            "--connection",
            &api,
            "--connection",
            &plain,
            "--connection",
            &pass,
            "--connection",
            &closed,
            "--connection",
            &pass_plain,
        ];
        args.extend_from_slice(extra);
        let out = sluice_e2e::run::host(&args, WAIT);
        out.expect_success("sluice token mint");
        out.stdout_str().trim().to_owned()
    };
    // curl on the host, as a remote VM would: through the proxy, trusting
    // Sluice's CA for the tunnelled TLS.
    let via = |token: &str, url: &str, extra: &[&str]| {
        let user = format!("vm:{token}");
        let mut args = vec!["--proxy", proxy.as_str(), "--proxy-user", user.as_str()];
        args.extend_from_slice(extra);
        let args = world.curl_https(url, &args);
        Curl::parse(sluice_e2e::run::host(&args, WAIT))
    };
    let api = format!("https://api.test:{port}/echo");

    let valid = mint("good", "vm-1", &[]);
    let refused = [
        (
            "expired",
            mint("good", "vm-1", &["--ttl", "0"]),
            "token_expired",
        ),
        (
            "living two hours",
            mint("good", "vm-1", &["--ttl", "7200"]),
            "token_lifetime",
        ),
        (
            "wrongly signed",
            mint("rogue", "vm-1", &[]),
            "token_bad_signature",
        ),
        (
            "other sandbox",
            mint("good", "vm-2", &[]),
            "token_other_sandbox",
        ),
        ("garbage", "not.a.token".to_owned(), "token_malformed"),
    ];
    let before = upstream.request_count();
    for (what, token, reason) in &refused {
        let curl = via(token, &api, &[]);
        assert!(
            curl.out.stderr_str().contains("407"),
            "{what}: CONNECT should get 407\n{curl}"
        );
        world.daemon.wait_audit(what, 1, |e| {
            e["event"] == "explicit_proxy" && e["reason"] == *reason
        });
    }
    // No token at all.
    let curl = Curl::parse(sluice_e2e::run::host(
        &world.curl_https(&api, &["--proxy", proxy.as_str()]),
        WAIT,
    ));
    assert!(curl.out.stderr_str().contains("407"), "{curl}");
    assert_eq!(upstream.request_count(), before, "nothing got through");

    // Valid: its connections work (TLS tunnelled and intercepted, plain
    // HTTP in absolute form) ...
    let curl = via(&valid, &api, &[]);
    assert_eq!(curl.code, 200, "{curl}");
    assert_eq!(
        curl.issuer().as_deref().map(|i| i.contains("Sluice")),
        Some(true),
        "{curl}"
    );
    let seen = upstream.requests().last().cloned().expect("a request");
    assert!(
        seen.header("proxy-authorization").is_none(),
        "the token never goes upstream"
    );
    let curl = via(&valid, &format!("http://plain.test:{plain_port}/echo"), &[]);
    assert_eq!(curl.code, 200, "{curl}");
    assert!(
        plain
            .requests()
            .last()
            .is_some_and(|r| r.header("proxy-authorization").is_none()),
        "the token never goes upstream"
    );
    // ... nothing else (other.test is allowed by the network policy, not by the token) ...
    let curl = via(&valid, &format!("https://other.test:{port}/echo"), &[]);
    assert!(curl.out.stderr_str().contains("403"), "{curl}");
    world
        .daemon
        .wait_audit("the connection outside the token", 1, |e| {
            e["event"] == "explicit_proxy" && e["reason"] == "connection_not_in_token"
        });
    // ... a passthrough name's tunnel is spliced to the upstream (its own
    // certificate, which the sandbox checks itself) ...
    let connections = upstream.connection_count();
    let curl = via(&valid, &format!("https://pass.test:{port}/echo"), &["-k"]);
    assert_eq!(curl.code, 200, "{curl}");
    assert_eq!(upstream.connection_count(), connections + 1);
    // ... but only for that name: a ClientHello for another (fronting, as
    // a CDN routes by it) is closed before the upstream is dialled.
    let connections = upstream.connection_count();
    let to = format!("other.test:{port}:pass.test:{port}");
    let other = format!("https://other.test:{port}/echo");
    let curl = via(&valid, &other, &["-k", "--connect-to", &to]);
    assert_ne!(curl.code, 200, "{curl}");
    assert_eq!(upstream.connection_count(), connections, "never dialled");
    world.daemon.wait_audit("the fronted tunnel", 1, |e| {
        e["event"] == "explicit_proxy"
            && e["reason"] == "domain_fronting"
            && e["host"] == "pass.test"
    });
    // Plain HTTP in a tunnel the policy does not decrypt is still served
    // request by request: a kept-alive tunnel cannot switch to another
    // host behind the same address.
    let proxy_addr = proxy.trim_start_matches("http://");
    let (proxy_ip, proxy_port) = proxy_addr.rsplit_once(':').expect("host:port");
    let tunnel = format!("pass.test:{plain_port}=vm:{valid}");
    let out = sluice_e2e::run::host(
        &[
            sluice_e2e::python3().to_string_lossy().as_ref(),
            "-c",
            sluice_e2e::scripts::KEEPALIVE_HOSTS,
            proxy_ip,
            proxy_port,
            &tunnel,
            &format!("pass.test:{plain_port}"),
            &format!("other.test:{plain_port}"),
        ],
        WAIT,
    );
    out.expect_success("two requests in one tunnel");
    assert_eq!(out.json()["statuses"], json!([200, 421]), "{out}");
    assert!(
        plain
            .requests()
            .iter()
            .all(|r| r.header("host") != Some(&format!("other.test:{plain_port}"))),
        "the upstream never sees the other host"
    );
    // An upstream that refuses after the 200: counted, the client reset.
    let closed = format!("https://pass.test:{closed_port}/echo");
    let curl = via(&valid, &closed, &["-k"]);
    assert_ne!(curl.code, 200, "{curl}");
    world.daemon.wait_metric_at_least(
        "sluice_connections_total{verdict=\"error\",reason=\"upstream_refused\"}",
        1.0,
    );
    // A proxy head that never ends within the limit gets 431, audited.
    let big = format!("x-big: {}", "a".repeat(70 << 10));
    let url = format!("http://plain.test:{plain_port}/echo");
    let curl = via(&valid, &url, &["-H", &big]);
    assert_eq!(curl.code, 431, "{curl}");
    world.daemon.wait_audit("the oversized head", 1, |e| {
        e["event"] == "explicit_proxy" && e["reason"] == "proxy_head_too_large"
    });
    // ... and the same pipeline runs: the app's deny, and the token's dry run.
    let curl = via(&valid, &api, &["-X", "DELETE"]);
    assert_eq!(curl.code, 403, "{curl}");
    assert_eq!(curl.json()["reason"], "app_action_denied");
    let dry = mint("good", "vm-1", &["--dry-run"]);
    let before = upstream.request_count();
    let curl = via(&dry, &api, &["-X", "POST", "-d", "{}"]);
    assert_eq!(curl.code, 202, "{curl}");
    assert_eq!(curl.json()["dry_run"], true);
    assert_eq!(upstream.request_count(), before);
    // A token's tools narrow the catalogued actions: issues.read only,
    // so a POST (issues.create, auto under the policy) is refused.
    let reader = mint("good", "vm-1", &["--tool", "tracker.issues.read"]);
    let curl = via(&reader, &api, &[]);
    assert_eq!(curl.code, 200, "{curl}");
    let before = upstream.request_count();
    let curl = via(&reader, &api, &["-X", "POST", "-d", "{}"]);
    assert_eq!(curl.code, 403, "{curl}");
    assert_eq!(curl.json()["reason"], "tool_not_in_token");
    assert_eq!(curl.json()["rule"], "token:tools");
    assert_eq!(upstream.request_count(), before);
    // A token for another node is refused; this proxy says no audience.
    let elsewhere = mint("good", "vm-1", &["--audience", "node-b"]);
    let curl = via(&elsewhere, &api, &[]);
    assert!(curl.out.stderr_str().contains("407"), "{curl}");
    world.daemon.wait_audit("the other node's token", 1, |e| {
        e["event"] == "explicit_proxy" && e["reason"] == "token_audience"
    });
}

/// A daemon with an explicit proxy serving sandboxes `vm-1` and `vm-2`
/// under an intercepting policy that allows `allow`, its token keys, and
/// where the proxy listens.
struct ExplicitWorld {
    world: World,
    keys: tempfile::TempDir,
    proxy: String,
}

impl ExplicitWorld {
    fn start(
        ca: &TestCa,
        names: &[&str],
        allow: &[String],
        proxy: Value,
        configure: impl FnOnce(&mut sluice_e2e::DaemonBuilder),
    ) -> ExplicitWorld {
        let policy = intercepting_policy(allow, json!({}));
        ExplicitWorld::start_with_policy(ca, names, policy, proxy, configure)
    }

    /// [`ExplicitWorld::start`] with policy `p` given whole.
    fn start_with_policy(
        ca: &TestCa,
        names: &[&str],
        policy: Value,
        proxy: Value,
        configure: impl FnOnce(&mut sluice_e2e::DaemonBuilder),
    ) -> ExplicitWorld {
        let keys = tempfile_dir();
        let dir = keys.path().to_string_lossy().into_owned();
        let sluice = sluice_e2e::sluice_bin();
        let sluice = sluice.to_string_lossy();
        sluice_e2e::run::host(&[sluice.as_ref(), "token", "keygen", "--dir", &dir], WAIT)
            .expect_success("sluice token keygen");
        let mut section = json!({
            "listen": "127.0.0.1:0",
            "public_key_file": keys.path().join("token.pub"),
            "sandboxes": [{ "id": "vm-1", "policy": "p" }, { "id": "vm-2", "policy": "p" }],
        });
        for (key, value) in proxy.as_object().into_iter().flatten() {
            section[key] = value.clone();
        }
        let world = World::start_with(ca, names, policy, |builder| {
            configure(builder.config_key("explicit_proxy", section));
        });
        let status = world.daemon.cli(&["status"]);
        status.expect_success("sluice status");
        let status: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
        let proxy = status["explicit_proxy_addr"]
            .as_str()
            .expect("explicit_proxy_addr in status")
            .to_owned();
        ExplicitWorld { world, keys, proxy }
    }

    /// A token for `sandbox` granting `connection` (`host:port`).
    fn mint(&self, sandbox: &str, connection: &str) -> String {
        self.mint_with(sandbox, connection, &[])
    }

    /// [`ExplicitWorld::mint`] with `extra` arguments (`--session ID`).
    fn mint_with(&self, sandbox: &str, connection: &str, extra: &[&str]) -> String {
        let key = self.keys.path().join("token.key");
        let mut args = vec![
            sluice_e2e::sluice_bin().into_os_string(),
            "token".into(),
            "mint".into(),
            "--key".into(),
            key.into_os_string(),
            "--sandbox".into(),
            sandbox.into(),
            "--connection".into(),
            connection.into(),
        ];
        args.extend(extra.iter().map(Into::into));
        let out = sluice_e2e::run::host(&args, WAIT);
        out.expect_success("sluice token mint");
        out.stdout_str().trim().to_owned()
    }

    /// curl on the host (as a remote VM would) through the proxy with
    /// `token`, trusting Sluice's CA for the tunnelled TLS; run on a
    /// thread of its own, so the test can decide while it waits.
    fn curl(&self, token: &str, url: &str, extra: &[&str]) -> std::thread::JoinHandle<Curl> {
        let (proxy, user) = (format!("http://{}", self.proxy), format!("vm:{token}"));
        let mut args = vec!["--proxy", proxy.as_str(), "--proxy-user", user.as_str()];
        args.extend_from_slice(extra);
        let args = self.world.curl_https(url, &args);
        std::thread::spawn(move || Curl::parse(sluice_e2e::run::host(&args, WAIT * 2)))
    }

    /// Runs a script from `sluice_e2e::scripts` on the host (as a remote
    /// VM would), the proxy's address and port its first arguments.
    fn python(&self, script: &str, args: &[&str]) -> sluice_e2e::Output {
        let python = sluice_e2e::python3();
        let (ip, port) = self.proxy.rsplit_once(':').expect("host:port");
        let mut all = vec![python.to_string_lossy().into_owned(), "-c".to_owned()];
        all.extend([script, ip, port].map(str::to_owned));
        all.extend(args.iter().map(|a| (*a).to_owned()));
        sluice_e2e::run::host(&all, WAIT * 2)
    }
}

/// Before a token is shown, connections are capped for everyone together
/// (`explicit_proxy.max_pending_connections`) and per source address
/// (`max_pending_per_source`); after, each sandbox's count is capped as a
/// steered sandbox's is (`limits.max_connections_per_sandbox`).
#[test]
fn the_explicit_proxy_caps_connections_before_and_after_the_token() {
    let ca = TestCa::upstream();
    let plain = HttpsUpstream::plain_v4();
    let target = format!("plain.test:{}", plain.port());
    let (pending, per_source, limit) = (3, 2, 2);
    let explicit = ExplicitWorld::start(
        &ca,
        &["plain.test"],
        &[
            "plain.test".to_owned(),
            format!("127.0.0.0/8:{}", plain.port()),
        ],
        json!({ "max_pending_connections": pending, "max_pending_per_source": per_source }),
        |builder| {
            builder.limit("max_connections_per_sandbox", json!(limit));
        },
    );
    let out = explicit.python(
        sluice_e2e::scripts::PROXY_CAPS,
        &[
            &pending.to_string(),
            &per_source.to_string(),
            &target,
            &explicit.mint("vm-1", &target),
            &explicit.mint("vm-2", &target),
            &limit.to_string(),
        ],
    );
    out.expect_success("the proxy's caps");
    let json = out.json();
    assert_eq!(json["past_source_closed"], true, "{out}");
    assert_eq!(json["past_pending_closed"], true, "{out}");
    assert_eq!(json["after_pending"], 200, "{out}");
    assert_eq!(json["held"], json!([200, 200]), "{out}");
    assert_eq!(json["past_limit"], 429, "{out}");
    let daemon = &explicit.world.daemon;
    // Refusals past the pending caps are audited at most once a second:
    // the first names its cap (the source's share), the second is folded.
    daemon.wait_metric_at_least(
        "sluice_connections_total{verdict=\"deny\",reason=\"pending_limit\"}",
        2.0,
    );
    for (reason, rule) in [
        (
            "pending_limit",
            "config:explicit_proxy.max_pending_per_source",
        ),
        (
            "connection_limit",
            "config:limits.max_connections_per_sandbox",
        ),
    ] {
        let events = daemon.wait_audit(reason, 1, |e| {
            e["event"] == "explicit_proxy" && e["reason"] == reason
        });
        assert_eq!(events[0]["rule"], rule, "{}", events[0]);
        daemon.wait_metric_at_least(
            &format!("sluice_connections_total{{verdict=\"deny\",reason=\"{reason}\"}}"),
            1.0,
        );
    }
}

/// A tunnel carrying neither TLS nor HTTP cannot be inspected: under a
/// policy that reads what tunnels carry (this one decrypts, and a name rule
/// covers the port) it is refused, audited with the reason and the key
/// that reads, and the upstream gets nothing; under address rules alone,
/// with nothing that reads, it is relayed as a steered connection is.
#[test]
fn an_explicit_tunnel_relays_what_it_cannot_read_only_where_nothing_reads_it() {
    let ca = TestCa::upstream();
    let echo = sluice_e2e::EchoServer::v4();
    let target = format!("echo.test:{}", echo.port());
    let payload: Vec<u8> = (0..=255u8).rev().collect();
    let hex: String = payload.iter().map(|b| format!("{b:02x}")).collect();

    let reading = ExplicitWorld::start(
        &ca,
        &["echo.test"],
        &[
            "echo.test".to_owned(),
            format!("127.0.0.0/8:{}", echo.port()),
        ],
        json!({}),
        |_| {},
    );
    let token = reading.mint("vm-1", &target);
    let out = reading.python(sluice_e2e::scripts::TUNNEL_ECHO, &[&target, &token, &hex]);
    out.expect_failure("binary bytes through a tunnel the policy reads");
    let events = reading
        .world
        .daemon
        .wait_audit("the unreadable tunnel refused", 1, |e| {
            e["event"] == "explicit_proxy" && e["reason"] == "unrecognised_protocol"
        });
    assert_eq!(events[0]["rule"], "p:network.name_rules", "{}", events[0]);
    assert_eq!(echo.connection_count(), 0, "the upstream got nothing");

    // No rule names echo.test: under default deny Sluice looks such a
    // name up for the tunnel only where the policy resolves unlisted
    // names, as it would answer a steered sandbox's query for it.
    let address_only = json!({ "network": {
        "allow_out": [format!("127.0.0.0/8:{}", echo.port())],
        "deny_out": ["ALL_TRAFFIC"],
        "dns": { "resolve_unlisted": true },
    }});
    let relaying =
        ExplicitWorld::start_with_policy(&ca, &["echo.test"], address_only, json!({}), |_| {});
    let token = relaying.mint("vm-1", &target);
    let out = relaying.python(sluice_e2e::scripts::TUNNEL_ECHO, &[&target, &token, &hex]);
    out.expect_success("binary bytes through a tunnel nothing reads");
    assert_eq!(out.json()["echoed"], true, "{out}");
    let seen = echo.wait_closed(1, WAIT);
    assert_eq!(
        seen[0].received, payload,
        "the upstream got the bytes as sent"
    );
}

fn tempfile_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("sluice-tokens-")
        .tempdir()
        .expect("tempdir")
}

/// A remote sandbox's sessions are named by its tokens and never
/// registered, so nothing ends one by itself: `sluice session rm` does,
/// dropping its approval grants, so a run that reuses the id is asked
/// again.
#[test]
fn removing_a_remote_session_drops_its_grants() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test"], &ca);
    let port = upstream.port();
    let mut policy = api_policy(port);
    policy["apps"] = json!([{ "app": "tracker", "actions": { "issues.create": "ask" } }]);
    let explicit = ExplicitWorld::start_with_policy(&ca, &["api.test"], policy, json!({}), |b| {
        b.config_key("apps", catalogue())
            .config_key("approvals", json!({ "timeout_ms": 60_000 }));
    });
    let world = &explicit.world;
    let token = explicit.mint_with("vm-1", &format!("api.test:{port}"), &["--session", "run-1"]);
    let url = format!("https://api.test:{port}/echo");
    let post = || explicit.curl(&token, &url, &["-X", "POST", "-d", "{}"]);
    // The card of the one request parked, once it is.
    let parked_card = || {
        let mut card = Value::Null;
        wait_until("a request parked", WAIT, || {
            card = parked(world).pop().unwrap_or(Value::Null);
            !card.is_null()
        });
        assert_eq!(card["session"], "run-1", "{card}");
        card["id"].as_str().expect("id").to_owned()
    };

    let waiting = post();
    decide(world, &["approve", "--session", &parked_card()]);
    assert_eq!(waiting.join().expect("curl").code, 200);
    let curl = post().join().expect("curl");
    assert_eq!(curl.code, 200, "granted for the session: {curl}");

    world
        .daemon
        .cli(&["session", "rm", "vm-1", "run-1"])
        .expect_success("sluice session rm of a remote session");
    world.daemon.wait_audit("the session ended", 1, |e| {
        e["event"] == "registration"
            && e["verdict"] == "remove"
            && e["sandbox"] == "vm-1"
            && e["session"] == "run-1"
    });
    // The token handed out for the session ends with it...
    let before = upstream.request_count();
    let curl = post().join().expect("curl");
    assert!(
        curl.out.stderr_str().contains("407"),
        "an ended session's token: {curl}"
    );
    world
        .daemon
        .wait_audit("the ended session's token refused", 1, |e| {
            e["event"] == "explicit_proxy" && e["reason"] == "token_session_ended"
        });
    // ...and one minted after it (a second later at the earliest: tokens
    // carry their issue time in seconds) starts the id from nothing.
    let mut fresh = String::new();
    wait_until("a token minted after the session ended", WAIT, || {
        fresh = explicit.mint_with("vm-1", &format!("api.test:{port}"), &["--session", "run-1"]);
        // A port the token does not grant: 403 once the token is taken,
        // 407 while it is refused.
        let probe = explicit.curl(&fresh, "https://api.test:1/", &[]);
        let probe = probe.join().expect("curl");
        !probe.out.stderr_str().contains("407")
    });
    let waiting = explicit.curl(&fresh, &url, &["-X", "POST", "-d", "{}"]);
    decide(world, &["reject", &parked_card()]);
    let curl = waiting.join().expect("curl");
    assert_eq!(curl.code, 403, "asked again, and rejected: {curl}");
    assert_eq!(upstream.request_count(), before);
}

/// A sandbox the explicit proxy serves gets its placeholders from
/// `sluice sandbox env` as a registered one does, and a placeholder it
/// sends through the proxy becomes the secret toward the credential's
/// host.
#[test]
fn an_explicit_sandbox_gets_its_placeholders_from_sandbox_env() {
    const SECRET: &str = "sk-live-remote-0123456789abcdef";
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test"], &ca);
    let port = upstream.port();
    let mut policy = intercepting_policy(
        &["api.test".to_owned(), format!("127.0.0.0/8:{port}")],
        json!({}),
    );
    policy["credentials"] = json!([{ "credential": "api" }]);
    let world = ExplicitWorld::start_with_policy(&ca, &["api.test"], policy, json!({}), |b| {
        let path = b.dir().join("api.secret");
        std::fs::write(&path, format!("{SECRET}\n")).expect("write secret");
        b.credential(json!({
            "name": "api",
            "source": { "file": path },
            "hosts": ["api.test"],
            "scheme": { "type": "bearer" },
        }));
    });
    let out = world.world.daemon.cli(&["sandbox", "env", "vm-1"]);
    out.expect_success("sluice sandbox env vm-1");
    let text = out.stdout_str();
    let placeholder = text
        .lines()
        .find_map(|l| l.strip_prefix("export API="))
        .map(|v| v.trim_matches('\'').to_owned())
        .unwrap_or_else(|| panic!("no API placeholder in:\n{text}"));
    assert_ne!(placeholder, SECRET);
    world
        .world
        .daemon
        .cli(&["sandbox", "env", "vm-9"])
        .expect_failure("an unknown sandbox has no env");

    let token = world.mint("vm-1", &format!("api.test:{port}"));
    let bearer = format!("Authorization: Bearer {placeholder}");
    let url = format!("https://api.test:{port}/echo");
    let curl = world
        .curl(&token, &url, &["-H", &bearer])
        .join()
        .expect("curl");
    assert_eq!(curl.code, 200, "{curl}");
    let seen = upstream.requests().last().cloned().expect("a request");
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
}
