//! A Sluice daemon for one test: its config (written to a tempdir), its
//! cgroup root, its bpffs pin directory, the process, and what it reports
//! (status, metrics, audit log, stderr).
//!
//! Drop kills the daemon, removes the pin directory recursively (which
//! detaches the programs) and removes the cgroup root with everything in it.

use std::{
    collections::BTreeMap,
    fs::OpenOptions,
    net::{IpAddr, SocketAddr},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{
    TestCgroup, TestNetns, WAIT, bpffs_mount, cgroup2_mount, eventually,
    pki::TestCa,
    prom, require_root,
    run::{self, Output},
    sluice_bin, unique_name,
};

/// How long the daemon may take to answer `status` as ready.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The interception CA's directory, under the test's tempdir.
const CA_DIR: &str = "ca";

/// One allow rule of a policy.
#[derive(Debug, Clone)]
pub enum Rule {
    Cidr { cidr: String, ports: Vec<u16> },
    Host { host: String, ports: Vec<u16> },
}

impl Rule {
    /// Allows exactly `addr` (its IP as a /32 or /128, and its port).
    pub fn exact(addr: SocketAddr) -> Rule {
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        Rule::Cidr {
            cidr: format!("{}/{bits}", addr.ip()),
            ports: vec![addr.port()],
        }
    }

    pub fn cidr(cidr: &str, ports: &[u16]) -> Rule {
        Rule::Cidr {
            cidr: cidr.to_owned(),
            ports: ports.to_vec(),
        }
    }

    pub fn host(host: &str, ports: &[u16]) -> Rule {
        Rule::Host {
            host: host.to_owned(),
            ports: ports.to_vec(),
        }
    }

    /// The rule as a policy `allow_out` entry.
    fn to_json(&self) -> Value {
        match self {
            Rule::Cidr { cidr: to, ports } | Rule::Host { host: to, ports } => {
                json!({ "to": to, "ports": ports })
            }
        }
    }
}

/// Collects a config, then starts the daemon.
pub struct DaemonBuilder {
    dir: tempfile::TempDir,
    root: TestCgroup,
    bpffs: PathBuf,
    /// name → the policy document (JSON is YAML).
    policies: BTreeMap<String, Value>,
    sandboxes: Vec<Value>,
    ssrf_guard: bool,
    hosts: BTreeMap<String, Vec<IpAddr>>,
    sniff_timeout_ms: u64,
    connect_timeout_ms: u64,
    /// PEM files written by [`DaemonBuilder::trust_upstream_ca`].
    upstream_ca_files: Vec<PathBuf>,
    /// The daemon config's `credentials:` list.
    credentials: Vec<Value>,
    /// `limits.drain_timeout_ms`, when the test sets it.
    drain_timeout_ms: Option<u64>,
    /// `limits.idle_timeout_ms`, when the test sets it.
    idle_timeout_ms: Option<u64>,
    /// Further top-level config keys (`apps`, `approvals`, ...).
    extra: serde_json::Map<String, Value>,
    /// Other `limits` keys the test sets.
    limits: serde_json::Map<String, Value>,
    /// Other `tls` keys the test sets.
    tls: serde_json::Map<String, Value>,
}

impl DaemonBuilder {
    /// Checks the preconditions (root, binary), creates a fresh cgroup root
    /// under the cgroup2 mount and picks a fresh bpffs pin directory.
    pub fn new() -> DaemonBuilder {
        require_root();
        sluice_bin();
        let bpffs = bpffs_mount().join(unique_name("sluice-test"));
        let root = TestCgroup::new_unique(&cgroup2_mount(), "sluice-test");
        let dir = tempfile::Builder::new()
            .prefix("sluice-e2e-")
            .tempdir()
            .expect("tempdir");
        DaemonBuilder {
            dir,
            root,
            bpffs,
            policies: BTreeMap::new(),
            sandboxes: Vec::new(),
            ssrf_guard: true,
            hosts: BTreeMap::new(),
            sniff_timeout_ms: 2000,
            connect_timeout_ms: 5000,
            upstream_ca_files: Vec::new(),
            credentials: Vec::new(),
            drain_timeout_ms: None,
            idle_timeout_ms: None,
            extra: serde_json::Map::new(),
            tls: serde_json::Map::new(),
            limits: serde_json::Map::new(),
        }
    }

    /// Sets a key of the config's `tls` section (`max_mints_per_second`).
    pub fn tls_key(&mut self, key: &str, value: Value) -> &mut DaemonBuilder {
        self.tls.insert(key.to_owned(), value);
        self
    }

    /// Sets a top-level config key (`apps`, `approvals`, `explicit_proxy`).
    pub fn config_key(&mut self, key: &str, value: Value) -> &mut DaemonBuilder {
        self.extra.insert(key.to_owned(), value);
        self
    }

    /// The cgroup the eBPF programs attach to.
    pub fn root(&self) -> &TestCgroup {
        &self.root
    }

    /// A new cgroup `name` directly under the root (registered or not; that
    /// is up to the test).
    pub fn cgroup(&self, name: &str) -> TestCgroup {
        self.root.child(name)
    }

    /// A default-deny policy allowing exactly `rules` (`allow_out`, with
    /// `deny_out: [ALL_TRAFFIC]`).
    pub fn policy(&mut self, name: &str, rules: Vec<Rule>) -> &mut DaemonBuilder {
        let allow: Vec<Value> = rules.iter().map(Rule::to_json).collect();
        let doc = json!({
            "network": {
                "allow_out": allow,
                "deny_out": ["ALL_TRAFFIC"],
                "ssrf_guard": self.ssrf_guard,
            }
        });
        self.policies.insert(name.to_owned(), doc);
        self
    }

    /// A policy written out in full.
    pub fn policy_doc(&mut self, name: &str, doc: Value) -> &mut DaemonBuilder {
        self.policies.insert(name.to_owned(), doc);
        self
    }

    /// The SSRF guard of policies built by [`DaemonBuilder::policy`] from
    /// here on. Tests whose upstreams are on loopback and that are about
    /// name rules turn it off; explicit address rules pass it anyway.
    pub fn ssrf_guard(&mut self, on: bool) -> &mut DaemonBuilder {
        self.ssrf_guard = on;
        self
    }

    /// A sandbox in the config. Its cgroup is written relative to the root
    /// when it lies under it (the common form), else absolute.
    pub fn sandbox(
        &mut self,
        id: &str,
        cgroup: &TestCgroup,
        netns: Option<&TestNetns>,
        policy: &str,
    ) -> &mut DaemonBuilder {
        let path = cgroup
            .path()
            .strip_prefix(self.root.path())
            .unwrap_or(cgroup.path());
        let mut entry = json!({ "id": id, "cgroup": path, "policy": policy });
        if let Some(netns) = netns {
            entry["netns"] = json!(netns.path());
        }
        self.sandboxes.push(entry);
        self
    }

    /// Gives sandbox `id` (already added with [`DaemonBuilder::sandbox`])
    /// an owner: who a private web app of it admits through the ingress.
    pub fn owner(&mut self, id: &str, sub: &str, org: &str) -> &mut DaemonBuilder {
        let entry = self
            .sandboxes
            .iter_mut()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("no sandbox {id} to give an owner"));
        entry["owner"] = json!({ "sub": sub, "org": org });
        self
    }

    /// A static resolver answer.
    pub fn host(&mut self, name: &str, addrs: &[IpAddr]) -> &mut DaemonBuilder {
        self.hosts.insert(name.to_owned(), addrs.to_vec());
        self
    }

    pub fn sniff_timeout_ms(&mut self, ms: u64) -> &mut DaemonBuilder {
        self.sniff_timeout_ms = ms;
        self
    }

    pub fn connect_timeout_ms(&mut self, ms: u64) -> &mut DaemonBuilder {
        self.connect_timeout_ms = ms;
        self
    }

    /// How long SIGTERM lets connections in flight finish.
    pub fn drain_timeout_ms(&mut self, ms: u64) -> &mut DaemonBuilder {
        self.drain_timeout_ms = Some(ms);
        self
    }

    /// Sets `limits.KEY`.
    pub fn limit(&mut self, key: &str, value: Value) -> &mut DaemonBuilder {
        self.limits.insert(key.to_owned(), value);
        self
    }

    /// Sets `limits.idle_timeout_ms`.
    pub fn idle_timeout_ms(&mut self, ms: u64) -> &mut DaemonBuilder {
        self.idle_timeout_ms = Some(ms);
        self
    }

    /// Trusts `ca` for upstream certificates, and only the CAs given this
    /// way (no system roots): the first is written to
    /// `<tempdir>/upstream-ca.pem`.
    pub fn trust_upstream_ca(&mut self, ca: &TestCa) -> &mut DaemonBuilder {
        let name = match self.upstream_ca_files.len() {
            0 => "upstream-ca.pem".to_owned(),
            n => format!("upstream-ca-{n}.pem"),
        };
        let path = self.dir.path().join(name);
        ca.write_pem(&path);
        self.upstream_ca_files.push(path);
        self
    }

    /// The test's private directory (config, CA, state, audit, logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Where the daemon will pin (`bpffs` of the config).
    pub fn bpffs_dir(&self) -> &Path {
        &self.bpffs
    }

    /// The config as it will be written. The interception CA always lives
    /// in the tempdir (`<tempdir>/ca`); upstream trust is the system's
    /// unless the test named its CAs.
    pub fn config(&self) -> Value {
        let dir = self.dir.path();
        let mut tls = json!({ "ca_dir": dir.join(CA_DIR) });
        if !self.upstream_ca_files.is_empty() {
            tls["system_roots"] = json!(false);
            tls["upstream_ca_files"] = json!(self.upstream_ca_files);
        }
        for (key, value) in &self.tls {
            tls[key] = value.clone();
        }
        let mut limits = json!({
            "sniff_timeout_ms": self.sniff_timeout_ms,
            "connect_timeout_ms": self.connect_timeout_ms,
        });
        if let Some(ms) = self.drain_timeout_ms {
            limits["drain_timeout_ms"] = json!(ms);
        }
        if let Some(ms) = self.idle_timeout_ms {
            limits["idle_timeout_ms"] = json!(ms);
        }
        for (key, value) in &self.limits {
            limits[key] = value.clone();
        }
        let mut config = json!({
            "listen": { "tcp_port": 0 },
            "cgroup_root": self.root.path(),
            "bpffs": self.bpffs,
            "admin_socket": dir.join("admin.sock"),
            "state_dir": dir.join("state"),
            "metrics": "127.0.0.1:0",
            "audit": dir.join("audit.jsonl"),
            "limits": limits,
            "resolver": { "hosts": self.hosts, "nameservers": [], "system": false },
            "policy_dir": dir.join("policies"),
            "sandboxes": self.sandboxes,
            "tls": tls,
            "credentials": self.credentials,
        });
        for (key, value) in &self.extra {
            config[key] = value.clone();
        }
        config
    }

    /// A credential in the daemon config (its `source` typically a file in
    /// [`DaemonBuilder::dir`]).
    pub fn credential(&mut self, credential: Value) -> &mut DaemonBuilder {
        self.credentials.push(credential);
        self
    }

    /// Writes the config (JSON is YAML) and starts the daemon; returns once
    /// `sluice status` reports it ready.
    pub fn start(self) -> Daemon {
        let mut daemon = self.written();
        daemon.spawn();
        daemon
    }

    /// As [`DaemonBuilder::start`], the daemon run as the last argument of
    /// `wrapper` (which must exec it, so its pid is the daemon's): a
    /// private mount namespace, say.
    pub fn start_wrapped(self, wrapper: &[&str]) -> Daemon {
        let mut daemon = self.written();
        daemon.wrapper = wrapper.iter().map(|&a| a.to_owned()).collect();
        daemon.spawn();
        daemon
    }

    /// Writes the config and runs a daemon expected not to start: what it
    /// printed and how it exited (killed at the start timeout otherwise).
    pub fn start_failing(self) -> Output {
        let daemon = self.written();
        let bin = daemon.bin.to_string_lossy().into_owned();
        let config = daemon.config_path.to_string_lossy().into_owned();
        run::host(&[bin.as_str(), "run", "--config", &config], START_TIMEOUT)
    }

    /// The config and policies written, the daemon not started.
    fn written(mut self) -> Daemon {
        let config = self.config();
        let config_path = self.dir.path().join("sluice.yaml");
        let text = serde_json::to_string_pretty(&config).expect("config JSON");
        std::fs::write(&config_path, text).expect("write config");
        if self.policies.is_empty() {
            self.policy("default", Vec::new());
        }
        let policy_dir = self.dir.path().join("policies");
        std::fs::create_dir_all(&policy_dir).expect("policy dir");
        for (name, doc) in &self.policies {
            write_policy(&policy_dir, name, doc);
        }
        let dir = self.dir.path().to_owned();
        Daemon {
            child: None,
            wrapper: Vec::new(),
            bin: sluice_bin(),
            config_path,
            admin_socket: dir.join("admin.sock"),
            audit_path: dir.join("audit.jsonl"),
            stderr_path: dir.join("daemon.stderr"),
            stdout_path: dir.join("daemon.stdout"),
            bpffs: self.bpffs,
            root: Some(self.root),
            status: None,
            dir: Some(self.dir),
        }
    }
}

