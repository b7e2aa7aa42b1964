//! One Sluice daemon (the real binary and eBPF programs, through the
//! end-to-end harness) with a sandbox cgroup per way of running:
//! - `pass`: `decide_without_decryption: true`: TLS decided on its SNI and
//!   relayed without decryption (plain HTTP is served request by request);
//! - `empty`: intercepting, nothing but the network policy;
//! - `full`: intercepting with every content stage the policy format has
//!   switched on (PII, injection defense, a bound credential the client
//!   sends a placeholder for, so it is swapped in and redacted from
//!   responses) and auditing every request. The report says what ran.
//!   Its secret is random, drawn for the run; `full-2`, `full-3` are the
//!   same with secrets of their own (the run's other secrets), and
//!   `nocred` the same with no credential bound;
//! - `app`: a sandbox with its own network namespace, whose web app (the
//!   upstream's handler on loopback inside it, see `run`) is published
//!   through the daemon's ingress, private to its owner, who presents a
//!   viewer token on every request.

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::PathBuf,
};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use sluice_e2e::{Daemon, DaemonBuilder, TestCa, TestCgroup, TestNetns, ViewerKeys};

use crate::{secrets::Secret, upstream::NAME};

/// The credential the `full` sandbox uses; `full-N` use `bench-api-N`.
const CREDENTIAL: &str = "bench-api";
/// Longer than any memory step takes to open and read.
const IDLE_TIMEOUT_MS: u64 = 3_600_000;
/// The published app's name and the apps domain: viewers ask for
/// `bench.apps.test`.
const APP: &str = "bench";
const APPS_DOMAIN: &str = "apps.test";
/// The `app` sandbox's owner, the viewer the bench presents a token for.
const OWNER: (&str, &str) = ("bench-owner", "bench-org");

pub struct Sluice {
    pub daemon: Daemon,
    pub pass: TestCgroup,
    pub empty: TestCgroup,
    /// The full pipeline's sandboxes, one per secret: `full` first.
    pub bound: Vec<BoundSandbox>,
    /// The full pipeline with no credential bound.
    pub nocred: TestCgroup,
    /// Sluice's interception CA, what intercepted clients trust.
    pub ca: PathBuf,
    /// The `app` sandbox's cgroup: nothing runs in it (the app is served
    /// from this process, inside the namespace), held so it lives as long
    /// as the daemon's sandbox.
    _app: TestCgroup,
    /// The `app` sandbox's own network namespace.
    pub netns: TestNetns,
    /// Where the ingress listens (plain HTTP, the bench's loopback a
    /// trusted proxy).
    pub ingress: SocketAddr,
    /// `Authorization` header value carrying the owner's viewer token.
    pub viewer: String,
}

/// A full-pipeline sandbox with one of the run's secrets bound.
pub struct BoundSandbox {
    pub cgroup: TestCgroup,
    /// `Authorization` header value carrying its placeholder.
    pub bearer: String,
}

impl Sluice {
    /// `idle_conns`: connections the memory figure holds in one sandbox;
    /// `secrets`: one a full-pipeline sandbox (at least one).
    pub fn start(
        upstream_ca: &TestCa,
        ports: &[u16],
        idle_conns: usize,
        secrets: &[Secret],
    ) -> anyhow::Result<Sluice> {
        anyhow::ensure!(!secrets.is_empty(), "the full pipeline needs a secret");
        let mut builder = DaemonBuilder::new();
        let pass = builder.cgroup("pass");
        let empty = builder.cgroup("empty");
        let nocred = builder.cgroup("nocred");
        // (sandbox, credential) of each secret.
        let names: Vec<(String, String)> = (1..=secrets.len())
            .map(|i| match i {
                1 => ("full".to_owned(), CREDENTIAL.to_owned()),
                i => (format!("full-{i}"), format!("{CREDENTIAL}-{i}")),
            })
            .collect();
        let full: Vec<TestCgroup> = names.iter().map(|(s, _)| builder.cgroup(s)).collect();
        let app = builder.cgroup("app");
        let netns = TestNetns::new();
        let keys = ViewerKeys::generate();
        let key_file = builder.dir().join("viewer.pub");
        keys.write_public(&key_file);
        for ((sandbox, credential), secret) in names.iter().zip(secrets) {
            let file = builder.dir().join(format!("{credential}.secret"));
            std::fs::write(&file, &secret.bytes)?;
            builder
                .credential(json!({
                    "name": credential,
                    "source": { "file": file },
                    "hosts": [NAME],
                    "scheme": { "type": "bearer" },
                    "placeholder": { "prefix": "sk-bench-" },
                }))
                .policy_doc(sandbox, full_pipeline(ports, Some(credential)));
        }
        for ((sandbox, _), cgroup) in names.iter().zip(&full) {
            builder.sandbox(sandbox, cgroup, None, sandbox);
        }
        builder
            .host(NAME, &[IpAddr::V4(Ipv4Addr::LOCALHOST)])
            .trust_upstream_ca(upstream_ca)
            // The memory figure holds up to 100,000 idle connections of
            // one sandbox; the default cap (4,096 a sandbox) would stop it
            // short.
            .limit(
                "max_connections_per_sandbox",
                json!(65_536.max(idle_conns + 1_024)),
            )
            // Opening 100,000 connections takes longer than the idle
            // timeout (90 s) and than the wait for a keep-alive
            // connection's next request head (header_read_timeout_ms,
            // 10 s): the first would be closed before the memory is read.
            .idle_timeout_ms(IDLE_TIMEOUT_MS)
            .limit("header_read_timeout_ms", json!(IDLE_TIMEOUT_MS))
            .policy_doc("pass", network(ports, true))
            .policy_doc("empty", network(ports, false))
            .policy_doc("nocred", full_pipeline(ports, None))
            .sandbox("pass", &pass, None, "pass")
            .sandbox("empty", &empty, None, "empty")
            .sandbox("nocred", &nocred, None, "nocred")
            .sandbox("app", &app, Some(&netns), "empty")
            .owner("app", OWNER.0, OWNER.1)
            .config_key(
                "ingress",
                json!({
                    "listen": ["127.0.0.1:0"],
                    "apps_domain": APPS_DOMAIN,
                    // Plain HTTP as behind the operator's load balancer:
                    // the bench's clients stand in for it.
                    "trusted_proxies": ["127.0.0.1/32"],
                    "viewer_tokens": {"keys": [{"file": key_file, "alg": "EdDSA"}]},
                }),
            );
        // One worker thread, as every peer here has one worker (nginx's
        // `worker_processes 1`, Squid's and mitmproxy's single process): on
        // two cores shared with the client and the upstream, a second
        // worker mostly adds wakeups across threads (29.0 against 23.5 µs
        // of CPU per keep-alive request in one A/B run, 2026-12-07).
        // `SLUICE_BENCH_WORKERS=N` gives it N.
        let workers = std::env::var("SLUICE_BENCH_WORKERS")
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(1);
        builder.config_key("worker_threads", json!(workers));
        // `SLUICE_BENCH_RELAY_IN_KERNEL=0`: relayed connections copied in
        // user space, to hold the in-kernel relay against the copy.
        if std::env::var("SLUICE_BENCH_RELAY_IN_KERNEL").as_deref() == Ok("0") {
            builder.config_key("relay", json!({ "in_kernel": false }));
        }
        let daemon = builder.start();
        let ca = daemon.wait_ca_pem();
        let mut bound = Vec::new();
        for ((sandbox, credential), cgroup) in names.iter().zip(full) {
            let placeholder = placeholder(&daemon, sandbox, credential)?;
            bound.push(BoundSandbox {
                cgroup,
                bearer: format!("Bearer {placeholder}"),
            });
        }
        let ingress = ingress_addr(&daemon)?;
        // Valid for longer than any run.
        let token = keys.token(OWNER.0, OWNER.1, sluice_e2e::viewer::unix_now() + 86_400);
        Ok(Sluice {
            daemon,
            pass,
            empty,
            bound,
            nocred,
            ca,
            _app: app,
            netns,
            ingress,
            viewer: format!("Bearer {token}"),
        })
    }

