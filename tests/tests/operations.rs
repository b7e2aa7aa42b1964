//! Operations: draining on SIGTERM (in-flight streams finish, new
//! connections are refused, what is still open at the deadline is cut),
//! upgrading to a new daemon process without letting a sandbox through,
//! reloading the config on SIGHUP, and the status and health endpoints.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use nix::sys::signal::Signal;
use serde_json::{Value, json};
use sluice_e2e::{
    Daemon, DaemonBuilder, EchoServer, HttpsUpstream, Rule, TestCa, TestCgroup, WAIT, eventually,
    in_cgroup,
    interception::{World, allow_loopback, intercepting_policy},
    prom, scripts, wait_until,
};

/// `HOST PORT PROGRESS STOP`: connects, sends `ping`, expects it echoed,
/// again and again until the file STOP exists. After each attempt it
/// rewrites PROGRESS with the outcome counts; at the end it prints the
/// counts and the runs of equal outcomes, in order.
const CONNECT_LOOP: &str = r#"
import errno, json, os, socket, sys, time
host, port, progress, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
counts, runs = {}, []
while not os.path.exists(stop):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((host, port))
        s.sendall(b"ping\n")
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        outcome = "ok" if got == b"ping\n" else "bad_echo"
    except OSError as e:
        outcome = errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__
    finally:
        s.close()
    counts[outcome] = counts.get(outcome, 0) + 1
    if runs and runs[-1][0] == outcome:
        runs[-1][1] += 1
    else:
        runs.append([outcome, 1])
    with open(progress + ".tmp", "w") as f:
        json.dump(counts, f)
    os.replace(progress + ".tmp", progress)
    time.sleep(0.005)
print(json.dumps({"counts": counts, "runs": runs}))
"#;

/// Connects from `cgroup` to 127.0.0.1:`port` and closes; the probe's JSON.
fn connect(cgroup: &TestCgroup, port: u16) -> Value {
    in_cgroup(cgroup)
        .python(scripts::TCP_PROBE, &["127.0.0.1", &port.to_string(), "-"])
        .json()
}

/// Connects, sends `payload` and expects it echoed; the probe's JSON.
fn exchange(cgroup: &TestCgroup, port: u16, payload: &[u8]) -> Value {
    in_cgroup(cgroup)
        .python(
            scripts::TCP_PROBE,
            &["127.0.0.1", &port.to_string(), &scripts::hex(payload)],
        )
        .json()
}

fn probe(daemon: &Daemon, path: &str) -> (u16, String) {
    prom::http_get(daemon.metrics_addr(), path)
        .unwrap_or_else(|e| panic!("GET {path} on the metrics listener: {e}"))
}

fn sse_world(drain_timeout_ms: u64) -> (HttpsUpstream, World) {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["upstream.test"], &ca);
    let policy = intercepting_policy(&allow_loopback("upstream.test", upstream.port()), json!({}));
    let world = World::start_with(&ca, &["upstream.test"], policy, |builder| {
        builder.drain_timeout_ms(drain_timeout_ms);
    });
    (upstream, world)
}

/// Starts `curl -N` on the upstream's `/sse` in the sandbox, writing events
/// to a file as they arrive; returns once the first event is there.
fn start_sse(world: &World, port: u16) -> (sluice_e2e::run::Running, std::path::PathBuf) {
    let events = world.daemon.dir().join("sse.txt");
    let events_path = events.to_string_lossy().into_owned();
    let url = format!("https://upstream.test:{port}/sse");
    let args = world.curl_https(&url, &["--http2", "-N", "-o", &events_path]);
    let running = in_cgroup(&world.sb1)
        .timeout(Duration::from_secs(60))
        .spawn(&args);
    wait_until("event one in curl's output", WAIT, || {
        std::fs::read_to_string(&events).is_ok_and(|t| t.contains("data: one"))
    });
    (running, events)
}

