//! One benchmark run: start the upstream, Sluice (a sandbox per way of
//! running, one publishing a web app through the ingress) and the peers,
//! measure every metric against every target in interleaved rounds, then
//! the memory of idle intercepted connections, and write the report,
//! `results.json` and the chart into the output directory.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use anyhow::Context as _;
use sluice_e2e::TestCa;

use crate::{
    peers::{self, PeerCa},
    plan::{self, Metric, Sizes, Target, progress},
    report,
    results::{Machine, Memory, MetricResult, Results, TargetResult},
    secrets::{self, Bound, OsRandom},
    sluice::Sluice,
    spec::{Dial, TlsDial},
    upstream::{NAME, Upstream},
};

pub struct Options {
    pub smoke: bool,
    pub out: PathBuf,
    /// Only these targets (all when empty).
    pub only: Vec<String>,
    /// Overrides the closed-loop measurement length.
    pub secs: Option<f64>,
    /// Overrides the idle connection counts of the memory figure.
    pub idle_conns: Vec<usize>,
    /// The memory figure alone: no rounds, nothing written.
    pub memory_only: bool,
    /// How long the idle connections stay open after each reading.
    pub hold_idle: Duration,
    /// The command line that reproduces the run, for the report.
    pub command: String,
}

/// What `sluice-full` actually runs today; update as stages land.
const STAGES: &str = "network policy, credential injection (bearer placeholder swapped for \
     a secret drawn at random for the run) and streaming response credential redaction, \
     `pii` and `injection_defense` \
     switched on (the requests are GETs, so they read empty bodies; the scanners' own \
     throughput is the criterion benchmark's), audit of every request";

