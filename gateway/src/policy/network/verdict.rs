//! What the network decision is asked ([`ConnRequest`]) and what it
//! answers: for a connection ([`NetVerdict`], with the [`NetDenyReason`]
//! of a refusal), for a name the DNS listener is asked
//! ([`NameDecision`], and [`NameVerdict`] as `sluice explain` shows it).

use std::net::{IpAddr, SocketAddr};

#[cfg(doc)]
use super::NetworkPolicy;
use super::ssrf;

/// What the proxy knows about a connection when it decides.
#[derive(Debug, Clone, Copy)]
pub struct ConnRequest<'a> {
    /// The original destination the sandbox connected to.
    pub dst: SocketAddr,
    /// The TLS ClientHello's server name.
    pub sni: Option<&'a str>,
    /// The HTTP/1 Host header (a port in it is ignored).
    pub host: Option<&'a str>,
    /// What the name resolves to, when [`NetworkPolicy::wants_resolution`].
    pub name_addrs: Option<&'a [IpAddr]>,
    /// `dst` is one of the host's own addresses (the host routes it to
    /// itself): refused by the SSRF guard like loopback, whatever the
    /// address tables say ([`ssrf::IpClass::Host`]).
    pub host_address: bool,
    /// The TLS ClientHello offers Encrypted Client Hello and the connection
    /// will not be decrypted (the caller knows which name decides that:
    /// [`NetworkPolicy::intercepts`] of the SNI, or of an explicit-proxy
    /// tunnel's granted name).
    pub ech: bool,
    /// The executable of the program that connected, where known and
    /// still the one that connected (`process`); a rule with `binaries`
    /// admits only those.
    pub exe: Option<&'a str>,
}

#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetVerdict {
    Allow {
        rule: String,
    },
    Deny {
        reason: NetDenyReason,
        rule: String,
    },
    /// Learn mode: `rule` would refuse it (`reason`), and it goes on,
    /// audited `would_deny`.
    WouldDeny {
        reason: NetDenyReason,
        rule: String,
    },
    /// `rule` (an `ask_out` entry, or `network.unmatched: ask`) leaves it
    /// to a person: parked until approved or rejected.
    Ask {
        rule: String,
    },
    /// Learn mode: `rule` would ask a person; it goes on, audited
    /// `would_ask`.
    WouldAsk {
        rule: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetDenyReason {
    DeniedByRule,
    Ssrf(ssrf::IpClass),
    NameAddressMismatch,
    DomainFronting,
    IpLikeName,
    /// A TLS hello offering Encrypted Client Hello on a connection that is
    /// not decrypted, under `encrypted_client_hello: refuse`.
    EncryptedClientHello,
    /// The winner decides request by request (`methods`, `paths`,
    /// `access`) and the connection would not be read: TLS not decrypted.
    RequestRuleUnread,
    /// The winner names the executables it admits (`binaries`), and the
    /// program that connected is none of them, or is not known.
    BinaryNotAllowed,
}

impl NetDenyReason {
    /// Stable label for metrics and audit events; an SSRF refusal's class is
    /// reported separately by [`ssrf::IpClass::as_str`].
    pub fn as_str(&self) -> &'static str {
        match self {
            NetDenyReason::DeniedByRule => "denied_by_rule",
            NetDenyReason::Ssrf(_) => "ssrf",
            NetDenyReason::NameAddressMismatch => "name_address_mismatch",
            NetDenyReason::DomainFronting => "domain_fronting",
            NetDenyReason::IpLikeName => "ip_like_name",
            NetDenyReason::EncryptedClientHello => "encrypted_client_hello",
            NetDenyReason::RequestRuleUnread => "request_rule_unread",
            NetDenyReason::BinaryNotAllowed => "binary_not_allowed",
        }
    }
}

/// What the DNS listener does with a name, as `sluice explain` tells it
/// ([`NameDecision`] has the detail).
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameVerdict {
    Allow {
        rule: String,
    },
    Deny {
        rule: String,
    },
    /// Resolve, and keep only the answer addresses
    /// [`NetworkPolicy::address_allowed`] accepts.
    ByAddress,
    /// Learn mode: resolved, though `rule` (the catch-all) would refuse it.
    WouldDeny {
        rule: String,
    },
}

/// [`NameVerdict`] with the cases the DNS listener treats apart told
/// apart; see [`NetworkPolicy::name_decision`].
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameDecision {
    /// A name rule or `ALL_TRAFFIC` allows it on some port.
    Allow { rule: String },
    /// A name rule denies it (or `ALL_TRAFFIC`, in a policy without address
    /// allow rules).
    Deny { rule: String },
    /// No rule names it and `ALL_TRAFFIC` (`rule`) denies it on every
    /// port, under address allow rules: answered `denied_answer` by
    /// Sluice, never asked upstream.
    Unlisted { rule: String },
    /// As [`Unlisted`](Self::Unlisted), under `dns.resolve_unlisted`:
    /// resolved and filtered as [`ByAddress`](Self::ByAddress), each query
    /// audited and held to `max_unique_unlisted_per_minute`.
    ResolveUnlisted,
    /// Some port to it is left to no rule (default allow), and `allow_out`
    /// has address rules: resolve, and keep only the answer addresses
    /// [`NetworkPolicy::address_allowed`] accepts.
    ByAddress,
    /// Learn mode: only the catch-all (`rule`) refuses it; resolved, so
    /// the connection it is asked for can happen, audited `would_deny`.
    WouldDeny { rule: String },
}

/// The rule an audit event names for a query resolved under
/// `dns.resolve_unlisted`.
pub const RESOLVE_UNLISTED: &str = "network.dns.resolve_unlisted";