/// The daemon's stderr lines without terminal colours.
fn log_lines(daemon: &Daemon) -> Vec<String> {
    daemon
        .stderr_lines()
        .iter()
        .map(|line| {
            let mut plain = String::with_capacity(line.len());
            let mut chars = line.chars();
            while let Some(c) = chars.next() {
                if c == '\u{1b}' {
                    // An SGR sequence: ESC [ ... m
                    for c in chars.by_ref() {
                        if c == 'm' {
                            break;
                        }
                    }
                } else {
                    plain.push(c);
                }
            }
            plain
        })
        .collect()
}

fn stderr_has(daemon: &Daemon, text: &str) -> bool {
    log_lines(daemon).iter().any(|l| l.contains(text))
}

/// `sluice status` (JSON), with every field.
fn status(daemon: &Daemon) -> Value {
    let out = daemon.cli(&["status"]);
    out.expect_success("sluice status");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("status JSON ({e}):\n{out}"))
}

#[test]
fn drain_lets_an_sse_stream_finish_and_refuses_new_connections() {
    const DRAIN_MS: u64 = 30_000;
    let (upstream, mut world) = sse_world(DRAIN_MS);
    let port = upstream.port();
    assert_eq!(probe(&world.daemon, "/healthz").0, 200);
    assert_eq!(probe(&world.daemon, "/readyz"), (200, "ready\n".to_owned()));
    let before = connect(&world.sb1, port);
    assert_eq!(
        before["ok"], true,
        "a new connection before the drain: {before}"
    );

    let (curl, events) = start_sse(&world, port);
    world.daemon.signal(Signal::SIGTERM);
    let started = Instant::now();
    // Not ready once the listeners are closed (the drain has begun).
    eventually("/readyz answers 503 while draining", WAIT, || {
        match probe(&world.daemon, "/readyz") {
            (503, body) if body.contains("draining") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    assert_eq!(
        probe(&world.daemon, "/healthz").0,
        200,
        "alive while draining"
    );
    let draining = status(&world.daemon);
    assert_eq!(draining["draining"], true, "{draining}");
    assert_eq!(draining["ready"], false, "{draining}");

    let refused = connect(&world.sb1, port);
    assert_eq!(
        refused["errno"], "ECONNREFUSED",
        "new connection while draining: {refused}"
    );
    assert!(
        world.daemon.is_running(),
        "the SSE stream holds the drain open"
    );

    upstream.ack();
    let out = curl.wait();
    out.expect_success("the SSE stream that was in flight when the drain began");
    assert_eq!(
        std::fs::read_to_string(&events).expect("events"),
        "data: one\n\ndata: two\n\n",
        "the stream finished whole\n{out}"
    );
    let exit = world.daemon.wait_exit(Duration::from_millis(DRAIN_MS));
    assert!(exit.success(), "a drained daemon exits 0: {exit}");
    assert!(
        started.elapsed() < Duration::from_millis(DRAIN_MS),
        "it exits when the stream ends, not at the deadline"
    );
    assert!(
        stderr_has(
            &world.daemon,
            "drained: every connection in flight finished"
        ),
        "{:#?}",
        log_lines(&world.daemon)
    );
    // Stopped: the pinned programs still steer the sandbox to a closed port.
    let after = connect(&world.sb1, port);
    assert_eq!(after["errno"], "ECONNREFUSED", "after the exit: {after}");
}

#[test]
fn drain_deadline_cuts_what_is_still_open_and_exits_zero() {
    const DRAIN_MS: u64 = 1_500;
    let (upstream, mut world) = sse_world(DRAIN_MS);
    let (curl, events) = start_sse(&world, upstream.port());
    world.daemon.signal(Signal::SIGTERM);
    let started = Instant::now();
    // The upstream holds the stream for its ack (10 s); nobody acks.
    let exit = world.daemon.wait_exit(WAIT);
    let waited = started.elapsed();
    assert!(
        exit.success(),
        "a daemon that cut connections still exits 0: {exit}"
    );
    assert!(
        waited >= Duration::from_millis(DRAIN_MS) && waited < Duration::from_secs(9),
        "exit at the deadline, before the upstream would have ended the stream: {waited:?}"
    );
    let lines = log_lines(&world.daemon);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("drain deadline passed") && l.contains("cut=1")),
        "the cut connection is reported: {lines:#?}"
    );
    let out = curl.wait();
    assert!(!out.success(), "the cut stream fails for the client: {out}");
    let text = std::fs::read_to_string(&events).expect("events");
    assert!(!text.contains("two"), "the stream was cut: {text:?}");
}

#[test]
fn upgrade_never_lets_a_looping_sandbox_through_and_keeps_registrations() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    let sb2 = builder.cgroup("sb2");
    builder
        .policy("default", vec![Rule::exact(upstream.addr())])
        .sandbox("sb1", &sb1, None, "default");
    let mut daemon = builder.start();
    daemon
        .cli(&[
            "sandbox", "add", "sb2", "--cgroup", "sb2", "--policy", "default",
        ])
        .expect_success("sluice sandbox add sb2");

    let progress = daemon.dir().join("loop.json");
    let stop = daemon.dir().join("loop.stop");
    let counts = |what: &str| -> u64 {
        std::fs::read_to_string(&progress)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v[what].as_u64())
            .unwrap_or(0)
    };
    let looping = in_cgroup(&sb1)
        .timeout(Duration::from_secs(120))
        .spawn_python(
            CONNECT_LOOP,
            &[
                "127.0.0.1",
                &upstream.port().to_string(),
                &progress.to_string_lossy(),
                &stop.to_string_lossy(),
            ],
        );
    wait_until("the loop gets through before the upgrade", WAIT, || {
        counts("ok") >= 5
    });

    // Stop the old daemon as an upgrade would (SIGTERM), and keep the gap
    // open until the loop has been refused in it.
    daemon.signal(Signal::SIGTERM);
    let exit = daemon.wait_exit(WAIT);
    assert!(exit.success(), "old daemon: {exit}");
    wait_until("the loop is refused while no daemon runs", WAIT, || {
        counts("ECONNREFUSED") >= 5
    });
    let ok_in_gap = counts("ok");

    // The "new binary": a copy, so it is another file on disk.
    let new_bin = daemon.dir().join("sluice-upgraded");
    std::fs::copy(sluice_e2e::sluice_bin(), &new_bin).expect("copy the binary");
    daemon.start_binary(&new_bin);
    wait_until("the loop gets through after the upgrade", WAIT, || {
        counts("ok") >= ok_in_gap + 5
    });
    std::fs::write(&stop, b"").expect("stop file");
    let out = looping.wait();
    out.expect_success("connect loop");
    let result = out.json();
    let runs = result["runs"].as_array().expect("runs");
    for run in runs {
        let outcome = run[0].as_str().unwrap_or_default();
        assert!(
            ["ok", "ECONNREFUSED", "ECONNRESET", "EPIPE"].contains(&outcome),
            "every failure is a refusal, never a timeout or a stray answer: {result}"
        );
    }
    assert_eq!(runs.first().map(|r| &r[0]), Some(&json!("ok")), "{result}");
    assert_eq!(runs.last().map(|r| &r[0]), Some(&json!("ok")), "{result}");

    // Every connection the upstream saw came through a daemon that decided
    // it: as many as both runs audited as allowed, and at least as many as
    // the loop saw echoed.
    let seen = upstream.connection_count();
    let dst = upstream.addr_string();
    let audited = daemon
        .wait_audit("allowed connections to the upstream", seen, |e| {
            e["event"] == "connection" && e["verdict"] == "allow" && e["dst"] == dst.as_str()
        })
        .len();
    assert_eq!(
        seen, audited,
        "an unaudited connection reached the upstream"
    );
    let echoed = result["counts"]["ok"].as_u64().unwrap_or(0) as usize;
    assert_eq!(echoed, seen, "{result}");

    // The registrations survived, the API one included.
    let ids: Vec<Value> = daemon.sandboxes().iter().map(|s| s["id"].clone()).collect();
    assert!(
        ids.contains(&json!("sb1")) && ids.contains(&json!("sb2")),
        "{ids:?}"
    );
    let from_sb2 = exchange(&sb2, upstream.port(), b"sb2\n");
    assert_eq!(from_sb2["ok"], true, "sb2 after the upgrade: {from_sb2}");
}