pub fn run(options: Options) -> anyhow::Result<()> {
    let mut sizes = if options.smoke {
        Sizes::smoke()
    } else {
        Sizes::full()
    };
    if let Some(secs) = options.secs {
        sizes.secs = secs;
    }
    if options.memory_only {
        sizes.rounds = 0;
    }
    let sizes = sizes.with_idle_steps(&options.idle_conns);
    // Before anything starts, so all inherit it: n idle connections take n
    // descriptors in the client, 2n in the daemon (both sides) and n in the
    // upstream (this process).
    let fds = crate::raise_fd_limit(fd_budget(sizes.idle_conns));
    let (sizes, memory_note) = sizes.within_fd_limit(fds);
    if let Some(note) = &memory_note {
        progress(note);
    }
    std::fs::create_dir_all(&options.out)?;
    let load_before = loadavg();
    let work = tempfile::Builder::new().prefix("sluice-bench-").tempdir()?;
    let dir = work.path();
    // Squid drops to its own user and must reach its files.
    set_mode(dir, 0o755)?;

    let upstream_ca = TestCa::new("sluice-bench upstream CA");
    let upstream_ca_file = dir.join("upstream-ca.pem");
    upstream_ca.write_pem(&upstream_ca_file);
    set_mode(&upstream_ca_file, 0o644)?;
    let upstream = Upstream::start(upstream_ca.issue(&[NAME, "127.0.0.1"]))?;
    progress(&format!(
        "upstream: plain {} tls {}",
        upstream.plain, upstream.tls
    ));

    // Fresh every run, from the OS: no secret is the benchmark's own.
    let mut random = OsRandom::open()?;
    let drawn = secrets::draw(sizes.secrets.max(1), |n| random.below(n));
    let sluice = Sluice::start(
        &upstream_ca,
        &[upstream.plain.port(), upstream.tls.port()],
        sizes.idle_conns,
        &drawn,
    )?;
    progress(&format!("sluice: pid {}", sluice.daemon.pid()));
    let peer_ca = PeerCa::new()?;
    let peer_ca_file = dir.join("peer-ca.pem");
    std::fs::write(&peer_ca_file, &peer_ca.cert_pem)?;
    let mitmproxy = peers::mitmproxy::start(dir, &peer_ca, &upstream_ca_file)?;
    progress(&format!("mitmproxy: {}", mitmproxy.addr));
    let squid = peers::squid::start(dir, &peer_ca, &upstream_ca_file)?;
    progress(&format!("squid: {}", squid.addr));
    let nginx = peers::nginx::start(dir, &upstream_ca, &upstream_ca_file, upstream.tls)?;
    progress(&format!("nginx: {}", nginx.addr));

    let tls = |ca: &Path| {
        Some(TlsDial {
            sni: NAME.to_owned(),
            ca_file: ca.to_owned(),
        })
    };
    let dial = |addr: SocketAddr, tls: Option<TlsDial>| Dial {
        addr,
        connect: None,
        tls,
        host: format!("{NAME}:{}", addr.port()),
        headers: Vec::new(),
        cgroup: None,
        netns: None,
    };
    let steered = |dial: Dial, cgroup: &Path| Dial {
        cgroup: Some(cgroup.to_owned()),
        ..dial
    };
    let proxied = |proxy: SocketAddr| Dial {
        addr: proxy,
        connect: Some(format!("127.0.0.1:{}", upstream.tls.port())),
        ..dial(upstream.tls, tls(&peer_ca_file))
    };
    let direct_tls = dial(upstream.tls, tls(&upstream_ca_file));
    let intercepted = dial(upstream.tls, tls(&sluice.ca));
    let daemon = Some(sluice.daemon.pid());
    // The full pipeline with each secret bound (the client sends the
    // sandbox's placeholder), and with none bound (nothing sent).
    let mut bound: Vec<Target> = sluice
        .bound
        .iter()
        .zip(secrets::BOUND)
        .map(|(sandbox, name)| {
            let mut dial = steered(intercepted.clone(), sandbox.cgroup.path());
            dial.headers
                .push(("authorization".to_owned(), sandbox.bearer.clone()));
            let mut t = target(name, true, dial, daemon);
            if name != secrets::BOUND[0] {
                t.metrics = &[Metric::Bodies1m];
            }
            t
        })
        .collect();
    let full = bound.remove(0);
    let mut nocred = target(
        secrets::WITHOUT,
        true,
        steered(intercepted.clone(), sluice.nocred.path()),
        daemon,
    );
    nocred.metrics = &[Metric::Bodies1m];
    // The web app: the upstream's handler on loopback inside the `app`
    // sandbox's own namespace, published through the ingress. Its direct
    // connection is dialled from inside that namespace.
    let app = upstream.serve_plain(crate::netns::listen_in(&sluice.netns.path())?)?;
    let app_host = sluice.publish_app(app.port())?;
    progress(&format!(
        "app: {app} in {}, published as {app_host} on the ingress at {}",
        sluice.netns.name(),
        sluice.ingress
    ));
    let direct_app = Dial {
        netns: Some(sluice.netns.path()),
        ..dial(app, None)
    };
    let mut through_ingress = Dial {
        host: app_host,
        ..dial(sluice.ingress, None)
    };
    through_ingress
        .headers
        .push(("authorization".to_owned(), sluice.viewer.clone()));
    let mut all = vec![
        target("direct-tcp", false, dial(upstream.plain, None), None),
        target("direct-tls", true, direct_tls.clone(), None),
        target(
            "sluice-http",
            false,
            steered(dial(upstream.plain, None), sluice.pass.path()),
            daemon,
        ),
        target(
            "passthrough-tls",
            true,
            steered(direct_tls, sluice.pass.path()),
            daemon,
        ),
        target(
            "sluice-empty",
            true,
            steered(intercepted, sluice.empty.path()),
            daemon,
        ),
        full,
    ];
    // Beside `sluice-full`: its other secrets, then none bound.
    all.extend(bound);
    all.push(nocred);
    all.extend([
        target(
            "mitmproxy",
            true,
            proxied(mitmproxy.addr),
            Some(mitmproxy.child.id()),
        ),
        target("squid", true, proxied(squid.addr), Some(squid.child.id())),
        // A reverse proxy: dialled directly, its own certificate under the
        // upstream CA (no CONNECT).
        target(
            "nginx",
            true,
            dial(nginx.addr, tls(&upstream_ca_file)),
            Some(nginx.child.id()),
        ),
        app_target("direct-app", direct_app, None),
        app_target("ingress", through_ingress, daemon),
    ]);
    let targets: Vec<Target> = all
        .into_iter()
        .filter(|t| options.only.is_empty() || options.only.iter().any(|o| o == t.name))
        .collect();

    let mut figures: BTreeMap<(&str, Metric), MetricResult> = BTreeMap::new();
    for round in 0..sizes.rounds {
        for metric in Metric::ALL {
            let mut order: Vec<&Target> = targets.iter().filter(|t| metric.applies(t)).collect();
            let len = order.len().max(1);
            order.rotate_left(round % len);
            for target in order {
                let work = metric.work(&sizes);
                let limit = Duration::from_secs_f64(sizes.latency_secs + sizes.secs + 180.0);
                let result = figures.entry((target.name, metric)).or_default();
                match plan::run_client(&target.dial, &work, limit, target.proxy) {
                    Ok(plan::Measured { outcome, usage }) => {
                        progress(&format!(
                            "round {} {:<15} {:<14} ok {:>7} errors {:>4} {:.2}{}{}",
                            round + 1,
                            target.name,
                            metric.key(),
                            outcome.ok,
                            outcome.errors,
                            metric.value(&outcome),
                            usage
                                .map(|u| format!(" cpu {:.0} µs rss {} KiB", u.cpu_us, u.rss_kib))
                                .unwrap_or_default(),
                            outcome
                                .first_error
                                .as_ref()
                                .map(|e| format!(" ({e})"))
                                .unwrap_or_default()
                        ));
                        result.add(metric, outcome, usage);
                    }
                    Err(e) => {
                        progress(&format!("{} {}: {e:#}", target.name, metric.key()));
                        result.errors += 1;
                        result.first_error.get_or_insert(format!("{e:#}"));
                    }
                }
            }
        }
    }

    let mut memory = Vec::new();
    if let Some(full) = targets.iter().find(|t| t.name == "sluice-full") {
        // Every step from the RSS before the first: the allocator keeps
        // what a smaller step freed, and a larger step measured from the
        // RSS after it would count only what it added to that.
        let baseline = settled_rss(&sluice);
        for &n in &sizes.idle_steps {
            match idle_memory(&sluice, full, n, baseline, options.hold_idle) {
                Ok(m) => memory.push(m),
                Err(e) => progress(&format!("memory at {n}: {e:#}")),
            }
        }
    }

    if options.memory_only {
        anyhow::ensure!(!memory.is_empty(), "no memory figure was taken");
        return Ok(());
    }

    let secrets: Vec<Bound> = drawn
        .iter()
        .zip(secrets::BOUND)
        .filter(|(_, name)| targets.iter().any(|t| t.name == *name))
        .map(|(secret, name)| Bound::new(name, secret))
        .collect();
    progress(&format!("secrets bound: {secrets:?}"));
    let mut results = Results {
        date: command_text("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        smoke: options.smoke,
        machine: machine(load_before),
        sizes,
        stages: STAGES.to_owned(),
        targets: targets
            .iter()
            .map(|t| TargetResult {
                name: t.name.to_owned(),
                baseline: t.baseline.to_owned(),
                metrics: Metric::ALL
                    .iter()
                    .filter_map(|m| {
                        let mut r = figures.remove(&(t.name, *m))?;
                        r.finish();
                        Some((*m, r))
                    })
                    .collect(),
            })
            .collect(),
        memory,
        memory_note,
        secrets,
        bound_credential: None,
    };
    results.bound_credential = results.bound_credential();
    drop((mitmproxy, squid, nginx, sluice, upstream));
    write_outputs(&results, &options)
}

/// The most idle connections the memory figure may hold.
pub const MAX_IDLE_CONNS: usize = 100_000;

/// Descriptors a run holding `idle` connections needs in its busiest
/// process (the daemon: both sides of each), with room for the rest.
fn fd_budget(idle: usize) -> u64 {
    (2 * idle as u64 + 16_384).max(1 << 17)
}

/// A way to the upstream: compared with the direct connection of its kind
/// (TLS or plain), every metric that kind has.
fn target(name: &'static str, tls: bool, dial: Dial, proxy: Option<u32>) -> Target {
    Target {
        name,
        baseline: if tls { "direct-tls" } else { "direct-tcp" },
        metrics: if tls { &Metric::ALL } else { &Metric::PLAIN },
        dial,
        proxy,
    }
}

/// A way to the published web app, compared with dialling it directly.
fn app_target(name: &'static str, dial: Dial, proxy: Option<u32>) -> Target {
    Target {
        name,
        baseline: "direct-app",
        metrics: &Metric::APP,
        dial,
        proxy,
    }
}

/// Daemon RSS with `n` idle intercepted connections held, minus `before`
/// (the RSS before the first step).
fn idle_memory(
    sluice: &Sluice,
    target: &Target,
    n: usize,
    before: u64,
    hold: Duration,
) -> anyhow::Result<Memory> {
    // Opening takes about a millisecond a connection on a loaded machine.
    let limit = Duration::from_secs(300 + n as u64 / 100);
    let held = plan::hold_idle(&target.dial, n, limit)?;
    until_parked(sluice, held.opened);
    let after = settled_rss(sluice);
    let opened = held.opened;
    // What the daemon closed before the reading is not in its RSS.
    let open = held.sockets_open().min(opened);
    if !hold.is_zero() {
        progress(&format!("memory: holding {n} for {hold:?}"));
        std::thread::sleep(hold);
    }
    held.release();
    let memory = Memory {
        target: target.name.to_owned(),
        connections: opened,
        open_at_reading: open,
        rss_before_kib: before,
        rss_after_kib: after,
        per_conn_kib: after.saturating_sub(before) as f64 / open.max(1) as f64,
    };
    progress(&format!("memory: {memory:?}"));
    if open < opened {
        progress(&format!(
            "memory: {} of {opened} connections were closed before the reading",
            opened - open
        ));
    }
    Ok(memory)
}

/// Waits until `n` connections are parked (`sluice_parked_connections`):
/// an HTTP/1 connection parks once it has waited half a second for its
/// next request, and the figure is of idle connections, not of ones just
/// answered. Gives up after 30 s (a connection the daemon closed never
/// parks); the report divides by the connections open at the reading.
fn until_parked(sluice: &Sluice, n: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        let parked = sluice
            .daemon
            .metric("sluice_parked_connections")
            .unwrap_or(0.0);
        if parked >= n as f64 {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    progress(&format!(
        "memory: fewer than {n} connections parked after 30 s"
    ));
}

/// The RSS once two readings 200 ms apart agree within 1% (or after 5 s).
fn settled_rss(sluice: &Sluice) -> u64 {
    let mut last = sluice.rss_kib();
    for _ in 0..25 {
        std::thread::sleep(Duration::from_millis(200));
        let now = sluice.rss_kib();
        if now.abs_diff(last) * 100 <= last {
            return now;
        }
        last = now;
    }
    last
}

fn write_outputs(results: &Results, options: &Options) -> anyhow::Result<()> {
    let md = report::markdown(results, &options.command);
    let md_path = options.out.join("latest.md");
    std::fs::write(&md_path, &md)?;
    let json_path = options.out.join("results.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(results)?)?;
    let png = options.out.join("chart.png");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("chart.py");
    let python = Path::new(peers::VENV).join("bin/python");
    let status = Command::new(&python)
        .arg(&script)
        .arg(&json_path)
        .arg(&png)
        .status()
        .with_context(|| format!("running {} (run `cargo xtask setup`)", python.display()))?;
    anyhow::ensure!(status.success(), "the chart script failed: {status}");
    println!("{md}");
    progress(&format!(
        "wrote {}, {} and {}",
        md_path.display(),
        json_path.display(),
        png.display()
    ));
    Ok(())
}

fn machine(load_before: f64) -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: f64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    Machine {
        cpu,
        cores: std::thread::available_parallelism().map_or(1, usize::from),
        memory_gib: mem_kib / (1024.0 * 1024.0),
        kernel: command_text("uname", &["-r"]),
        load_before,
        load_after: loadavg(),
    }
}

fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

fn command_text(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn set_mode(path: &Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("chmod {}", path.display()))
}
