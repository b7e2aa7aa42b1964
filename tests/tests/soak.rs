//! The soak with faults (`cargo xtask soak --minutes N`; this test alone
//! runs it for `SLUICE_SOAK_MINUTES`, 1 when unset): worker sandboxes (one
//! in its own network namespace) send a mix of traffic for the whole run
//! (`sluice_e2e::soak::CLIENT`) while the driver rewrites policies every
//! few seconds and, once a cycle, churns sandboxes and sessions, restarts
//! the upstream, changes the workers' policy, makes the resolver fail and
//! time out, and makes the audit sink slow and then unwritable.
//!
//! It fails on any error no fault made meanwhile explains, on any request
//! that reached the destination no policy allows, and (runs of
//! [`GROWTH_MIN_MINUTES`] or more) on RSS, descriptors or tasks that keep
//! growing.

use std::{
    collections::BTreeMap,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use serde_json::{Value, json};
use sluice_e2e::{
    Daemon, DaemonBuilder, HttpsUpstream, TestCa, TestCgroup, TestDns, TestNetns, UpstreamOptions,
    WAIT,
    dns_server::Failure,
    eventually, in_cgroup,
    interception::intercepting_policy,
    soak::{
        CLIENT,
        audit_pipe::{AuditPipe, Drain},
        judge::{self, Action, Fault},
        proc_stats::{self, Sample},
    },
    write_policy,
};

const HOST: &str = "soak.test";
const SECRET: &str = "sk-live-SOAKsecret0123456789abcdefXYZ";
const WORKERS: usize = 3;
/// The worker whose policy does not read bodies, so it can open WebSockets.
const WS_WORKER: usize = 2;
/// Policy files are rewritten this often.
const RELOAD_EVERY: Duration = Duration::from_secs(3);
const SAMPLE_EVERY: Duration = Duration::from_secs(5);
/// Below this, thirds of the run are too short to tell warm-up from a leak:
/// the growth is reported, not judged.
const GROWTH_MIN_MINUTES: f64 = 6.0;
/// A fault cycle lasts this long (or the whole run, when shorter).
const CYCLE_SECS: f64 = 120.0;

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs_f64()
}

fn minutes() -> f64 {
    match std::env::var("SLUICE_SOAK_MINUTES") {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|e| panic!("SLUICE_SOAK_MINUTES={text:?}: {e}")),
        Err(_) => 1.0,
    }
}

/// One operation a client or the driver made.
#[derive(Debug, Clone)]
struct Op {
    op: String,
    t0: f64,
    t1: f64,
    ok: bool,
    requests: u64,
    err: Option<String>,
}

impl Op {
    fn parse(line: &str) -> Option<Op> {
        let v: Value = serde_json::from_str(line).ok()?;
        Some(Op {
            op: v["op"].as_str()?.to_owned(),
            t0: v["t0"].as_f64()?,
            t1: v["t1"].as_f64()?,
            ok: v["ok"].as_bool()?,
            requests: v["n"].as_u64().unwrap_or(1),
            err: v["err"].as_str().map(str::to_owned),
        })
    }
}

/// Every complete line of the workers' logs.
fn read_ops(logs: &[PathBuf]) -> Vec<Op> {
    logs.iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            text.lines().filter_map(Op::parse).collect::<Vec<_>>()
        })
        .collect()
}

/// Requests, and errors by kind (`op:error`) split into those a fault
/// explains (named with it) and those none does.
#[derive(Default)]
struct Tally {
    requests: u64,
    by_op: BTreeMap<String, u64>,
    excused: BTreeMap<String, u64>,
    unexpected: BTreeMap<String, (u64, f64)>,
}

fn tally(ops: &[Op], faults: &[Fault]) -> Tally {
    let mut t = Tally::default();
    for op in ops {
        if op.ok {
            t.requests += op.requests;
            *t.by_op.entry(op.op.clone()).or_default() += op.requests;
            continue;
        }
        let kind = format!("{}:{}", op.op, op.err.as_deref().unwrap_or("?"));
        match judge::excuse(&op.op, op.t0, op.t1, faults) {
            Some(fault) => *t.excused.entry(format!("{kind} ({fault:?})")).or_default() += 1,
            None => {
                let entry = t.unexpected.entry(kind).or_insert((0, op.t0));
                entry.0 += 1;
            }
        }
    }
    t
}

