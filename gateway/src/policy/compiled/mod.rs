//! The immutable, validated form of one policy file, holding everything a
//! request under it needs.
//!
//! `CompiledPolicy::compile` checks every section, then builds the content
//! stages (the PII scanner, the injection detector, the transformation
//! automata); [`CompiledPolicy::bind`] joins the credential bindings with
//! the daemon's credentials when the store loads it. Nothing is built or
//! parsed per request, so a stage that cannot be built is an error here, at
//! the path of the offending node, never a refusal at request time. Every
//! problem is reported at once.

mod decryption;
mod transformations;

pub use transformations::Transformation;
use transformations::compile_transformations;

use std::collections::HashMap;

use super::closest::closest;
use super::network::{CompileError, NetworkPolicy};
use super::raw;
use crate::apps::{Catalogue, PolicyApps};
use crate::content::Stages;
use crate::credentials::hosts::{HostSet, is_name_pattern};
use crate::credentials::{BindingError, Bindings, CredentialConfig};

/// The kinds of PII and secrets the content stage detects; the same names
/// are the keys of `pii.actions`.
pub const PII_TYPES: &[&str] = &[
    "email",
    "phone",
    "ssn",
    "credit_card",
    "iban",
    "ip_address",
    "aws_access_key",
    "github_token",
    "openai_key",
    "anthropic_key",
    "slack_token",
    "stripe_key",
    "jwt",
    "private_key",
    "generic_secret",
];

/// [`CompiledPolicy::first_bytes_reader`] for the name rules of `allow_out`
/// and `deny_out` that cover the port: the SNI or Host decides.
pub const NAME_RULES: &str = "network.name_rules";

/// [`CompiledPolicy::first_bytes_reader`] for the `allow_out` rules with
/// methods or paths that cover the port: each request is decided.
pub const REQUEST_RULES: &str = "network.request_rules";

/// One policy, ready to decide with. Shared behind an `Arc`; never mutated.
#[derive(Debug)]
pub struct CompiledPolicy {
    /// The file stem it was loaded from.
    pub name: String,
    pub network: NetworkPolicy,
    /// The `network` section `network` was compiled from (decryption's
    /// default applied), for a sandbox's overlay to be compiled with it
    /// (`policy::overlay`).
    pub network_source: raw::Network,
    pub transformations: Vec<Transformation>,
    pub pii: raw::Pii,
    pub injection_defense: raw::InjectionDefense,
    pub credentials: Vec<raw::CredentialBinding>,
    pub apps: raw::Apps,
    pub dry_run: bool,
    pub audit: raw::Audit,
    /// The content stages, built from `pii`, `injection_defense` and
    /// `transformations`.
    pub content: Stages,
    /// `credentials` joined with the daemon's credentials ([`Self::bind`],
    /// which the store does for every policy it loads). Empty until then:
    /// every placeholder found is refused, as no credential's hosts are
    /// known.
    pub bindings: Bindings,
    /// The stage whose section turned decryption on, where the policy
    /// left `decide_without_decryption` unset
    /// (`decryption`).
    pub decrypted_for: Option<&'static str>,
    /// `apps` resolved against the daemon's app catalogue
    /// ([`Self::resolve_apps`], which the store does for every policy it
    /// loads, with the catalogue the approvals desk holds).
    pub app_lookup: PolicyApps,
}

impl CompiledPolicy {
    /// Whether a connection to `port` the address alone allows has its
    /// first bytes read before it is relayed ([`Self::first_bytes_reader`]).
    /// Otherwise it is relayed at once, so protocols whose server speaks
    /// first need not wait for a timeout.
    pub fn reads_first_bytes(&self, port: u16) -> bool {
        self.first_bytes_reader(port).is_some()
    }

