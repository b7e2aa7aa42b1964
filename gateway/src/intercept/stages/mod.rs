//! The request stages: one shape, one ordered list. Every stage is a file
//! here with a `run` over the [`Exchange`] that returns an [`Outcome`],
//! built around a pure decision its tests read as a table. [`REQUEST`] is
//! the order, written once; [`Interceptor::request_stages`] runs it, and
//! a refusal from any stage is counted, audited and answered in one place
//! ([`Interceptor::refuse`]).
//!
//! The answer side (the forward's 206 and encoding checks, credential
//! redaction, rehydration and transformations, redaction again) is
//! `exchange::answer`: its stages wrap one streaming body and run in the
//! order written there.

mod apps;
mod body;
mod credentials;
mod dry_run;
mod host_pin;
mod network_rule;

use std::sync::Arc;

use hyper::{Request, Response, http::request};

use super::{
    Conn, Interceptor, content::ResponsePlan, redirects::Follow, refusal::Refusal, respond::Body,
};
use crate::{credentials::Secret, redact::Needles};

/// One request as it goes through the stages; what the last one leaves is
/// what goes upstream, with what the answer stages need.
pub(super) struct Exchange {
    pub(super) parts: request::Parts,
    pub(super) body: Body,
    /// What the answer stages do (rehydration, response transformations).
    pub(super) plan: ResponsePlan,
    /// The injected secret's forms, to redact from the answer.
    pub(super) needles: Option<Arc<Needles>>,
    /// An access token sent, so a 401 to it can drop it from the cache.
    pub(super) sent_token: Option<(String, Arc<Secret>)>,
    /// The injected credential's binding follows redirects.
    pub(super) follow: Option<Follow>,
    /// The request came without a body (no stage adds one): a followed
    /// redirect may send it again as it is.
    pub(super) bodiless: bool,
}

/// What a stage decided about a request.
#[must_use]
pub(super) enum Outcome {
    /// On to the next stage (or upstream after the last).
    Continue,
    /// Refused: counted, audited and answered by [`Interceptor::refuse`].
    Refuse(Refusal),
    /// Answered without forwarding and without refusing (a dry run's
    /// preview of a write).
    Respond(Response<Body>),
}

/// A request stage, by the name the audit log, `explain` and the docs use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    HostPin,
    NetworkRule,
    Apps,
    DryRun,
    Body,
    Credentials,
}

/// The request stages in the order a request meets them. Hygiene runs
/// before them all: no stage reads a request whose framing or host is in
/// doubt.
pub(super) const REQUEST: [Stage; 6] = [
    // Every later stage decides on the connection's name: a plain-HTTP
    // request naming another host is refused before any reads it.
    Stage::HostPin,
    // The network rule that allowed the connection bounds its requests
    // (methods, paths) before anything is asked of a person, previewed,
    // read or rewritten: what the rule refuses is never parked.
    Stage::NetworkRule,
    // The catalogue's or a person's no comes before anything is previewed,
    // read or rewritten, and a parked request has not been read yet.
    Stage::Apps,
    // A write under dry run is previewed, not forwarded: before the body
    // stages (nothing is redacted from a preview that goes nowhere) and
    // before the credentials (the preview never carries a secret).
    Stage::DryRun,
    // PII, then injection scoring, then transformations, in one read of
    // the body (`content::inspect` orders the three).
    Stage::Body,
    // Last: no stage above ever sees a real secret, and what the
    // credential signs (SigV4) is the body the stages above left.
    Stage::Credentials,
];