/// The workers' policy: the upstreams, the allowed zone, the credential,
/// PII redaction when `pii` (which refuses WebSocket upgrades: no stage
/// reads their frames); `generation` adds a name no one uses (a real
/// change).
fn worker_policy(tls: u16, plain: u16, generation: u32, pii: bool) -> Value {
    let mut allow = vec![
        HOST.to_owned(),
        format!("127.0.0.1/32:{tls}"),
        format!("127.0.0.1/32:{plain}"),
        "*.up.test".to_owned(),
    ];
    if generation % 2 == 1 {
        allow.push(format!("gen-{generation}.test"));
    }
    // `dns_resolver` asks a fresh name each time, so that every query
    // reaches the name server the soak fails; while it fails, answers come
    // at once and a worker asks far more than the tunnelling guard's 120
    // new names a minute, which it then (rightly) refuses.
    let dns = json!({ "dns": { "max_unique_subdomains_per_minute": 100_000 } });
    let mut policy = intercepting_policy(&allow, dns);
    policy["credentials"] = json!([{ "credential": "api" }]);
    if pii {
        policy["pii"] = json!({ "enabled": true });
    }
    policy
}

/// Writes both workers' policies: `main` (PII) and `nopii`.
fn write_worker_policies(dir: &Path, tls: u16, plain: u16, generation: u32) {
    write_policy(dir, "main", &worker_policy(tls, plain, generation, true));
    write_policy(dir, "nopii", &worker_policy(tls, plain, generation, false));
}

/// The Authorization headers `upstream` saw: (the secret, anything else).
fn authorizations(upstream: &HttpsUpstream) -> (u64, u64) {
    let want = format!("Bearer {SECRET}");
    upstream
        .requests()
        .iter()
        .filter_map(|r| r.header("authorization"))
        .fold((0, 0), |(ok, bad), seen| {
            if seen == want {
                (ok + 1, bad)
            } else {
                (ok, bad + 1)
            }
        })
}

fn churn_policy(plain: u16) -> Value {
    intercepting_policy(&[format!("127.0.0.1/32:{plain}")], json!({}))
}

fn spare_policy(generation: u32) -> Value {
    intercepting_policy(&[format!("spare-{generation}.test")], json!({}))
}

/// A plain GET from `cgroup` to the plain upstream: `Ok` on a 200.
fn curl_plain(cgroup: &Path, plain: u16) -> Result<(), String> {
    let url = format!("http://127.0.0.1:{plain}/echo");
    let out = sluice_e2e::run::Sandboxed::at(cgroup)
        .timeout(Duration::from_secs(20))
        .run(&[
            "curl",
            "-sS",
            "--max-time",
            "15",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &url,
        ]);
    match (out.success(), out.stdout_str().trim()) {
        (true, "200") => Ok(()),
        (_, code) => Err(format!("curl_{}_{code}", out.status.code().unwrap_or(-1))),
    }
}

/// The driver's own operations on churned sandboxes and sessions.
struct Churn {
    n: u32,
    ops: Vec<Op>,
}

impl Churn {
    fn record(&mut self, op: &str, t0: f64, result: Result<(), String>) {
        self.ops.push(Op {
            op: op.to_owned(),
            t0,
            t1: now(),
            ok: result.is_ok(),
            requests: 1,
            err: result.err(),
        });
    }

    /// A sandbox added (in a new namespace every other time), used,
    /// removed, then refused; a session under worker 0 added, used, removed.
    fn run(&mut self, daemon: &Daemon, worker0: &TestCgroup, plain: u16) {
        self.n += 1;
        let id = format!("churn-{}", self.n);
        let cgroup = daemon.root().child(&id);
        let netns = self.n.is_multiple_of(2).then(TestNetns::new);
        let path = cgroup.path_str();
        let mut add = vec![
            "sandbox", "add", &id, "--cgroup", &path, "--policy", "churn",
        ];
        let ns_path = netns
            .as_ref()
            .map(|n| n.path().to_string_lossy().into_owned());
        if let Some(ns) = &ns_path {
            add.extend(["--netns", ns]);
        }
        let t0 = now();
        let added = daemon.cli(&add);
        let used = if added.success() {
            let mut run = in_cgroup(&cgroup).timeout(Duration::from_secs(20));
            if let Some(ns) = &netns {
                run = run.netns(ns);
            }
            let url = format!("http://127.0.0.1:{plain}/echo");
            let out = run.run(&[
                "curl",
                "-sS",
                "--max-time",
                "15",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                &url,
            ]);
            match out.stdout_str().trim() {
                "200" => Ok(()),
                code => Err(format!("status_{code}")),
            }
        } else {
            Err(format!("add_failed: {}", added.stderr_str().trim()))
        };
        self.record("churn_sandbox", t0, used);
        let t0 = now();
        let removed = daemon.cli(&["sandbox", "rm", &id]);
        let refused = match (removed.success(), curl_plain(cgroup.path(), plain)) {
            (false, _) => Err("rm_failed".to_owned()),
            (true, Ok(())) => Err("reached_after_rm".to_owned()),
            (true, Err(_)) => Ok(()),
        };
        self.record("churn_refused_after_rm", t0, refused);
        drop(cgroup);
        drop(netns);

        let task = format!("task-{}", self.n);
        let session = worker0.child(&task);
        let t0 = now();
        let added = daemon.cli(&[
            "session",
            "add",
            "w0",
            &task,
            "--cgroup",
            &session.path_str(),
        ]);
        let used = match added.success() {
            true => curl_plain(session.path(), plain),
            false => Err(format!("session_add_failed: {}", added.stderr_str().trim())),
        };
        let removed = daemon.cli(&["session", "rm", "w0", &task]);
        self.record(
            "session",
            t0,
            used.and(if removed.success() {
                Ok(())
            } else {
                Err("session_rm_failed".into())
            }),
        );
        drop(session);
    }
}

