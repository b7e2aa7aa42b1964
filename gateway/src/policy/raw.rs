//! The policy file as operators write it: one YAML file per policy, every
//! section of the pipeline named here so later stages add behaviour without
//! reshaping the file. Unknown keys are errors everywhere.
//!
//! These types are only deserialized and handed to `compile`; nothing reads
//! them per request.

use std::collections::BTreeMap;

use serde::Deserialize;

/// One policy file. Its name is the file stem (`policies/agent.yaml` → `agent`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Free text for operators.
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub network: Network,
    #[serde(default)]
    pub pii: Pii,
    #[serde(default)]
    pub injection_defense: InjectionDefense,
    #[serde(default)]
    pub transformations: Vec<Transformation>,
    /// Which of the daemon's credentials this policy's sandboxes may use, and how.
    #[serde(default)]
    pub credentials: Vec<CredentialBinding>,
    /// App actions and their approval mode, and the mode of catalogued
    /// apps the policy does not list.
    #[serde(default)]
    pub apps: Apps,
    /// GET/HEAD go on; other methods are answered 202 with a preview.
    #[serde(default)]
    pub dry_run: bool,
    /// `enforce`, or `learn`: what only the catch-all would refuse is let
    /// through and audited `would_deny`, to write the policy from.
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub audit: Audit,
}

/// Destination rules. `allow_out` is consulted before `ask_out`, and it
/// before `deny_out`; where patterns overlap the most specific one decides;
/// with none matching, `unmatched` decides (allowed by default, so a
/// default-deny policy ends `deny_out` with `ALL_TRAFFIC` or says
/// `unmatched: deny`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    #[serde(default)]
    pub allow_out: Vec<Target>,
    #[serde(default)]
    pub deny_out: Vec<Target>,
    /// Destinations a person decides about: the connection is parked at its
    /// first bytes until approved (once, for the session, or always) or
    /// rejected; unanswered, it is refused.
    #[serde(default)]
    pub ask_out: Vec<Target>,
    /// What no rule covers: `allow` (the default), `deny` or `ask`.
    #[serde(default)]
    pub unmatched: Unmatched,
    /// Refuse loopback, private, link-local, CGNAT, metadata, multicast and
    /// similar addresses (and their IPv6 embeddings) unless an `allow_out`
    /// CIDR names them explicitly.
    #[serde(default = "yes")]
    pub ssrf_guard: bool,
    /// A rule that matched by name (SNI / Host) only allows the connection if
    /// that name resolves to the address the sandbox connected to.
    #[serde(default = "yes")]
    pub verify_name_resolution: bool,
    /// TLS decided on its SNI and relayed undecrypted. When false TLS is
    /// intercepted. Unset: intercepted when the policy enables a stage
    /// that reads requests (`pii`, `injection_defense`, `transformations`,
    /// `credentials`) or an `allow_out` rule bounds its requests
    /// (`methods`, `paths`, `access`), relayed otherwise
    /// (`CompiledPolicy::compile`). Plain
    /// HTTP is served request by request either way.
    #[serde(default)]
    pub decide_without_decryption: Option<bool>,
    /// Names never decrypted even when the policy intercepts (apps that pin
    /// certificates): `example.com` or `*.example.com`. The network rules
    /// still decide whether they are reached at all.
    #[serde(default)]
    pub passthrough: Vec<String>,
    /// What to do with a TLS connection that is not decrypted and offers
    /// Encrypted Client Hello: its inner hello may name another server
    /// behind the same address than the SNI decided on.
    #[serde(default)]
    pub encrypted_client_hello: EncryptedClientHello,
    #[serde(default)]
    pub dns: Dns,
}

impl Default for Network {
    fn default() -> Self {
        Network {
            allow_out: Vec::new(),
            deny_out: Vec::new(),
            ask_out: Vec::new(),
            unmatched: Unmatched::default(),
            ssrf_guard: true,
            verify_name_resolution: true,
            decide_without_decryption: None,
            passthrough: Vec::new(),
            encrypted_client_hello: EncryptedClientHello::default(),
            dns: Dns::default(),
        }
    }
}

/// A destination: a string (`example.com`, `*.example.com`, `203.0.113.7`,
/// `10.0.0.0/8`, `2001:db8::/32`, `ALL_TRAFFIC`, each optionally followed by
/// `:PORT` or, for IPv6, written `[addr]:PORT`), or a map with a port list
/// and, on `allow_out`, the methods and paths its requests may use.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Target {
    Short(String),
    Full(TargetSpec),
}