    /// What in this policy reads the first bytes of a connection to
    /// `port`, by its policy key: a name rule could apply to the port, TLS
    /// is decrypted, a rule with methods or paths covers the port, TLS is
    /// checked for Encrypted Client Hello, or a stage reads plain HTTP. Where something does, bytes that are not a well-formed
    /// ClientHello or request head are refused, naming it; where nothing
    /// does (`None`), they are relayed unread.
    pub fn first_bytes_reader(&self, port: u16) -> Option<&'static str> {
        if self.network.name_rules_apply(port) {
            return Some(NAME_RULES);
        }
        if !self.network.decide_without_decryption() {
            // Decrypted because a stage is enabled: the stage is the reason.
            return Some(
                self.decrypted_for
                    .unwrap_or("network.decide_without_decryption"),
            );
        }
        if self.network.request_rules_apply(port) {
            return Some(REQUEST_RULES);
        }
        if self.network.refuses_ech() {
            return Some("network.encrypted_client_hello");
        }
        let mut stages = self.http_stages().into_iter();
        stages.find(|&(_, on)| on).map(|(name, _)| name)
    }

    /// The stages configured that see plain HTTP but never HTTPS: under
    /// `decide_without_decryption: true` TLS is relayed unread, so a write
    /// over `http://` is scanned, gated or previewed and the same write
    /// over `https://` is not. `sluice check` warns of them.
    pub fn stages_on_plain_http_only(&self) -> Vec<&'static str> {
        if !self.network.decide_without_decryption() {
            return Vec::new();
        }
        let stages = self.http_stages().into_iter();
        stages.filter(|&(_, on)| on).map(|(name, _)| name).collect()
    }

    /// The stages that read HTTP requests or their answers, by their
    /// policy section, in the order a request meets them, and whether each
    /// is configured.
    pub fn http_stages(&self) -> [(&'static str, bool); 6] {
        [
            ("apps", !self.apps.list.is_empty()),
            ("dry_run", self.dry_run),
            ("credentials", !self.credentials.is_empty()),
            ("pii", self.pii.enabled),
            ("injection_defense", self.injection_defense.enabled),
            ("transformations", !self.transformations.is_empty()),
        ]
    }

    pub fn compile(name: &str, raw: &raw::Policy) -> Result<CompiledPolicy, Vec<CompileError>> {
        let mut errors = Vec::new();
        let (raw_network, decrypted_for) = decryption::with_decryption_default(raw);
        let network = match NetworkPolicy::compile(&raw_network) {
            Ok(network) => Some(network.learning(raw.mode == raw::Mode::Learn)),
            Err(network_errors) => {
                errors.extend(network_errors);
                None
            }
        };
        check_pii(&raw.pii, &mut errors);
        check_injection_defense(&raw.injection_defense, &mut errors);
        let transformations = compile_transformations(&raw.transformations, &mut errors);
        check_credentials(&raw.credentials, &mut errors);
        check_apps(&raw.apps, &mut errors);
        // Built only from sections that passed their checks: what fails
        // here is a stage the checks let through.
        let content = match errors.is_empty() {
            true => Stages::build(&raw.pii, &raw.injection_defense, &raw.transformations)
                .map_err(|built| {
                    let located = built.into_iter().map(|e| error(e.path, e.message, None));
                    errors.extend(located);
                })
                .ok(),
            false => None,
        };
        match (network, content) {
            (Some(network), Some(content)) if errors.is_empty() => Ok(CompiledPolicy {
                name: name.to_string(),
                network,
                network_source: raw_network.into_owned(),
                transformations,
                pii: raw.pii.clone(),
                injection_defense: raw.injection_defense.clone(),
                credentials: raw.credentials.clone(),
                apps: raw.apps.clone(),
                dry_run: raw.dry_run,
                audit: raw.audit.clone(),
                content,
                bindings: Bindings::default(),
                app_lookup: PolicyApps::default(),
                decrypted_for,
            }),
            _ => Err(errors),
        }
    }

    /// The network policy with a sandbox's overlay entries added
    /// (`policy::overlay`), in this policy's mode.
    pub fn network_with(
        &self,
        overlay: &[raw::Target],
    ) -> Result<NetworkPolicy, Vec<CompileError>> {
        let network = NetworkPolicy::compile_with(&self.network_source, overlay)?;
        Ok(network.learning(self.network.learns()))
    }

    /// Resolves the policy's `apps` against the daemon's catalogue, once:
    /// a request's approval decision then looks up no names.
    pub fn resolve_apps(&mut self, catalogue: &Catalogue) {
        self.app_lookup = catalogue.resolve(&self.apps);
    }

    /// Compiles the policy's `credentials` against the daemon's
    /// credentials, as the policy loads (at start and on each reload; the
    /// daemon's credentials change only with a restart, so a policy kept
    /// across a reload keeps valid bindings). A binding that does not
    /// compile (an unknown credential, a bad host) would leave each of the
    /// policy's placeholders refused, request by request: it is an error at
    /// its path instead.
    pub fn bind(&mut self, credentials: &[CredentialConfig]) -> Result<(), Vec<CompileError>> {
        self.bindings = bind(&self.credentials, credentials)?;
        Ok(())
    }
}

