//! The daemon's YAML configuration: raw (as written) and its load errors.
//!
//! Every struct denies unknown fields, so a typo is an error that names the
//! file, line, column and field, never a silently ignored setting.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
};

use serde::Deserialize;

/// The whole daemon configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where steered connections and DNS queries are received.
    #[serde(default)]
    pub listen: Listen,
    /// The sandbox root cgroup: absolute, or relative to the cgroup2 mount.
    /// Created if missing. The eBPF programs are attached here.
    #[serde(default = "default_cgroup_root")]
    pub cgroup_root: PathBuf,
    /// Directory under bpffs where programs' links and maps are pinned.
    #[serde(default = "default_bpffs")]
    pub bpffs: PathBuf,
    /// Admin API socket (HTTP over a Unix socket, mode 0600).
    #[serde(default = "default_admin_socket")]
    pub admin_socket: PathBuf,
    /// Where run-time registrations are kept across restarts.
    #[serde(default = "default_state_dir")]
    pub state_dir: PathBuf,
    /// The key the secrets in `state_dir` are sealed under (the placeholder
    /// key, rotated refresh tokens): `{systemd_credential: NAME}` or
    /// `{file: PATH}` (outside `state_dir`, created when missing). Unset:
    /// `$CREDENTIALS_DIRECTORY/state-key` when systemd gives one, else
    /// `<state_dir>.key` (`crate::credentials::sealed`).
    #[serde(default)]
    pub state_key: Option<crate::credentials::sealed::KeySource>,
    /// Prometheus metrics address; `null` turns the endpoint off.
    #[serde(default = "default_metrics")]
    pub metrics: Option<SocketAddr>,
    /// Audit sink: `stdout`, or a file path (JSON lines, appended).
    #[serde(default = "default_audit")]
    pub audit: String,
    /// Threads serving connections (the async runtime's workers); unset:
    /// one per CPU the daemon may run on. Read at start only.
    #[serde(default)]
    pub worker_threads: Option<std::num::NonZeroUsize>,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub relay: RelayConfig,
    #[serde(default)]
    pub resolver: crate::resolve::ResolverConfig,
    #[serde(default)]
    pub tls: TlsConfig,
    /// Secrets Sluice injects on the sandboxes' behalf (they hold placeholders).
    #[serde(default)]
    pub credentials: Vec<crate::credentials::CredentialConfig>,
    /// Directory of policy files, one policy per file, named by the file
    /// stem; sandboxes refer to them by name. Watched for changes.
    #[serde(default = "default_policy_dir")]
    pub policy_dir: PathBuf,
    #[serde(default)]
    pub sandboxes: Vec<SandboxConfig>,
    /// The app catalogue policies give approval modes to (docs/policy.md `apps`).
    #[serde(default)]
    pub apps: Vec<crate::apps::AppConfig>,
    /// Parked requests: timeout, capacity, webhook.
    #[serde(default)]
    pub approvals: crate::approvals::ApprovalsConfig,
    /// The explicit-proxy listener for sandboxes off this node
    /// (capability tokens); off when absent.
    #[serde(default)]
    pub explicit_proxy: Option<crate::explicit::ExplicitProxyConfig>,
    /// The web-app ingress (published sandbox apps); off when absent.
    #[serde(default)]
    pub ingress: Option<crate::ingress::config::IngressConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listen {
    /// TCP port of the steering listener in the host namespace (127.0.0.1 and
    /// ::1). 0 picks a free port at start. Inside sandbox namespaces Sluice
    /// always picks a free port, and every sandbox gets its own DNS listener
    /// on a free port, so the daemon knows who asked. No socket under the
    /// sandbox root may bind the port (ARCHITECTURE.md, restarts); keep it
    /// outside `net.ipv4.ip_local_port_range`, as 15001 is by default.
    #[serde(default = "default_tcp_port")]
    pub tcp_port: u16,
}

impl Default for Listen {
    fn default() -> Self {
        Listen {
            tcp_port: default_tcp_port(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// How long Sluice waits for a new connection's first bytes (TLS
    /// ClientHello, or HTTP request line and headers) when it needs the name
    /// they carry to decide; after that it decides on the address alone.
    /// Connections the address alone allows are relayed without waiting, so
    /// protocols where the server speaks first work.
    #[serde(default = "default_sniff_timeout_ms")]
    pub sniff_timeout_ms: u64,
    /// Timeout for dialing the original destination.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// An intercepted client must send a request's headers within this.
    #[serde(default = "default_header_read_timeout_ms")]
    pub header_read_timeout_ms: u64,
    /// An intercepted connection with no request in flight is closed after this.
    #[serde(default = "default_idle_timeout_ms")]
    pub idle_timeout_ms: u64,
    /// Largest request head (request line and headers) accepted; larger is 431.
    #[serde(default = "default_max_header_bytes")]
    pub max_header_bytes: usize,
    /// On SIGTERM, how long connections in flight may take to finish
    /// before they are cut; new ones are refused meanwhile.
    #[serde(default = "default_drain_timeout_ms")]
    pub drain_timeout_ms: u64,
    /// Connections one sandbox (its sessions included) may have open
    /// through Sluice at once; more are refused (`connection_limit`), so
    /// one sandbox cannot exhaust the daemon's sockets and memory.
    #[serde(default = "default_max_connections_per_sandbox")]
    pub max_connections_per_sandbox: usize,
}

/// How relayed connections (passthrough TLS, plain TCP) move their bytes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayConfig {
    /// Socket to socket in the kernel (a sockhash redirect) where the kernel
    /// takes it; `false` copies every byte through the daemon.
    #[serde(default = "yes")]
    pub in_kernel: bool,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig { in_kernel: true }
    }
}

fn yes() -> bool {
    true
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            sniff_timeout_ms: default_sniff_timeout_ms(),
            connect_timeout_ms: default_connect_timeout_ms(),
            header_read_timeout_ms: default_header_read_timeout_ms(),
            idle_timeout_ms: default_idle_timeout_ms(),
            max_header_bytes: default_max_header_bytes(),
            drain_timeout_ms: default_drain_timeout_ms(),
            max_connections_per_sandbox: default_max_connections_per_sandbox(),
        }
    }
}

