//! The explicit proxy's pure decisions about one request, beside the
//! listener's I/O: what a tunnel spliced unread may carry, the refusal of
//! a name its sandbox's DNS gate would not look up, and the gate that
//! answers no DNS (remote sandboxes resolve names themselves). A refusal
//! here is answered before any tunnel exists ([`Refusal`]).

use std::net::{IpAddr, SocketAddr};

use hickory_proto::{op::ResponseCode, rr::RecordType};

use crate::{
    conn::Who,
    dns::{Admission, Gate},
    policy::{
        compiled::CompiledPolicy,
        network::{ConnRequest, NameVerdict, NetDenyReason, NetVerdict, canonical_name},
    },
    proxy::{host_address, sniff::Sniffed},
};

/// A refusal answered before any tunnel exists.
pub(super) struct Refusal {
    pub(super) status: u16,
    pub(super) reason: &'static str,
    pub(super) rule: Option<String>,
    pub(super) detail: String,
}

/// Whether a tunnel spliced unread may carry what it starts with, decided
/// as on a steered connection: the name a ClientHello or a Host sends must
/// be the one the tunnel was granted for (another is fronting: a CDN
/// routes by it), and the network policy decides on what was sent, on the
/// address alone when the bytes name nothing.
pub(super) fn carried(
    who: &Who,
    dst: SocketAddr,
    name: &str,
    sniffed: &Sniffed,
) -> Result<(), Refusal> {
    let (sni, host) = match sniffed {
        Sniffed::Tls { sni, .. } => (sni.as_deref(), None),
        Sniffed::Http { host } => (None, host.as_deref()),
        _ => (None, None),
    };
    if let Some(sent) = sni.or(host)
        && canonical_name(sent) != name
    {
        return Err(Refusal {
            status: 403,
            reason: NetDenyReason::DomainFronting.as_str(),
            rule: Some("token:connections".to_owned()),
            detail: format!("the tunnel granted for {name} carries {sent}"),
        });
    }
    let policy = &who.policy;
    let network = who.network();
    let verdict = network.decide(&ConnRequest {
        dst,
        sni,
        host,
        // `dst` is one of the granted name's addresses (Sluice resolved it).
        name_addrs: Some(&[dst.ip()]),
        host_address: host_address::for_policy(network, dst.ip()),
        ech: matches!(sniffed, Sniffed::Tls { ech: true, .. }),
        exe: None,
    });
    match verdict {
        NetVerdict::Deny { reason, rule } => Err(Refusal {
            status: 403,
            reason: reason.as_str(),
            rule: Some(format!("{}:{rule}", policy.name)),
            detail: format!("what the tunnel to {name} carries is refused by the network policy"),
        }),
        NetVerdict::Ask { rule } => Err(asked(policy, &rule, name)),
        // Learn mode lets it through; the tunnel's grant was audited.
        NetVerdict::Allow { .. } | NetVerdict::WouldDeny { .. } | NetVerdict::WouldAsk { .. } => {
            Ok(())
        }
    }
}

/// A destination the policy asks a person about, over the explicit proxy:
/// refused. Connections are parked for a person only where the kernel
/// steered them (the sandbox, its session and its program are known);
/// a remote sandbox's own control plane asks before it connects.
pub(super) fn asked(policy: &CompiledPolicy, rule: &str, name: &str) -> Refusal {
    Refusal {
        status: 403,
        reason: "ask_on_explicit_proxy",
        rule: Some(format!("{}:{rule}", policy.name)),
        detail: format!(
            "{name} needs a person's approval, which the explicit proxy does not ask for"
        ),
    }
}

/// A name the sandbox's DNS gate would not look up (the gate audits why):
/// refused by its deny rule where one names it, else by the DNS policy
/// (a cap, or a name no rule lists under default deny).
pub(super) fn not_looked_up(policy: &CompiledPolicy, name: &str) -> Refusal {
    let (reason, rule) = match policy.network.name_verdict(name) {
        NameVerdict::Deny { rule } => ("denied_by_rule", rule),
        _ => ("dns_refused", "network.dns".to_owned()),
    };
    Refusal {
        status: 403,
        reason,
        rule: Some(format!("{}:{rule}", policy.name)),
        detail: format!("Sluice does not look {name} up for this sandbox"),
    }
}

/// Remote sandboxes resolve names themselves; DNS through the proxy is
/// never answered.
pub(super) struct NoDns;

impl Gate for NoDns {
    fn admit(&self, _: &str, _: RecordType) -> Admission {
        Admission::Refuse(ResponseCode::Refused, "explicit_proxy")
    }
    fn keep(&self, _: IpAddr) -> bool {
        false
    }
}