/// The placeholder `sluice sandbox env` gives `sandbox` for `api`.
fn placeholder(daemon: &Daemon, sandbox: &str) -> String {
    let out = daemon.cli(&["sandbox", "env", sandbox]);
    out.expect_success("sluice sandbox env");
    let text = out.stdout_str();
    text.lines()
        .find_map(|l| l.strip_prefix("export API="))
        .unwrap_or_else(|| panic!("no API placeholder in:\n{text}"))
        .trim_matches('\'')
        .to_owned()
}

/// Stops `upstream` (its connections dropped) and starts it again on its port.
fn restart(upstream: HttpsUpstream, ca: &TestCa) -> HttpsUpstream {
    let port = upstream.port();
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    drop(upstream);
    // The old runtime stops in the background: wait until its port is free.
    eventually("the upstream's port to be free", WAIT, || {
        std::net::TcpListener::bind(SocketAddr::new(loopback, port))
            .map(drop)
            .map_err(|e| e.to_string())
    });
    let options = UpstreamOptions {
        port: Some(port),
        ..UpstreamOptions::default()
    };
    HttpsUpstream::start(loopback, &[HOST], ca, options)
}

/// Ends the fault open in `slot`, if any.
fn close(open: &mut BTreeMap<&str, (Action, f64)>, faults: &mut Vec<Fault>, slot: &str) {
    if let Some((kind, start)) = open.remove(slot) {
        faults.push(Fault {
            kind,
            start,
            end: now(),
        });
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn report(label: &str, elapsed: f64, t: &Tally, s: &Sample) {
    let excused: u64 = t.excused.values().sum();
    let unexpected: u64 = t.unexpected.values().map(|v| v.0).sum();
    eprintln!(
        "soak {label} {:>6.0}s: {} requests, {excused} errors explained by faults, \
         {unexpected} unexpected; daemon RSS {}, {} fds, {} tasks",
        elapsed,
        t.requests,
        mib(s.rss_kib),
        s.fds,
        s.tasks
    );
}

#[test]
fn soak_with_faults() {
    let minutes = minutes();
    let total = Duration::from_secs_f64(minutes * 60.0);
    let cycle = CYCLE_SECS.min(total.as_secs_f64());
    let ca = TestCa::upstream();
    let mut tls = HttpsUpstream::v4(&[HOST], &ca);
    let plain = HttpsUpstream::plain_v4();
    let denied = HttpsUpstream::plain_v4();
    let dns = TestDns::start();
    let (tls_port, plain_port) = (tls.port(), plain.port());

    let mut builder = DaemonBuilder::new();
    let audit = AuditPipe::new(&builder.dir().join("audit.pipe"));
    let workers: Vec<TestCgroup> = (0..WORKERS)
        .map(|i| builder.cgroup(&format!("w{i}")))
        .collect();
    let netns = TestNetns::new();
    let secret_path = builder.dir().join("api.secret");
    std::fs::write(&secret_path, format!("{SECRET}\n")).expect("write secret");
    builder
        .trust_upstream_ca(&ca)
        .policy_doc("main", worker_policy(tls_port, plain_port, 0, true))
        .policy_doc("nopii", worker_policy(tls_port, plain_port, 0, false))
        .policy_doc("churn", churn_policy(plain_port))
        .policy_doc("spare", spare_policy(0))
        .config_key("audit", json!(audit.path()))
        .config_key(
            "resolver",
            json!({
                "hosts": { HOST: ["127.0.0.1"] },
                "nameservers": [dns.addr().to_string()],
                "system": false,
            }),
        )
        .credential(json!({
            "name": "api",
            "source": { "file": secret_path },
            "hosts": [HOST],
            "scheme": { "type": "bearer" },
            "placeholder": { "prefix": "sk-live-", "length": SECRET.len() },
        }));
    for (i, cgroup) in workers.iter().enumerate() {
        let policy = if i == WS_WORKER { "nopii" } else { "main" };
        builder.sandbox(&format!("w{i}"), cgroup, (i == 1).then_some(&netns), policy);
    }
    let daemon = builder.start();
    let cafile = daemon.wait_ca_pem();
    let pid = daemon.pid();
    let policy_dir = daemon.policy_dir();

    let start = Instant::now();
    let until = now() + total.as_secs_f64();
    let mut logs = Vec::new();
    let mut clients = Vec::new();
    for (i, cgroup) in workers.iter().enumerate() {
        let log = daemon.dir().join(format!("w{i}.jsonl"));
        let spec = json!({
            "until": until, "log": log, "cafile": cafile, "host": HOST,
            "tls_port": tls_port, "plain_port": plain_port, "denied_port": denied.port(),
            "placeholder": placeholder(&daemon, &format!("w{i}")), "ws": i == WS_WORKER,
        });
        let mut run = in_cgroup(cgroup).timeout(total + Duration::from_secs(120));
        if i == 1 {
            run = run.netns(&netns);
        }
        clients.push(run.spawn_python(CLIENT, &[&spec.to_string()]));
        logs.push(log);
    }

    let plan = judge::schedule(cycle);
    let report_every = Duration::from_secs_f64((total.as_secs_f64() / 30.0).max(10.0));
    let mut samples: Vec<Sample> = Vec::new();
    let mut faults: Vec<Fault> = Vec::new();
    let mut open: BTreeMap<&str, (Action, f64)> = BTreeMap::new();
    let mut churn = Churn {
        n: 0,
        ops: Vec::new(),
    };
    let (mut generation, mut spare_generation, mut reloads) = (0u32, 0u32, 0u64);
    let (mut next_reload, mut next_sample, mut next_report) =
        (Duration::ZERO, Duration::ZERO, report_every);
    let mut next_step = 0usize;
    let mut cycle_start = 0.0f64;
    let mut audit_errors_seen = 0.0;
    // Authorization headers the upstream saw: (the secret, anything else).
    let mut credentials = (0u64, 0u64);

    while start.elapsed() < total {
        let elapsed = start.elapsed();
        if elapsed >= next_sample {
            let sample = proc_stats::sample(pid, elapsed.as_secs_f64()).expect("the daemon runs");
            if samples.is_empty() {
                report("start", 0.0, &Tally::default(), &sample);
            }
            samples.push(sample);
            next_sample += SAMPLE_EVERY;
        }
        if elapsed >= next_report {
            let mut ops = read_ops(&logs);
            ops.extend(churn.ops.iter().cloned());
            // Faults still going count as ending now.
            let mut so_far = faults.clone();
            so_far.extend(open.values().map(|&(kind, start)| Fault {
                kind,
                start,
                end: now(),
            }));
            report(
                "at",
                elapsed.as_secs_f64(),
                &tally(&ops, &so_far),
                samples.last().expect("sampled"),
            );
            next_report += report_every;
        }
        if elapsed >= next_reload {
            // The workers' policy rewritten unchanged (which must disturb
            // nothing), the unused one changed (a real reload).
            write_worker_policies(&policy_dir, tls_port, plain_port, generation);
            spare_generation += 1;
            write_policy(&policy_dir, "spare", &spare_policy(spare_generation));
            reloads += 1;
            next_reload += RELOAD_EVERY;
        }
        let in_cycle = elapsed.as_secs_f64() - cycle_start;
        if next_step == plan.len() && in_cycle >= cycle {
            cycle_start += cycle;
            next_step = 0;
        }
        if let Some(&(at, action)) = plan.get(next_step)
            && in_cycle >= at
        {
            next_step += 1;
            let t = now();
            match action {
                Action::Churn => churn.run(&daemon, &workers[0], plain_port),
                Action::RestartUpstream => {
                    let (ok, bad) = authorizations(&tls);
                    credentials = (credentials.0 + ok, credentials.1 + bad);
                    tls = restart(tls, &ca);
                    faults.push(Fault {
                        kind: action,
                        start: t,
                        end: now(),
                    });
                }
                Action::ChangePolicy => {
                    generation += 1;
                    write_worker_policies(&policy_dir, tls_port, plain_port, generation);
                    faults.push(Fault {
                        kind: action,
                        start: t,
                        end: now(),
                    });
                }
                Action::ResolverServfail | Action::ResolverSilent | Action::ResolverHealthy => {
                    close(&mut open, &mut faults, "resolver");
                    dns.fail(match action {
                        Action::ResolverServfail => Failure::Servfail,
                        Action::ResolverSilent => Failure::Silent,
                        _ => Failure::None,
                    });
                    if action != Action::ResolverHealthy {
                        open.insert("resolver", (action, t));
                    }
                }
                Action::AuditSlow | Action::AuditClosed | Action::AuditFast => {
                    close(&mut open, &mut faults, "audit");
                    audit.set(match action {
                        Action::AuditSlow => Drain::Slow,
                        Action::AuditClosed => Drain::Closed,
                        _ => Drain::Fast,
                    });
                    if action == Action::AuditFast {
                        // Once the sink is back, the loss must show.
                        audit_errors_seen =
                            daemon.metric("sluice_audit_errors_total").unwrap_or(0.0);
                    } else {
                        open.insert("audit", (action, t));
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    // Whatever was failing heals; the clients finish their last operation.
    dns.fail(Failure::None);
    audit.set(Drain::Fast);
    for (slot, (kind, start)) in std::mem::take(&mut open) {
        let _ = slot;
        faults.push(Fault {
            kind,
            start,
            end: now(),
        });
    }
    let outputs: Vec<_> = clients.into_iter().map(|c| c.wait()).collect();
    let (ok, bad) = authorizations(&tls);
    credentials = (credentials.0 + ok, credentials.1 + bad);
    let last =
        proc_stats::sample(pid, start.elapsed().as_secs_f64()).expect("the daemon still runs");
    samples.push(last);
    let mut ops = read_ops(&logs);
    ops.extend(churn.ops.iter().cloned());
    let t = tally(&ops, &faults);
    let first = samples[0];
    report("end", last.secs, &t, &last);

    let metric = |name: &str| daemon.metric(name).unwrap_or(0.0);
    eprintln!(
        "soak summary ({minutes} min, {} fault cycles of {cycle:.0} s, {reloads} policy rewrites):",
        faults
            .iter()
            .filter(|f| f.kind == Action::RestartUpstream)
            .count()
    );
    eprintln!(
        "  daemon RSS {} → {}, fds {} → {}, tasks {} → {}",
        mib(first.rss_kib),
        mib(last.rss_kib),
        first.fds,
        last.fds,
        first.tasks,
        last.tasks
    );
    eprintln!("  requests by operation: {:?}", t.by_op);
    eprintln!("  errors explained by a fault: {:?}", t.excused);
    eprintln!("  unexpected errors: {:?}", t.unexpected);
    eprintln!(
        "  daemon: policy reloads ok {}, failed {}; audit events lost {}; audit bytes read {}; PII detections {}; denied upstream hits {}",
        metric("sluice_policy_reloads_total{result=\"ok\"}"),
        metric("sluice_policy_reloads_total{result=\"error\"}"),
        metric("sluice_audit_errors_total"),
        audit.bytes(),
        metric("sluice_pii_detections_total"),
        denied.request_count() + denied.connection_count(),
    );
    eprintln!(
        "  credential: the upstream saw the secret {} times, anything else {} times",
        credentials.0, credentials.1
    );

    for out in &outputs {
        assert!(out.success(), "a client ended badly:\n{out}");
    }
    assert_eq!(
        denied.connection_count(),
        0,
        "the denied destination was reached"
    );
    assert_eq!(
        denied.request_count(),
        0,
        "the denied destination was reached"
    );
    assert_eq!(
        credentials.1, 0,
        "the upstream saw a placeholder or no secret"
    );
    assert!(credentials.0 > 0, "no request carried the credential");
    assert!(
        t.unexpected.is_empty(),
        "errors no fault explains: {:?}",
        t.unexpected
    );
    for op in [
        "h1_keepalive",
        "h1_new",
        "h2",
        "sse",
        "ws",
        "dns_static",
        "dns_resolver",
        "denied",
        "churn_sandbox",
        "session",
    ] {
        assert!(
            t.by_op.get(op).copied().unwrap_or(0) > 0,
            "no {op} succeeded: {:?}",
            t.by_op
        );
    }
    assert!(
        metric("sluice_pii_detections_total") > 0.0,
        "PII was never detected"
    );
    assert!(
        audit_errors_seen > 0.0,
        "the unwritable audit sink lost nothing visibly"
    );
    if minutes >= GROWTH_MIN_MINUTES {
        let failures = judge::growth_failures(&samples, judge::FLOOR);
        assert!(
            failures.is_empty(),
            "growth that does not level off: {failures:?}"
        );
    }
}