/// TLS interception: the CA that signs minted certificates, and what
/// upstream certificates are trusted.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// Holds `ca.pem` and `ca.key`; created at start when missing
    /// (`sluice ca init` does the same explicitly).
    #[serde(default = "default_ca_dir")]
    pub ca_dir: PathBuf,
    /// Trust the system's root certificates for upstreams.
    #[serde(default = "default_true")]
    pub system_roots: bool,
    /// Extra PEM bundles trusted for upstreams (an internal CA, a test CA).
    #[serde(default)]
    pub upstream_ca_files: Vec<PathBuf>,
    /// Validity of minted leaf certificates.
    #[serde(default = "default_leaf_validity_hours")]
    pub leaf_validity_hours: u64,
    /// Minted certificates kept in memory (least recently used go first).
    #[serde(default = "default_cert_cache_size")]
    pub cert_cache_size: usize,
    /// Certificates one sandbox may have minted a second for names not
    /// cached (twice that at once): a sandbox connecting to ever-new
    /// names would otherwise spend the daemon's CPU on signatures and
    /// push the other sandboxes' leaves out of the cache.
    #[serde(default = "default_max_mints_per_second")]
    pub max_mints_per_second: u32,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            ca_dir: default_ca_dir(),
            system_roots: true,
            upstream_ca_files: Vec::new(),
            leaf_validity_hours: default_leaf_validity_hours(),
            cert_cache_size: default_cert_cache_size(),
            max_mints_per_second: default_max_mints_per_second(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    pub id: String,
    /// cgroup path: absolute, or relative to the sandbox root cgroup.
    pub cgroup: PathBuf,
    /// Network namespace (a path such as /run/netns/NAME or
    /// /proc/PID/ns/net): Sluice then listens inside it.
    #[serde(default)]
    pub netns: Option<PathBuf>,
    #[serde(default = "default_policy")]
    pub policy: String,
    /// Where to write the CA bundle the sandbox should trust (a host path
    /// inside the sandbox's filesystem).
    #[serde(default)]
    pub ca_bundle: Option<PathBuf>,
    /// Who owns the sandbox (`{sub, org}`): the viewer a `private`
    /// published app admits, and whose org an `org` one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<crate::ingress::scope::OwnerId>,
}