impl Target {
    /// Whether the rule decides request by request (`methods`, `paths`
    /// or `access`), so what it allows must be read.
    pub fn reads_requests(&self) -> bool {
        match self {
            Target::Short(_) => false,
            Target::Full(spec) => {
                spec.methods.is_some() || spec.paths.is_some() || spec.access.is_some()
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// Any of the string forms above, without a port.
    pub to: String,
    /// Empty: every port.
    #[serde(default)]
    pub ports: Vec<u16>,
    /// The only methods a request on a connection this rule allowed may
    /// use (upper-cased); absent: every method.
    #[serde(default)]
    pub methods: Option<Vec<String>>,
    /// The only paths such a request may ask for, as app actions write
    /// them (`*` one segment, `**` any); absent: every path.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// Shorthand for `methods`; exclusive with it.
    #[serde(default)]
    pub access: Option<Access>,
    /// The only executables (path globs: `*` one segment, `**` any) whose
    /// connections this rule allows; absent: any program.
    #[serde(default)]
    pub binaries: Option<Vec<String>>,
}

/// `network.unmatched`: the answer for a destination no rule covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unmatched {
    #[default]
    Allow,
    Deny,
    Ask,
}

/// A policy's `mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Enforce,
    /// See `policy::network::NetworkPolicy::learning`.
    Learn,
}

/// `access:` on an `allow_out` rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// GET, HEAD and OPTIONS.
    ReadOnly,
}

/// The sandbox's DNS, answered by Sluice.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dns {
    /// Answer for names the policy does not allow.
    #[serde(default)]
    pub denied_answer: DeniedAnswer,
    /// Queries per second per sandbox (token bucket, burst = 2 × rate).
    #[serde(default = "default_dns_rate")]
    pub max_queries_per_second: u32,
    #[serde(default = "default_label_len")]
    pub max_label_length: usize,
    #[serde(default = "default_name_len")]
    pub max_name_length: usize,
    /// Distinct names under one registrable domain per minute, per sandbox;
    /// tunnels encode data as ever-new subdomains.
    #[serde(default = "default_unique_subdomains")]
    pub max_unique_subdomains_per_minute: u32,
    /// Record types refused outright (tunnels favour TXT, NULL and ANY).
    #[serde(default = "default_refused_types")]
    pub refuse_types: Vec<String>,
    /// Under default deny with address rules, resolve names no rule names
    /// (keeping only the answers the address rules allow) instead of
    /// answering them `denied_answer` without asking upstream. Each such
    /// query is audited, and counted against
    /// `max_unique_unlisted_per_minute`.
    #[serde(default)]
    pub resolve_unlisted: bool,
    /// `max_unique_subdomains_per_minute` for the names `resolve_unlisted`
    /// resolves (the lower of the two applies): whoever serves their zone
    /// reads every name asked.
    #[serde(default = "default_unique_unlisted")]
    pub max_unique_unlisted_per_minute: u32,
}

impl Default for Dns {
    fn default() -> Self {
        Dns {
            denied_answer: DeniedAnswer::default(),
            max_queries_per_second: default_dns_rate(),
            max_label_length: default_label_len(),
            max_name_length: default_name_len(),
            max_unique_subdomains_per_minute: default_unique_subdomains(),
            refuse_types: default_refused_types(),
            resolve_unlisted: false,
            max_unique_unlisted_per_minute: default_unique_unlisted(),
        }
    }
}

/// `network.encrypted_client_hello`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EncryptedClientHello {
    /// Relayed, decided on the outer SNI. Browsers offer ECH (real or
    /// GREASE, indistinguishable) on every connection, so refusing it
    /// refuses them.
    #[default]
    Allow,
    /// Refused unless the connection is decrypted (`decide_without_decryption:
    /// false`, the name not in `passthrough`), where it cannot hide a name.
    Refuse,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeniedAnswer {
    #[default]
    Nxdomain,
    Refused,
}

/// PII detection on request bodies (the content stage adds behaviour).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pii {
    #[serde(default)]
    pub enabled: bool,
    /// Types to detect; empty means every supported type.
    #[serde(default)]
    pub types: Vec<String>,
    #[serde(default)]
    pub action: PiiAction,
    /// Per-type overrides of `action`.
    #[serde(default)]
    pub actions: BTreeMap<String, PiiAction>,
    /// Restore redacted values in responses.
    #[serde(default = "yes")]
    pub rehydrate_response: bool,
    #[serde(default)]
    pub oversize: Oversize,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiAction {
    #[default]
    Redact,
    Block,
    LogOnly,
}

/// Bodies larger than the scan limit.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Oversize {
    /// How many bytes are inspected.
    #[serde(default = "default_scan_limit")]
    pub inspect_bytes: u64,
    /// What happens to the rest.
    #[serde(default)]
    pub rest: OversizeRest,
}