    /// Publishes port `port` of the `app` sandbox (its app listening
    /// inside the namespace), private to the owner; returns the `Host`
    /// viewers ask for.
    pub fn publish_app(&self, port: u16) -> anyhow::Result<String> {
        let port = port.to_string();
        let out = self
            .daemon
            .cli(&["app", "publish", "app", "--port", &port, "--name", APP]);
        if !out.success() {
            bail!("sluice app publish failed:\n{out}");
        }
        Ok(format!("{APP}.{APPS_DOMAIN}"))
    }

    /// The daemon's resident set, KiB.
    pub fn rss_kib(&self) -> u64 {
        self.daemon.rss_kib()
    }
}

/// The placeholder `sandbox` holds for `credential`, from `sluice sandbox
/// env` (the variable is the credential's name upper-cased, `-` as `_`).
fn placeholder(daemon: &Daemon, sandbox: &str, credential: &str) -> anyhow::Result<String> {
    let out = daemon.cli(&["sandbox", "env", sandbox]);
    let var = credential.to_ascii_uppercase().replace('-', "_");
    let placeholder = out
        .stdout_str()
        .lines()
        .find_map(|l| l.strip_prefix(&format!("export {var}=")))
        .map(|v| v.trim_matches('\'').to_owned())
        .with_context(|| {
            format!("no {var} placeholder from `sluice sandbox env {sandbox}`:\n{out}")
        })?;
    if placeholder.is_empty() {
        bail!("empty placeholder for {credential}");
    }
    Ok(placeholder)
}

/// The ingress's listening address, from `sluice status`.
fn ingress_addr(daemon: &Daemon) -> anyhow::Result<SocketAddr> {
    let out = daemon.cli(&["status"]);
    let status: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("`sluice status` is not JSON:\n{out}"))?;
    status["ingress_addrs"][0]
        .as_str()
        .and_then(|a| a.parse().ok())
        .with_context(|| format!("no ingress address in `sluice status`: {status}"))
}

/// The upstream's name and its loopback ports (the SSRF guard wants an
/// address rule for loopback), nothing else.
fn network(ports: &[u16], decide_without_decryption: bool) -> Value {
    let mut allow = vec![json!(NAME)];
    allow.push(json!({ "to": "127.0.0.1", "ports": ports }));
    json!({
        "network": {
            "allow_out": allow,
            "deny_out": ["ALL_TRAFFIC"],
            "decide_without_decryption": decide_without_decryption,
        }
    })
}

/// Every content stage on, auditing every request, and `credential` bound
/// when given.
fn full_pipeline(ports: &[u16], credential: Option<&str>) -> Value {
    let mut policy = network(ports, false);
    policy["pii"] = json!({ "enabled": true, "action": "redact" });
    policy["injection_defense"] = json!({ "enabled": true, "action": "audit" });
    if let Some(credential) = credential {
        policy["credentials"] = json!([{ "credential": credential }]);
    }
    policy["audit"] = json!({ "enabled": true, "log_allowed": true });
    policy
}