#[test]
fn status_and_probes_report_programs_maps_policies_and_refusals() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    let stranger = builder.cgroup("stranger");
    builder
        .policy("default", vec![Rule::exact(upstream.addr())])
        .sandbox("sb1", &sb1, None, "default");
    let daemon = builder.start();
    assert_eq!(probe(&daemon, "/readyz"), (200, "ready\n".to_owned()));
    assert_eq!(probe(&daemon, "/healthz"), (200, "ok\n".to_owned()));

    // A refusal by policy (a port the rule does not allow), and one in the
    // kernel (an unregistered cgroup).
    let denied = exchange(&sb1, upstream.port().wrapping_add(1), b"not allowed\n");
    assert_eq!(denied["ok"], false, "{denied}");
    let stranger_try = connect(&stranger, upstream.port());
    assert_eq!(stranger_try["errno"], "EPERM", "{stranger_try}");

    let status = eventually("a status with both refusals", WAIT, || {
        let current = status(&daemon);
        let recent = current["recent_refusals"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let kernel = current["kernel_refusals"]["unregistered_cgroup"]
            .as_u64()
            .unwrap_or(0);
        let policy = recent
            .iter()
            .any(|r| r["event"] == "connection" && r["sandbox"] == "sb1");
        let in_kernel = recent.iter().any(|r| r["event"] == "kernel_refusal");
        if policy && in_kernel && kernel >= 1 {
            Ok(current)
        } else {
            Err(current.to_string())
        }
    });
    assert_eq!(status["ready"], true);
    assert_eq!(status["draining"], false);
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        status["programs"].as_array().is_some_and(|p| p.len() >= 8),
        "{status}"
    );
    assert_eq!(status["policies"]["synchronized"], true, "{status}");
    assert_eq!(status["policies"]["loaded"], json!(["default"]), "{status}");
    let maps = status["maps"].as_array().expect("maps");
    let identity = maps
        .iter()
        .find(|m| m["name"] == "SLUICE_IDENTITY")
        .unwrap_or_else(|| panic!("no identity map in {status}"));
    assert_eq!(identity["entries"], 1, "{status}");
    assert_eq!(identity["capacity"], 65_536, "{status}");

    let text = daemon.cli(&["status", "--text"]);
    text.expect_success("sluice status --text");
    for want in [
        "(ready)",
        "SLUICE_IDENTITY 1/65536",
        "in sync",
        "recent refusals",
    ] {
        assert!(
            text.stdout_str().contains(want),
            "{want:?} missing:\n{text}"
        );
    }
    // The same facts on the metrics endpoint, for dashboards.
    daemon.wait_metric_at_least(r#"sluice_ebpf_map_entries{map="SLUICE_IDENTITY"}"#, 1.0);
    daemon.wait_metric_at_least("sluice_ready", 1.0);
    daemon.wait_metric_at_least(
        r#"sluice_audit_events_total{event="connection",verdict="deny",sandbox="sb1"}"#,
        1.0,
    );
}