/// Writes one policy file atomically (a rename), as an operator's tooling would.
pub fn write_policy(dir: &Path, name: &str, doc: &Value) {
    let tmp = dir.join(format!(".{name}.yaml.tmp"));
    std::fs::write(
        &tmp,
        serde_json::to_string_pretty(doc).expect("policy JSON"),
    )
    .expect("write policy");
    std::fs::rename(&tmp, dir.join(format!("{name}.yaml"))).expect("rename policy");
}

impl Default for DaemonBuilder {
    fn default() -> Self {
        DaemonBuilder::new()
    }
}

/// What `sluice status` prints.
#[derive(Debug, Clone, Deserialize)]
pub struct Status {
    pub ready: bool,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub cgroup_root: Option<String>,
    pub metrics_addr: String,
    pub tcp_port: u16,
    #[serde(default)]
    pub sandboxes: u64,
    #[serde(default)]
    pub programs: Vec<Value>,
}

/// A running (or killed, for restart tests) daemon.
pub struct Daemon {
    child: Option<Child>,
    /// What the daemon is run under (empty: run directly).
    wrapper: Vec<String>,
    bin: PathBuf,
    config_path: PathBuf,
    admin_socket: PathBuf,
    audit_path: PathBuf,
    stderr_path: PathBuf,
    stdout_path: PathBuf,
    bpffs: PathBuf,
    // Options only so Drop can order the teardown.
    root: Option<TestCgroup>,
    status: Option<Status>,
    dir: Option<tempfile::TempDir>,
}