/// `bindings` (a policy's `credentials`) compiled against the daemon's
/// `credentials`, each error at the path of the binding it is about. Also
/// for a policy that does not compile, so its binding errors come with the
/// rest.
pub fn bind(
    bindings: &[raw::CredentialBinding],
    credentials: &[CredentialConfig],
) -> Result<Bindings, Vec<CompileError>> {
    Bindings::compile(credentials, bindings).map_err(|errors| {
        errors
            .into_iter()
            .map(|e| error(binding_path(bindings, &e), e.to_string(), None))
            .collect()
    })
}

/// The node of `bindings` a binding error is about.
fn binding_path(bindings: &[raw::CredentialBinding], e: &BindingError) -> String {
    let (name, field) = match e {
        BindingError::UnknownCredential(name) | BindingError::DuplicateBinding(name) => {
            (name, "credential")
        }
        BindingError::NoBodyValue(name) => (name, "allow_in_body"),
        BindingError::Host { credential, .. } => (credential, "hosts"),
        BindingError::Matcher(_) => return "credentials".to_string(),
    };
    match bindings.iter().position(|b| &b.credential == name) {
        Some(i) => format!("credentials[{i}].{field}"),
        None => "credentials".to_string(),
    }
}

pub(super) fn error(path: String, message: String, hint: Option<String>) -> CompileError {
    CompileError {
        path,
        message,
        hint,
    }
}

fn check_pii(pii: &raw::Pii, errors: &mut Vec<CompileError>) {
    for (i, kind) in pii.types.iter().enumerate() {
        if !PII_TYPES.contains(&kind.as_str()) {
            errors.push(unknown_pii_type(format!("pii.types[{i}]"), kind));
        }
    }
    for kind in pii.actions.keys() {
        let path = format!("pii.actions.{kind}");
        if !PII_TYPES.contains(&kind.as_str()) {
            errors.push(unknown_pii_type(path, kind));
        } else if !pii.types.is_empty() && !pii.types.contains(kind) {
            // The override could never apply: the type is not detected.
            errors.push(error(
                path,
                format!("`{kind}` has an action but is not in `pii.types`"),
                Some(format!(
                    "add `{kind}` to `pii.types`, or remove this override"
                )),
            ));
        }
    }
    if pii.oversize.inspect_bytes == 0 {
        errors.push(error(
            "pii.oversize.inspect_bytes".to_string(),
            "must be greater than 0".to_string(),
            Some("the default is 4194304 (4 MiB)".to_string()),
        ));
    }
}

fn unknown_pii_type(path: String, kind: &str) -> CompileError {
    let hint = match closest(kind, PII_TYPES.iter().copied()) {
        Some(near) => format!("did you mean `{near}`?"),
        None => format!("supported types: {}", PII_TYPES.join(", ")),
    };
    error(path, format!("unknown PII type `{kind}`"), Some(hint))
}