impl Stage {
    pub(super) fn name(self) -> &'static str {
        match self {
            Stage::HostPin => "host_pin",
            Stage::NetworkRule => "network_rule",
            Stage::Apps => "apps",
            Stage::DryRun => "dry_run",
            Stage::Body => "body",
            Stage::Credentials => "credentials",
        }
    }

    /// Every reason this stage may refuse with (the `reason` of its
    /// answer, audit event and metrics); ARCHITECTURE.md's stages table
    /// lists the same (checked by a test; the declaration is for it).
    #[cfg(test)]
    pub(super) fn reasons(self) -> &'static [&'static str] {
        match self {
            Stage::HostPin => &["host_changed"],
            Stage::NetworkRule => network_rule::REASONS,
            Stage::Apps => apps::REASONS,
            Stage::DryRun => &[],
            Stage::Body => body::REASONS,
            Stage::Credentials => credentials::REASONS,
        }
    }

    async fn run(self, interceptor: &Interceptor, conn: &Conn, exchange: &mut Exchange) -> Outcome {
        match self {
            Stage::HostPin => host_pin::run(conn, exchange),
            Stage::NetworkRule => network_rule::run(conn, exchange).await,
            Stage::Apps => apps::run(interceptor, conn, exchange).await,
            Stage::DryRun => dry_run::run(interceptor, conn, exchange).await,
            Stage::Body => body::run(interceptor, conn, exchange).await,
            Stage::Credentials => credentials::run(interceptor, conn, exchange).await,
        }
    }
}

impl Interceptor {
    /// Hygiene, then the request stages in [`REQUEST`]'s order; `Err` is
    /// Sluice's answer.
    pub(super) async fn request_stages(
        &self,
        request: Request<Body>,
        conn: &Conn,
    ) -> Result<Exchange, Response<Body>> {
        let (parts, body) = request.into_parts();
        if let Err(violation) = super::hygiene::check(&parts, conn.sni.as_deref()) {
            return Err(self.refuse(conn, Refusal::Hygiene(violation)));
        }
        let bodiless = hyper::body::Body::is_end_stream(&body);
        let mut exchange = Exchange {
            parts,
            body,
            plan: ResponsePlan::default(),
            needles: None,
            sent_token: None,
            follow: None,
            bodiless,
        };
        for stage in REQUEST {
            match stage.run(self, conn, &mut exchange).await {
                Outcome::Continue => {}
                Outcome::Refuse(refusal) => {
                    tracing::debug!(
                        stage = stage.name(),
                        reason = refusal.reason(),
                        "request refused"
                    );
                    return Err(self.refuse(conn, refusal));
                }
                Outcome::Respond(answer) => {
                    self.count(answer.status());
                    return Err(answer);
                }
            }
        }
        Ok(exchange)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intercept::hygiene::Violation;

    /// ARCHITECTURE.md's request-stages table: its rows, in order, are
    /// hygiene and [`REQUEST`], each listing exactly the reasons the stage
    /// declares. A stage added, moved or given a new refusal without the
    /// docs fails here.
    #[test]
    fn the_architecture_stages_table_is_the_code() {
        let doc = include_str!("../../../../ARCHITECTURE.md");
        let section = doc
            .split("\n## Request stages\n")
            .nth(1)
            .expect("ARCHITECTURE.md has a Request stages section");
        let section = section.split("\n## ").next().unwrap_or(section);
        let rows: Vec<Vec<&str>> = section
            .lines()
            .filter(|line| {
                line.starts_with("| ") && !line.starts_with("| order") && !line.starts_with("| ---")
            })
            .map(|line| line.trim_matches('|').split(" | ").map(str::trim).collect())
            .collect();
        let hygiene: Vec<&str> = Violation::ALL.iter().map(|v| v.as_str()).collect();
        let mut want: Vec<(&str, Vec<&str>)> = vec![("hygiene", hygiene)];
        want.extend(REQUEST.iter().map(|s| (s.name(), s.reasons().to_vec())));
        let got: Vec<(&str, Vec<&str>)> = rows
            .iter()
            .map(|row| {
                let name = row.get(1).map_or("", |n| n.trim_matches('`'));
                let reasons = row.last().copied().unwrap_or_default();
                let reasons = reasons
                    .split(", ")
                    .map(|r| r.trim_matches('`'))
                    .filter(|r| *r != "none" && !r.is_empty())
                    .collect();
                (name, reasons)
            })
            .collect();
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(row[0], (i).to_string(), "the order column of {row:?}");
        }
        assert_eq!(got, want);
    }
}