/// A configuration that could not be loaded; the message names the file and,
/// where the YAML parser knows it, the line, column and field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::parse(path, &text)
    }

    /// Parses config text; `path` is only used in messages.
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let config: Config = serde_yaml::from_str(text).map_err(|err| {
            let (line, column) = err
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((0, 0));
            ConfigError::Syntax {
                path: path.to_owned(),
                line,
                column,
                // serde_yaml appends " at line L column C"; we already lead with it.
                message: strip_location(&err.to_string()),
            }
        })?;
        config.validate().map_err(|message| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        })?;
        Ok(config)
    }

    /// Checks what the file alone can tell; whether each sandbox's policy
    /// exists is checked against the policy directory when it is loaded.
    fn validate(&self) -> Result<(), String> {
        if let Err(errors) = crate::credentials::config::validate(&self.credentials) {
            let all: Vec<String> = errors.iter().map(|e| format!("credentials: {e}")).collect();
            return Err(all.join("; "));
        }
        if let Err(errors) = crate::apps::Catalogue::compile(&self.apps) {
            return Err(errors.join("; "));
        }
        if let Some(webhook) = &self.approvals.webhook {
            crate::approvals::webhook::check_url(&webhook.url).map_err(|e| e.to_string())?;
        }
        if let Some(explicit) = &self.explicit_proxy {
            explicit.validate()?;
        }
        if let Some(ingress) = &self.ingress {
            ingress.check().map_err(|e| e.to_string())?;
        }
        if self.tls.max_mints_per_second == 0 {
            return Err(
                "tls.max_mints_per_second: 0 would refuse every intercepted connection to a new name; give at least 1"
                    .to_owned(),
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for sandbox in &self.sandboxes {
            if !seen.insert(&sandbox.id) {
                return Err(format!("sandboxes: id `{}` appears twice", sandbox.id));
            }
        }
        // One id, one sandbox: grants, pools and placeholders are keyed by it.
        for remote in self.explicit_proxy.iter().flat_map(|e| &e.sandboxes) {
            if seen.contains(&remote.id) {
                return Err(format!(
                    "explicit_proxy.sandboxes: id `{}` is also in sandboxes",
                    remote.id
                ));
            }
        }
        Ok(())
    }
}

fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

fn default_cgroup_root() -> PathBuf {
    PathBuf::from("sluice")
}
fn default_bpffs() -> PathBuf {
    PathBuf::from("/sys/fs/bpf/sluice")
}
fn default_admin_socket() -> PathBuf {
    PathBuf::from("/run/sluice/admin.sock")
}
fn default_policy_dir() -> PathBuf {
    PathBuf::from("/etc/sluice/policies")
}
fn default_state_dir() -> PathBuf {
    PathBuf::from("/var/lib/sluice")
}
fn default_metrics() -> Option<SocketAddr> {
    Some(SocketAddr::from(([127, 0, 0, 1], 9464)))
}
fn default_audit() -> String {
    "stdout".to_owned()
}
fn default_max_connections_per_sandbox() -> usize {
    4096
}

fn default_tcp_port() -> u16 {
    15001
}
fn default_sniff_timeout_ms() -> u64 {
    5_000
}
fn default_connect_timeout_ms() -> u64 {
    10_000
}
fn default_header_read_timeout_ms() -> u64 {
    10_000
}
fn default_idle_timeout_ms() -> u64 {
    90_000
}
fn default_max_header_bytes() -> usize {
    64 * 1024
}
fn default_drain_timeout_ms() -> u64 {
    30_000
}
fn default_ca_dir() -> PathBuf {
    PathBuf::from("/var/lib/sluice/ca")
}
fn default_leaf_validity_hours() -> u64 {
    24
}
fn default_cert_cache_size() -> usize {
    10_000
}
/// A program that opens a page's worth of new hosts at once is well within
/// it (40 at once, then 20 a second); a name flood is held to it.
fn default_max_mints_per_second() -> u32 {
    20
}
fn default_true() -> bool {
    true
}
fn default_policy() -> String {
    "default".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("sluice.yaml"), text)
    }

    #[test]
    fn minimal_config_gets_defaults() {
        let config = parse("{}\n").expect("valid");
        assert_eq!(config.listen.tcp_port, 15001);
        assert_eq!(config.cgroup_root, PathBuf::from("sluice"));
        assert_eq!(config.policy_dir, PathBuf::from("/etc/sluice/policies"));
        assert_eq!(config.audit, "stdout");
        assert_eq!(config.tls.max_mints_per_second, 20);
        let err = parse("tls: {max_mints_per_second: 0}\n").expect_err("zero");
        assert!(err.to_string().contains("at least 1"), "{err}");
    }

    #[test]
    fn worker_threads_are_one_per_cpu_unless_set_and_never_zero() {
        assert_eq!(parse("{}\n").expect("valid").worker_threads, None);
        let one = parse("worker_threads: 1\n").expect("valid").worker_threads;
        assert_eq!(one.map(|n| n.get()), Some(1));
        let err = parse("worker_threads: 0\n").expect_err("zero");
        assert!(err.to_string().starts_with("sluice.yaml:1:"), "{err}");
    }

    #[test]
    fn unknown_key_names_file_line_and_field() {
        let err = parse("listen:\n  tcp_prot: 1\n").expect_err("typo");
        let text = err.to_string();
        assert!(text.starts_with("sluice.yaml:2:3: "), "{text}");
        assert!(text.contains("unknown field `tcp_prot`"), "{text}");
    }

    #[test]
    fn sandbox_ids_are_unique() {
        let err = parse("sandboxes:\n  - {id: a, cgroup: a}\n  - {id: a, cgroup: b}\n")
            .expect_err("duplicate");
        assert!(err.to_string().contains("`a` appears twice"), "{err}");
        let err = parse(concat!(
            "sandboxes:\n  - {id: vm-1, cgroup: a}\n",
            "explicit_proxy:\n  listen: 127.0.0.1:0\n  public_key_file: /k.pub\n",
            "  sandboxes: [{id: vm-1, policy: p}]\n",
        ))
        .expect_err("one id, two sandboxes");
        assert!(
            err.to_string().contains("`vm-1` is also in sandboxes"),
            "{err}"
        );
    }

    #[test]
    fn bad_address_is_located() {
        let err = parse("metrics: 127.0.0.1:99999\n").expect_err("port");
        assert!(err.to_string().starts_with("sluice.yaml:1:"), "{err}");
    }
}

#[cfg(test)]
mod policies_dir {
    use super::Config;

    /// Every example daemon config must load, so the docs cannot drift.
    #[test]
    fn example_configs_are_valid() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/config");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).expect("policies/ exists") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "yaml") {
                Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
                checked += 1;
            }
        }
        assert!(checked > 0, "no YAML files in {}", dir.display());
    }
}