fn check_injection_defense(defense: &raw::InjectionDefense, errors: &mut Vec<CompileError>) {
    // `contains` is false for NaN too.
    if !(0.0..=1.0).contains(&defense.threshold) {
        errors.push(error(
            "injection_defense.threshold".to_string(),
            format!("{} is outside 0..=1", defense.threshold),
            Some("a score between 0 and 1; the default is 0.8".to_string()),
        ));
    }
    check_hosts(&defense.hosts, "injection_defense.hosts", errors);
    check_host_names(&defense.hosts, "injection_defense.hosts", errors);
    for (i, path) in defense.paths.iter().enumerate() {
        if !path.starts_with('/') {
            errors.push(error(
                format!("injection_defense.paths[{i}]"),
                format!("`{path}` is not a path"),
                Some("a path prefix starts with `/`, such as `/v1/agents/`".to_string()),
            ));
        }
    }
}

pub(super) fn check_hosts(hosts: &[String], path: &str, errors: &mut Vec<CompileError>) {
    for (i, host) in hosts.iter().enumerate() {
        if host.trim().is_empty() {
            errors.push(error(
                format!("{path}[{i}]"),
                "empty destination".to_string(),
                Some("write a name (`api.example.com`, `*.example.com`) or an address".to_string()),
            ));
        }
    }
}

/// The names among `hosts` must be host patterns a rule can match the
/// sandbox's name against (addresses match none, and are let be).
pub(super) fn check_host_names(hosts: &[String], path: &str, errors: &mut Vec<CompileError>) {
    let names = hosts.iter().enumerate().filter(|(_, h)| is_name_pattern(h));
    for (i, host) in names.filter(|(_, h)| !h.trim().is_empty()) {
        if let Err(es) = HostSet::parse(&[host]) {
            for e in es {
                errors.push(error(
                    format!("{path}[{i}]"),
                    e.to_string(),
                    Some(
                        "write a name (`api.example.com`) or `*.` and a name (`*.example.com`)"
                            .to_string(),
                    ),
                ));
            }
        }
    }
}

fn check_credentials(bindings: &[raw::CredentialBinding], errors: &mut Vec<CompileError>) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, binding) in bindings.iter().enumerate() {
        let path = format!("credentials[{i}].credential");
        let name = binding.credential.as_str();
        if name.trim().is_empty() {
            errors.push(error(
                path,
                "empty credential name".to_string(),
                Some("name a credential from the daemon config's `credentials`".to_string()),
            ));
        } else if let Some(first) = seen.get(name) {
            errors.push(error(
                path,
                format!("credential `{name}` is bound twice"),
                Some(format!(
                    "merge this entry into credentials[{first}] (list every host there)"
                )),
            ));
        } else {
            seen.insert(name, i);
        }
        check_hosts(&binding.hosts, &format!("credentials[{i}].hosts"), errors);
        errors.extend(crate::credentials::binding::follow_redirects_error(
            i, binding,
        ));
    }
}

fn check_apps(apps: &raw::Apps, errors: &mut Vec<CompileError>) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, app) in apps.list.iter().enumerate() {
        let at = apps.entry_path(i);
        let path = format!("{at}.app");
        let name = app.app.as_str();
        if name.trim().is_empty() {
            errors.push(error(
                path,
                "empty app name".to_string(),
                Some("name an app from the daemon's app catalogue".to_string()),
            ));
        } else if let Some(first) = seen.get(name) {
            errors.push(error(
                path,
                format!("app `{name}` is listed twice"),
                Some(format!(
                    "merge its actions into {}",
                    apps.entry_path(*first)
                )),
            ));
        } else {
            seen.insert(name, i);
        }
        for action in app.actions.keys() {
            if action.trim().is_empty() {
                errors.push(error(
                    format!("{at}.actions.{action}"),
                    "empty action name".to_string(),
                    Some("name an action of the app, or `*` for every unlisted action".to_string()),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests;