#[test]
fn sighup_applies_the_config_files_sandboxes() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    let sb2 = builder.cgroup("sb2");
    builder
        .policy("default", vec![Rule::exact(upstream.addr())])
        .sandbox("sb1", &sb1, None, "default");
    let daemon = builder.start();
    let port = upstream.port();
    assert_eq!(
        connect(&sb2, port)["errno"],
        "EPERM",
        "sb2 is not registered yet"
    );

    let edit = |change: &dyn Fn(&mut Vec<Value>)| {
        let path = daemon.config_path();
        let mut config: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("config")).expect("JSON");
        let sandboxes = config["sandboxes"].as_array_mut().expect("sandboxes");
        change(sandboxes);
        write_atomically(path, &config);
        daemon.signal(Signal::SIGHUP);
    };
    let listed = |id: &str| daemon.sandboxes().iter().any(|s| s["id"] == id);

    edit(&|sandboxes| sandboxes.push(json!({ "id": "sb2", "cgroup": "sb2", "policy": "default" })));
    wait_until("sb2 registered from the reloaded config", WAIT, || {
        listed("sb2")
    });
    assert_eq!(
        exchange(&sb2, port, b"sb2\n")["ok"],
        true,
        "sb2 after the reload"
    );
    let entry = daemon
        .sandboxes()
        .into_iter()
        .find(|s| s["id"] == "sb2")
        .expect("sb2");
    assert_eq!(entry["source"], "config", "{entry}");

    edit(&|sandboxes| sandboxes.retain(|s| s["id"] != "sb1"));
    wait_until("sb1 gone after the reload", WAIT, || !listed("sb1"));
    assert_eq!(
        connect(&sb1, port)["errno"],
        "EPERM",
        "sb1 is refused once removed"
    );

    // A config that does not load changes nothing and is counted.
    std::fs::write(daemon.config_path(), "listen: {tcp_prot: 1}\n").expect("break the config");
    daemon.signal(Signal::SIGHUP);
    daemon.wait_metric_at_least(r#"sluice_config_reloads_total{result="error"}"#, 1.0);
    assert!(listed("sb2"), "a broken config keeps what runs");
    assert_eq!(exchange(&sb2, port, b"still\n")["ok"], true);
    daemon.wait_metric_at_least(r#"sluice_config_reloads_total{result="ok"}"#, 2.0);
}

/// A config sandbox whose policy alone changes is switched in place: the
/// sessions the control plane registered under it at run time stay, and
/// are decided under the new policy at once.
#[test]
fn a_config_sandbox_given_another_policy_keeps_its_sessions() {
    let upstream = EchoServer::v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .policy("open", vec![Rule::exact(upstream.addr())])
        .policy("closed", vec![])
        .sandbox("sb1", &sb1, None, "open");
    let daemon = builder.start();
    let port = upstream.port();
    let s1 = sb1.child("s1");
    daemon
        .cli(&["session", "add", "sb1", "s1", "--cgroup", &s1.path_str()])
        .expect_success("sluice session add");
    assert_eq!(exchange(&s1, port, b"before\n")["ok"], true);

    let path = daemon.config_path();
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("config")).expect("JSON");
    config["sandboxes"][0]["policy"] = "closed".into();
    write_atomically(path, &config);
    daemon.signal(Signal::SIGHUP);
    daemon.wait_metric_at_least(r#"sluice_config_reloads_total{result="ok"}"#, 1.0);

    let sandboxes = daemon.sandboxes();
    let entry = sandboxes.iter().find(|s| s["id"] == "sb1").expect("sb1");
    assert_eq!(entry["policy"], "closed", "{entry}");
    let sessions = entry["sessions"].as_array().expect("sessions");
    assert!(
        sessions.iter().any(|s| s["id"] == "s1"),
        "the session stays registered: {entry}"
    );
    daemon.wait_audit("sb1 switched to its new policy", 1, |e| {
        e["event"] == "registration" && e["verdict"] == "policy" && e["sandbox"] == "sb1"
    });
    let refused = exchange(&s1, port, b"after\n");
    assert_eq!(
        refused["ok"], false,
        "decided under the new policy: {refused}"
    );
    daemon.wait_audit("s1's connection denied", 1, |e| {
        e["event"] == "connection"
            && e["verdict"] == "deny"
            && e["session"] == "s1"
            && e["rule"].as_str().is_some_and(|r| r.starts_with("closed:"))
    });
}

fn write_atomically(path: &Path, value: &Value) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(value).expect("JSON")).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}
