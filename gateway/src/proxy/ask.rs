//! A connection the network policy leaves to a person
//! ([`NetVerdict::Ask`](crate::policy::network::NetVerdict::Ask)): parked
//! at its first bytes, before anything reaches the upstream, on the same
//! approvals desk as app requests (its webhook, `sluice approvals`, its
//! queue limits and timeout). An earlier "approve for the session" of the
//! same name lets it through unparked; "approve always" is written into
//! the sandbox's overlay by the admin API before the connection resumes.
//! Rejected, expired or withdrawn, it is refused naming the asking rule.

use std::net::SocketAddr;

use super::{Proxy, Who};
use crate::approvals::{ApprovalCard, CardKind};

/// The audit reason of a connection let through by a session grant.
const SESSION_GRANT: &str = "session_grant";

/// Why an asked connection may not go on, and the rule that asked.
pub(super) struct Refused {
    pub reason: &'static str,
    pub rule: String,
}

impl Proxy {
    /// Asks a person about a connection to `name` (its SNI or Host,
    /// canonical; else the address) that `rule` asks about. `Ok` once
    /// approved (counted and audited here); `Err` says why not, for the
    /// caller to refuse.
    pub(super) async fn ask(
        &self,
        who: &Who,
        dst: SocketAddr,
        rule: &str,
        name: &str,
        (sni, host): (Option<&str>, Option<&str>),
    ) -> Result<(), Refused> {
        let rule = format!("{}:{rule}", who.policy.name);
        let admitted = |reason: &str| {
            self.record_admitted(who, dst, ("allow", reason), &rule, true, (sni, host));
        };
        let session = who.session.as_deref();
        if self
            .approvals
            .destination_granted(&who.sandbox, session, name)
        {
            admitted(SESSION_GRANT);
            return Ok(());
        }
        let card = ApprovalCard {
            kind: CardKind::Network,
            sandbox: who.sandbox.to_string(),
            session: session.map(str::to_owned),
            host: name.to_owned(),
            port: Some(dst.port()),
            rule: Some(rule.clone()),
            process: who.process.as_deref().cloned(),
            ..ApprovalCard::default()
        };
        let (_, waited) = self
            .approvals
            .park_with(card, |card| {
                self.record_admitted(
                    who,
                    dst,
                    ("ask", "parked"),
                    &format!("{rule} (approval {})", card.id),
                    true,
                    (sni, host),
                );
            })
            .await;
        match waited.outcome() {
            Ok((verdict, _by)) => {
                admitted(verdict);
                Ok(())
            }
            Err((reason, _by)) => Err(Refused { reason, rule }),
        }
    }
}