impl Daemon {
    /// A daemon with one policy `default` (the rules) and one sandbox `sb1`
    /// (a new cgroup `sb1` under the root). The common case.
    pub fn with_sandbox(rules: Vec<Rule>) -> (Daemon, TestCgroup) {
        let mut builder = DaemonBuilder::new();
        let cgroup = builder.cgroup("sb1");
        builder
            .policy("default", rules)
            .sandbox("sb1", &cgroup, None, "default");
        (builder.start(), cgroup)
    }

    fn spawn(&mut self) {
        let append = |path: &Path| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
        };
        let mut command = match self.wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(&self.bin);
                command
            }
            None => Command::new(&self.bin),
        };
        let child = command
            .arg("run")
            .arg("--config")
            .arg(&self.config_path)
            .stdin(Stdio::null())
            .stdout(append(&self.stdout_path))
            .stderr(append(&self.stderr_path))
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {} run: {e}", self.bin.display()));
        self.child = Some(child);
        self.status = None;
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(exit)) = child.try_wait()
            {
                panic!(
                    "sluice run exited ({exit}) before it was ready (its stderr follows)\nconfig:\n{}",
                    std::fs::read_to_string(&self.config_path).unwrap_or_default(),
                );
            }
            let out = self.status_command();
            if out.success() {
                match serde_json::from_slice::<Status>(&out.stdout) {
                    Ok(status) if status.ready => {
                        self.status = Some(status);
                        return;
                    }
                    Ok(_) => {}
                    Err(e) => panic!("`sluice status` printed something unexpected ({e}):\n{out}"),
                }
            }
            if Instant::now() >= deadline {
                panic!(
                    "sluice was not ready after {START_TIMEOUT:?} (its stderr follows); last status:\n{out}"
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn status_command(&self) -> Output {
        let bin = self.bin.to_string_lossy().into_owned();
        let sock = self.admin_socket.to_string_lossy().into_owned();
        run::host(
            &[bin.as_str(), "status", "--admin-socket", &sock],
            Duration::from_secs(10),
        )
    }

    /// A fresh `sluice status`, parsed.
    pub fn status(&self) -> Status {
        let out = self.status_command();
        out.expect_success("sluice status");
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("parse `sluice status` ({e}):\n{out}"))
    }

    /// The status seen when the daemon (last) became ready.
    pub fn ready_status(&self) -> &Status {
        self.status.as_ref().expect("daemon is running")
    }

    pub fn tcp_port(&self) -> u16 {
        self.ready_status().tcp_port
    }

    pub fn metrics_addr(&self) -> SocketAddr {
        let text = &self.ready_status().metrics_addr;
        text.parse()
            .unwrap_or_else(|e| panic!("metrics_addr {text:?} in status: {e}"))
    }

    pub fn root(&self) -> &TestCgroup {
        self.root.as_ref().expect("root cgroup")
    }

    pub fn admin_socket(&self) -> &Path {
        &self.admin_socket
    }

    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    /// The directory the daemon loads (and watches) policies from.
    pub fn policy_dir(&self) -> PathBuf {
        self.dir().join("policies")
    }

    pub fn bpffs(&self) -> &Path {
        &self.bpffs
    }

    /// The test's private directory (config, state, audit, logs).
    pub fn dir(&self) -> &Path {
        self.dir.as_ref().expect("tempdir").path()
    }

    /// The daemon's process id (while it runs).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("daemon is running").id()
    }

    /// The daemon's resident set size (`VmRSS` in /proc/PID/status), KiB.
    pub fn rss_kib(&self) -> u64 {
        let path = format!("/proc/{}/status", self.pid());
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
        text.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no VmRSS in {path}:\n{text}"))
    }

    /// Where the daemon keeps its interception CA certificate.
    pub fn ca_pem_path(&self) -> PathBuf {
        self.dir().join(CA_DIR).join("ca.pem")
    }

    /// Waits until the daemon has written its CA certificate; returns its
    /// path (what a sandbox trusts to accept intercepted connections).
    pub fn wait_ca_pem(&self) -> PathBuf {
        let path = self.ca_pem_path();
        eventually(
            &format!("the CA certificate at {}", path.display()),
            WAIT,
            || match std::fs::read_to_string(&path) {
                Ok(text) if text.contains("-----END CERTIFICATE-----") => Ok(()),
                Ok(text) => Err(format!("incomplete: {} bytes", text.len())),
                Err(e) => Err(e.to_string()),
            },
        );
        path
    }

    /// The upstream CA written by [`DaemonBuilder::trust_upstream_ca`].
    pub fn upstream_ca_path(&self) -> PathBuf {
        self.dir().join("upstream-ca.pem")
    }

    /// The Prometheus text from `GET /metrics`.
    pub fn metrics(&self) -> String {
        let addr = self.metrics_addr();
        match prom::http_get(addr, "/metrics") {
            Ok((200, body)) => body,
            Ok((status, body)) => panic!("GET http://{addr}/metrics: {status}\n{body}"),
            Err(e) => panic!("GET http://{addr}/metrics: {e}"),
        }
    }

    /// The sum of the series matching `selector` (a metric name with some or
    /// all of its labels); `None` when no series matches.
    pub fn metric(&self, selector: &str) -> Option<f64> {
        prom::select(&prom::parse(&self.metrics()), selector)
    }

    /// Waits until `selector` is at least `min`; returns its value.
    pub fn wait_metric_at_least(&self, selector: &str, min: f64) -> f64 {
        eventually(&format!("metric {selector} >= {min}"), WAIT, || {
            let text = self.metrics();
            match prom::select(&prom::parse(&text), selector) {
                Some(v) if v >= min => Ok(v),
                _ => Err(sluice_lines(&text)),
            }
        })
    }

    /// The audit log's path.
    pub fn audit_path(&self) -> &Path {
        &self.audit_path
    }

    /// Every complete audit line, parsed (a partly written last line is
    /// left for the next read).
    pub fn audit(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.audit_path).unwrap_or_default();
        let complete = match text.rfind('\n') {
            Some(end) => &text[..end],
            None => "",
        };
        complete
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("audit line is not JSON ({e}): {l}"))
            })
            .collect()
    }

    /// Waits until at least `n` audit events satisfy `pred`; returns them.
    pub fn wait_audit(&self, what: &str, n: usize, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        eventually(&format!("{n} audit event(s): {what}"), WAIT, || {
            let all = self.audit();
            let matching: Vec<Value> = all.iter().filter(|e| pred(e)).cloned().collect();
            if matching.len() >= n {
                Ok(matching)
            } else {
                let tail: Vec<String> = all.iter().rev().take(20).map(Value::to_string).collect();
                Err(format!(
                    "{} matching; last events (newest first):\n{}",
                    matching.len(),
                    tail.join("\n")
                ))
            }
        })
    }

    /// Runs `sluice ARGS --admin-socket SOCK` and returns what it did.
    pub fn cli(&self, args: &[&str]) -> Output {
        let bin = self.bin.to_string_lossy().into_owned();
        let sock = self.admin_socket.to_string_lossy().into_owned();
        let mut all = vec![bin.as_str()];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--admin-socket", &sock]);
        run::host(&all, WAIT)
    }

    /// `sluice sandbox ls --json`, parsed.
    pub fn sandboxes(&self) -> Vec<Value> {
        let out = self.cli(&["sandbox", "ls", "--json"]);
        out.expect_success("sluice sandbox ls --json");
        match serde_json::from_slice(&out.stdout) {
            Ok(Value::Array(list)) => list,
            _ => panic!("`sandbox ls --json` did not print a JSON array:\n{out}"),
        }
    }

    /// SIGKILL, as a crash would; pins stay.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.status = None;
    }

    /// Starts the daemon again with the same config, state and pins (after
    /// killing it if it still runs).
    pub fn restart(&mut self) {
        self.kill9();
        self.spawn();
    }

    /// Sends `signal` (SIGTERM, SIGHUP, ...) to the running daemon.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.pid()).expect("pid fits"));
        nix::sys::signal::kill(pid, signal)
            .unwrap_or_else(|e| panic!("kill({pid}, {signal}): {e}"));
    }

    /// Waits for the daemon to exit on its own; panics after `timeout`.
    /// The pins stay, as after any stop.
    pub fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let child = self.child.as_mut().expect("daemon is running");
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                self.child = None;
                self.status = None;
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "sluice did not exit within {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts `bin` (an upgraded build, say) with the same config, state
    /// and pins; the previous process must have stopped.
    pub fn start_binary(&mut self, bin: &Path) {
        assert!(self.child.is_none(), "the previous daemon still runs");
        self.bin = bin.to_owned();
        self.spawn();
    }

    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// The daemon's stderr so far (all runs, in order).
    pub fn stderr_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.stderr_path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `bpftool cgroup show ROOT`: how many programs are attached per attach
    /// type, with names normalized to the short form (`connect4`, ...).
    pub fn attached_programs(&self) -> BTreeMap<String, usize> {
        let root = self.root().path_str();
        let out = run::host(&["bpftool", "-j", "cgroup", "show", &root], WAIT);
        out.expect_success("bpftool cgroup show");
        let list: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("bpftool JSON ({e}):\n{out}"));
        let mut counts = BTreeMap::new();
        for prog in list.as_array().into_iter().flatten() {
            let kind = prog["attach_type"]
                .as_str()
                .map(normalize_attach_type)
                .unwrap_or_else(|| prog["attach_type"].to_string());
            *counts.entry(kind).or_insert(0) += 1;
        }
        counts
    }
}