impl Default for Oversize {
    fn default() -> Self {
        Oversize {
            inspect_bytes: default_scan_limit(),
            rest: OversizeRest::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OversizeRest {
    #[default]
    Block,
    Allow,
}

// The injection detector's settings live with it, in the scanners' crate.
pub use sluice_scan::injection::{InjectionAction, InjectionDefense};

/// A regex rewrite of bodies.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transformation {
    pub pattern: String,
    pub replacement: String,
    #[serde(default)]
    pub direction: Direction,
    /// Only for these destinations (same forms as `allow_out`); empty: all.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Header values rewritten too (bodies always are).
    #[serde(default)]
    pub headers: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Request,
    Response,
    Both,
}

/// Lets this policy's sandboxes use one of the daemon's credentials.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialBinding {
    /// The credential's name in the daemon config.
    pub credential: String,
    /// Narrows the credential's own host set; empty: the credential's hosts.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Look for the placeholder in request bodies too.
    #[serde(default)]
    pub allow_in_body: bool,
    /// Allow injection over plain HTTP (never by default).
    #[serde(default)]
    pub allow_plain_http: bool,
    /// Redirects Sluice follows itself, within the binding's hosts and
    /// injecting again per hop (at most 3); 0 returns every 3xx unfollowed.
    #[serde(default)]
    pub follow_redirects: u8,
}

/// The `apps` section: a list of [`AppPolicy`] (the short form, with
/// `default: ask`), or a mapping `{default: MODE, list: [...]}`.
#[derive(Debug, Clone, Default)]
pub struct Apps {
    /// The mode of every request to an app of the catalogue that `list`
    /// does not name: as if listed with only `"*": MODE`.
    pub default: Approval,
    pub list: Vec<AppPolicy>,
    /// Written as a mapping: the entries' paths are `apps.list[i]`.
    pub long_form: bool,
}

impl Apps {
    /// The path of entry `i` in the file, for errors.
    pub fn entry_path(&self, i: usize) -> String {
        match self.long_form {
            true => format!("apps.list[{i}]"),
            false => format!("apps[{i}]"),
        }
    }
}

impl<'de> Deserialize<'de> for Apps {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{MapAccess, SeqAccess, Visitor, value};

        /// The section written as a mapping.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Fields {
            #[serde(default)]
            default: Approval,
            #[serde(default)]
            list: Vec<AppPolicy>,
        }

        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = Apps;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of apps, or a mapping with `default` and `list`")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Apps, A::Error> {
                let list = Vec::deserialize(value::SeqAccessDeserializer::new(seq))?;
                Ok(Apps {
                    list,
                    ..Apps::default()
                })
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Apps, A::Error> {
                let Fields { default, list } =
                    Fields::deserialize(value::MapAccessDeserializer::new(map))?;
                Ok(Apps {
                    default,
                    list,
                    long_form: true,
                })
            }
        }

        deserializer.deserialize_any(Either)
    }
}

/// Approval modes for one app's actions.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppPolicy {
    /// The app's name in the daemon's app catalogue.
    pub app: String,
    /// Action name → mode; `"*"` sets the mode of actions not listed.
    #[serde(default)]
    pub actions: BTreeMap<String, Approval>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    Auto,
    #[default]
    Ask,
    Deny,
}

/// `audit: true` (or `false`) is the section with only `enabled` given
/// (`sluice_scan::switch`).
#[derive(Debug, Clone)]
pub struct Audit {
    pub enabled: bool,
    /// Audit allowed connections too, not only refusals.
    pub log_allowed: bool,
}

impl<'de> Deserialize<'de> for Audit {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// The section written in full.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Fields {
            #[serde(default = "yes")]
            enabled: bool,
            #[serde(default = "yes")]
            log_allowed: bool,
        }
        Ok(
            match sluice_scan::switch::switch_or::<D, Fields>(deserializer)? {
                Ok(Fields {
                    enabled,
                    log_allowed,
                }) => Audit {
                    enabled,
                    log_allowed,
                },
                Err(enabled) => Audit {
                    enabled,
                    ..Audit::default()
                },
            },
        )
    }
}

impl Default for Audit {
    fn default() -> Self {
        Audit {
            enabled: true,
            log_allowed: true,
        }
    }
}

fn yes() -> bool {
    true
}
fn default_dns_rate() -> u32 {
    50
}
fn default_label_len() -> usize {
    63
}
fn default_name_len() -> usize {
    253
}
fn default_unique_subdomains() -> u32 {
    120
}
/// Enough for the few hosts a service keeps under one domain (`www`,
/// `api`, `cdn`, a regional name or two); a tunnel through a zone no rule
/// names gets ten names a minute per domain, each one audited.
fn default_unique_unlisted() -> u32 {
    10
}
fn default_refused_types() -> Vec<String> {
    ["TXT", "NULL", "ANY"].map(String::from).to_vec()
}
fn default_scan_limit() -> u64 {
    4 * 1024 * 1024
}
