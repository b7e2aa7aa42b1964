//! One Sluice daemon (the real binary and eBPF programs, through the
//! end-to-end harness) with three sandbox cgroups, one per way of running:
//! - `pass`: `decide_without_decryption: true`: TLS decided on its SNI and
//!   relayed without decryption (plain HTTP is served request by request);
//! - `empty`: intercepting, nothing but the network policy;
//! - `full`: intercepting with every content stage the policy format has
//!   switched on (PII, injection defense, a bound credential the client
//!   sends a placeholder for, so it is swapped in and redacted from
//!   responses) and auditing every request. The report says what ran.

use std::{
    net::{IpAddr, Ipv4Addr},
    path::PathBuf,
};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use sluice_e2e::{Daemon, DaemonBuilder, TestCa, TestCgroup};

use crate::upstream::NAME;

/// The credential the `full` sandbox uses.
const CREDENTIAL: &str = "bench-api";
const SECRET: &str = "sk-bench-REAL-SECRET-0123456789abcdef";
/// Longer than any memory step takes to open and read.
const IDLE_TIMEOUT_MS: u64 = 3_600_000;

pub struct Sluice {
    pub daemon: Daemon,
    pub pass: TestCgroup,
    pub empty: TestCgroup,
    pub full: TestCgroup,
    /// Sluice's interception CA, what intercepted clients trust.
    pub ca: PathBuf,
    /// `Authorization` header value carrying the `full` sandbox's placeholder.
    pub bearer: String,
}

impl Sluice {
    /// `idle_conns`: connections the memory figure holds in one sandbox.
    pub fn start(upstream_ca: &TestCa, ports: &[u16], idle_conns: usize) -> anyhow::Result<Sluice> {
        let mut builder = DaemonBuilder::new();
        let pass = builder.cgroup("pass");
        let empty = builder.cgroup("empty");
        let full = builder.cgroup("full");
        let secret = builder.dir().join("bench-api.secret");
        std::fs::write(&secret, SECRET)?;
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
            .credential(json!({
                "name": CREDENTIAL,
                "source": { "file": secret },
                "hosts": [NAME],
                "scheme": { "type": "bearer" },
                "placeholder": { "prefix": "sk-bench-" },
            }))
            .policy_doc("pass", network(ports, true))
            .policy_doc("empty", network(ports, false))
            .policy_doc("full", full_pipeline(ports))
            .sandbox("pass", &pass, None, "pass")
            .sandbox("empty", &empty, None, "empty")
            .sandbox("full", &full, None, "full");
        let daemon = builder.start();
        let ca = daemon.wait_ca_pem();
        let out = daemon.cli(&["sandbox", "env", "full"]);
        let env = out.stdout_str();
        let placeholder = env
            .lines()
            .find_map(|l| l.strip_prefix("export BENCH_API="))
            .map(|v| v.trim_matches('\'').to_owned())
            .with_context(|| {
                format!("no BENCH_API placeholder from `sluice sandbox env`:\n{out}")
            })?;
        if placeholder.is_empty() {
            bail!("empty placeholder");
        }
        Ok(Sluice {
            daemon,
            pass,
            empty,
            full,
            ca,
            bearer: format!("Bearer {placeholder}"),
        })
    }

    /// The daemon's resident set, KiB.
    pub fn rss_kib(&self) -> u64 {
        self.daemon.rss_kib()
    }
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

fn full_pipeline(ports: &[u16]) -> Value {
    let mut policy = network(ports, false);
    policy["pii"] = json!({ "enabled": true, "action": "redact" });
    policy["injection_defense"] = json!({ "enabled": true, "action": "audit" });
    policy["credentials"] = json!([{ "credential": CREDENTIAL }]);
    policy["audit"] = json!({ "enabled": true, "log_allowed": true });
    policy
}