/// bpftool prints either the legacy short names or libbpf's
/// (`cgroup_inet4_connect`); tests use the short ones.
fn normalize_attach_type(name: &str) -> String {
    let short = match name {
        "cgroup_inet4_connect" => "connect4",
        "cgroup_inet6_connect" => "connect6",
        "cgroup_udp4_sendmsg" => "sendmsg4",
        "cgroup_udp6_sendmsg" => "sendmsg6",
        "cgroup_udp4_recvmsg" => "recvmsg4",
        "cgroup_udp6_recvmsg" => "recvmsg6",
        "cgroup_inet_sock_create" => "sock_create",
        "cgroup_sock_ops" => "sock_ops",
        "cgroup_inet4_getpeername" => "getpeername4",
        "cgroup_inet6_getpeername" => "getpeername6",
        "cgroup_inet4_getsockname" => "getsockname4",
        "cgroup_inet6_getsockname" => "getsockname6",
        "cgroup_inet4_bind" => "bind4",
        "cgroup_inet6_bind" => "bind6",
        "cgroup_inet_sock_release" => "sock_release",
        "cgroup_inet4_post_bind" => "post_bind4",
        "cgroup_inet6_post_bind" => "post_bind6",
        other => other,
    };
    short.to_owned()
}

/// The `sluice_*` sample lines of a metrics page (for failure messages).
fn sluice_lines(text: &str) -> String {
    text.lines()
        .filter(|l| l.starts_with("sluice_"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let panicking = std::thread::panicking();
        if panicking {
            let lines = self.stderr_lines();
            let start = lines.len().saturating_sub(80);
            eprintln!(
                "---- sluice stderr (last {} of {} lines) ----\n{}\n---- end of sluice stderr ----",
                lines.len() - start,
                lines.len(),
                lines[start..].join("\n")
            );
        }
        self.kill9();
        if let Err(e) = std::fs::remove_dir_all(&self.bpffs)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            eprintln!("warning: remove {}: {e}", self.bpffs.display());
        }
        // The root cgroup's own Drop kills what is left in it and removes it
        // depth-first.
        drop(self.root.take());
        if let Some(dir) = self.dir.take() {
            if panicking {
                eprintln!(
                    "keeping the daemon's files for inspection: {}",
                    dir.keep().display()
                );
            } else {
                drop(dir);
            }
        }
    }
}
