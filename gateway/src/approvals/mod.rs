//! Parked requests and the decisions about them.
//!
//! A request whose app action is `ask` waits here, before any credential is
//! injected, until a person approves it (once, or for the rest of the
//! session), rejects it, or the timeout passes, which fails closed. Other
//! traffic is unaffected: a parked request holds only its own connection's
//! task. The control plane hears of each parked request through the
//! webhook (`webhook`) and decides through the admin API.
//!
//! Two things turn `ask` into allow without parking: a grant made by an
//! earlier "approve for the session", and a task session's pre-approved
//! apps. Neither ever overrides `deny`: the caller only asks here for `ask`.

pub mod card;
#[cfg(test)]
mod tests;
pub mod webhook;

use std::{
    collections::{BTreeSet, HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde::Deserialize;
use tokio::sync::oneshot;

use crate::{apps::Catalogue, metrics::Metrics};
pub use card::{ApprovalCard, CardKind, DecisionSpec, MAX_BY_LEN, Verdict};
use webhook::Webhook;

/// The daemon config's `approvals:` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// How long a parked request waits for a decision before it fails
    /// closed with 403 `approval_expired`.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Requests parked at once, over all sandboxes; beyond it `ask`
    /// requests are refused at once (403 `approval_queue_full`). One
    /// sandbox may hold at most half of them (rounded up; see
    /// [`sandbox_share`]).
    #[serde(default = "default_max_parked")]
    pub max_parked: usize,
    /// Where approval cards are POSTed (JSON) when a request parks.
    #[serde(default)]
    pub webhook: Option<webhook::WebhookConfig>,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            timeout_ms: default_timeout_ms(),
            max_parked: default_max_parked(),
            webhook: None,
        }
    }
}

fn default_timeout_ms() -> u64 {
    300_000
}
fn default_max_parked() -> usize {
    10_000
}

/// How a parked request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waited {
    Approved {
        verdict: Verdict,
        by: String,
    },
    Rejected {
        by: String,
    },
    Expired,
    /// Its session or sandbox was removed while it waited; `by` says
    /// which (`session_removed`, `sandbox_removed`).
    Withdrawn {
        by: String,
    },
    /// Not parked at all: `max_parked` requests already wait, or the
    /// sandbox already holds its share of them.
    QueueFull,
}

/// Why a decision could not be applied.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecideError {
    #[error("no parked request `{0}` (already decided, expired, or its client left)")]
    NotFound(String),
    #[error("`by` must be 1 to {MAX_BY_LEN} printable characters")]
    BadBy,
    #[error(
        "`approve_always` is for network cards: an app action is approved once or for the session"
    )]
    AlwaysForApp,
}

impl Waited {
    /// Approved: `Ok` with the verdict (the audit reason) and who decided;
    /// otherwise `Err` with the refusal's reason and, where known, by whom
    /// or what.
    pub fn outcome(self) -> Result<(&'static str, String), (&'static str, Option<String>)> {
        match self {
            Waited::Approved { verdict, by } => Ok((verdict.as_str(), by)),
            Waited::Rejected { by } => Err(("approval_rejected", Some(by))),
            Waited::Expired => Err(("approval_expired", Some("expiry".to_owned()))),
            Waited::Withdrawn { by } => Err(("approval_withdrawn", Some(by))),
            Waited::QueueFull => Err(("approval_queue_full", None)),
        }
    }
}

/// A standing permission that lets an `ask` request through unparked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Grant {
    sandbox: String,
    session: Option<String>,
    app: String,
    /// The action approved; for an uncatalogued request, `None` with the
    /// exact method and path that were approved.
    action: Option<String>,
    method: String,
    path: String,
}

impl Grant {
    fn new(
        sandbox: &str,
        session: Option<&str>,
        app: &str,
        action: Option<&str>,
        method: &str,
        path: &str,
    ) -> Grant {
        let exact = action.is_none();
        Grant {
            sandbox: sandbox.to_owned(),
            session: session.map(str::to_owned),
            app: app.to_owned(),
            action: action.map(str::to_owned),
            method: if exact {
                method.to_owned()
            } else {
                String::new()
            },
            path: if exact {
                path.to_owned()
            } else {
                String::new()
            },
        }
    }

    fn of(card: &ApprovalCard) -> Grant {
        Grant::new(
            &card.sandbox,
            card.session.as_deref(),
            &card.app,
            card.action.as_deref(),
            &card.method,
            &card.path,
        )
    }
}

/// Why an `ask` request may pass without parking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// A task session whose pre-approvals name the app.
    TaskPreApproved,
    /// An earlier "approve for the session".
    SessionGrant,
}

impl Standing {
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::TaskPreApproved => "task_pre_approved",
            Standing::SessionGrant => "session_grant",
        }
    }
}

struct Parked {
    card: ApprovalCard,
    decide: oneshot::Sender<Waited>,
}

#[derive(Default)]
struct State {
    parked: HashMap<String, Parked>,
    /// Parked requests per sandbox, kept with `parked` by `park`/`unpark`.
    per_sandbox: HashMap<String, usize>,
    grants: HashSet<Grant>,
    /// (sandbox, session, name) a network card approved for the session.
    destinations: HashSet<(String, Option<String>, String)>,
    /// (sandbox, session) of task runs → their pre-approved apps.
    tasks: HashMap<(String, String), BTreeSet<String>>,
}

impl State {
    /// Parks unless the desk, or the sandbox's share of it, is full;
    /// `false`: not parked (the request is dropped with its sender).
    #[must_use]
    fn park(&mut self, parked: Parked, max_parked: usize) -> bool {
        let held = self.per_sandbox.get(&parked.card.sandbox).copied();
        if self.parked.len() >= max_parked || held.unwrap_or(0) >= sandbox_share(max_parked) {
            return false;
        }
        *self
            .per_sandbox
            .entry(parked.card.sandbox.clone())
            .or_default() += 1;
        self.parked.insert(parked.card.id.clone(), parked);
        true
    }

    fn unpark(&mut self, id: &str) -> Option<Parked> {
        let parked = self.parked.remove(id)?;
        if let Some(held) = self.per_sandbox.get_mut(&parked.card.sandbox) {
            *held -= 1;
            if *held == 0 {
                self.per_sandbox.remove(&parked.card.sandbox);
            }
        }
        Some(parked)
    }
}

/// How many of `max_parked` one sandbox may hold: half, rounded up, so a
/// sandbox flooding the desk with `ask` requests (a loop, a hostile agent)
/// leaves room for the others' requests to reach a person.
pub fn sandbox_share(max_parked: usize) -> usize {
    max_parked.div_ceil(2)
}

/// The approval desk: catalogue, parked requests, grants and task runs.
pub struct Approvals {
    /// Shared with the policy store, which checks policies against it.
    catalogue: Arc<Catalogue>,
    timeout: Duration,
    max_parked: usize,
    webhook: Option<Arc<Webhook>>,
    metrics: Arc<Metrics>,
    state: Mutex<State>,
}

impl Approvals {
    pub fn new(
        catalogue: Arc<Catalogue>,
        config: &ApprovalsConfig,
        webhook: Option<Webhook>,
        metrics: Arc<Metrics>,
    ) -> Approvals {
        Approvals {
            catalogue,
            timeout: Duration::from_millis(config.timeout_ms),
            max_parked: config.max_parked,
            webhook: webhook.map(Arc::new),
            metrics,
            state: Mutex::new(State::default()),
        }
    }

    /// No apps, nothing parked: every request continues.
    pub fn disabled(metrics: Arc<Metrics>) -> Approvals {
        Approvals::new(Arc::default(), &ApprovalsConfig::default(), None, metrics)
    }

    pub fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether an `ask` request may pass without a person: a task run's
    /// pre-approval of the whole app first, then a session grant.
    pub fn standing(
        &self,
        sandbox: &str,
        session: Option<&str>,
        app: &str,
        action: Option<&str>,
        method: &str,
        path: &str,
    ) -> Option<Standing> {
        let state = self.state();
        if let Some(session) = session
            && state
                .tasks
                .get(&(sandbox.to_owned(), session.to_owned()))
                .is_some_and(|apps| apps.contains(app))
        {
            return Some(Standing::TaskPreApproved);
        }
        let grant = Grant::new(sandbox, session, app, action, method, path);
        state
            .grants
            .contains(&grant)
            .then_some(Standing::SessionGrant)
    }

    /// Whether a connection to `name` the network policy asks about was
    /// approved for the session (a network card's `approve_session`).
    pub fn destination_granted(&self, sandbox: &str, session: Option<&str>, name: &str) -> bool {
        let key = (
            sandbox.to_owned(),
            session.map(str::to_owned),
            name.to_owned(),
        );
        self.state().destinations.contains(&key)
    }

    /// Parks a request described by `card` (its `id`, `parked_at_ms` and
    /// `expires_at_ms` are filled in here) until it is decided or expires.
    /// The card goes to the webhook, if one is configured. Dropping the
    /// future (the client went away) unparks it.
    pub async fn park(self: &Arc<Self>, card: ApprovalCard) -> (ApprovalCard, Waited) {
        self.park_with(card, |_| {}).await
    }

    /// As [`Approvals::park`], calling `parked` once the card is parked
    /// (with its id) and before the wait: the audit event comes first.
    pub async fn park_with(
        self: &Arc<Self>,
        mut card: ApprovalCard,
        parked: impl FnOnce(&ApprovalCard),
    ) -> (ApprovalCard, Waited) {
        let now = now_ms();
        card.id = format!("{:016x}", rand::random::<u64>());
        card.parked_at_ms = now;
        card.expires_at_ms =
            now.saturating_add(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX));
        let (decide, decided) = oneshot::channel();
        {
            let parked = Parked {
                card: card.clone(),
                decide,
            };
            if !self.state().park(parked, self.max_parked) {
                return (card, Waited::QueueFull);
            }
            self.metrics.approvals_parked.inc();
        }
        let _unpark = Unpark {
            approvals: self,
            id: card.id.clone(),
        };
        parked(&card);
        if let Some(webhook) = &self.webhook {
            tokio::spawn(notify(Arc::downgrade(self), webhook.clone(), card.clone()));
        }
        let waited = match tokio::time::timeout(self.timeout, decided).await {
            Ok(Ok(waited)) => waited,
            // Timed out, or the sender went without a word: fail closed.
            Ok(Err(_)) | Err(_) => Waited::Expired,
        };
        (card, waited)
    }

    /// The card of the request `id` still parked.
    pub fn card(&self, id: &str) -> Option<ApprovalCard> {
        self.state().parked.get(id).map(|p| p.card.clone())
    }

    /// Whether `id` still waits (the webhook stops retrying once it does not).
    pub fn is_parked(&self, id: &str) -> bool {
        self.state().parked.contains_key(id)
    }

    /// The parked requests, oldest first.
    pub fn list(&self) -> Vec<ApprovalCard> {
        let mut cards: Vec<ApprovalCard> = self
            .state()
            .parked
            .values()
            .map(|p| p.card.clone())
            .collect();
        cards.sort_by(|a, b| (a.parked_at_ms, &a.id).cmp(&(b.parked_at_ms, &b.id)));
        cards
    }

    /// Applies a decision; the parked request resumes (or fails) at once.
    pub fn decide(&self, id: &str, spec: &DecisionSpec) -> Result<ApprovalCard, DecideError> {
        let by = decided_by(spec.by.as_deref())?;
        let parked = {
            let mut state = self.state();
            let kind = state.parked.get(id).map(|p| p.card.kind);
            if kind == Some(CardKind::App) && spec.verdict == Verdict::ApproveAlways {
                return Err(DecideError::AlwaysForApp);
            }
            let parked = state
                .unpark(id)
                .ok_or_else(|| DecideError::NotFound(id.to_owned()))?;
            self.metrics.approvals_parked.dec();
            let card = &parked.card;
            match (spec.verdict, card.kind) {
                (Verdict::ApproveSession, CardKind::App) => {
                    state.grants.insert(Grant::of(card));
                }
                (Verdict::ApproveSession, CardKind::Network) => {
                    let key = (
                        card.sandbox.clone(),
                        card.session.clone(),
                        card.host.clone(),
                    );
                    state.destinations.insert(key);
                }
                _ => {}
            }
            parked
        };
        let waited = match spec.verdict {
            Verdict::Reject => Waited::Rejected { by },
            verdict => Waited::Approved { verdict, by },
        };
        // The request may have just expired; then its answer is already 403.
        let _ = parked.decide.send(waited);
        Ok(parked.card)
    }

    /// Marks a session as a task run whose requests to `apps` need no
    /// person for `ask` actions (replacing earlier pre-approvals); an empty
    /// list clears them.
    pub fn set_task(&self, sandbox: &str, session: &str, apps: &[String]) {
        let key = (sandbox.to_owned(), session.to_owned());
        let mut state = self.state();
        if apps.is_empty() {
            state.tasks.remove(&key);
        } else {
            state.tasks.insert(key, apps.iter().cloned().collect());
        }
    }

    /// A session went away: its grants, pre-approvals and parked requests
    /// go with it, so a new session reusing the id starts from nothing. A
    /// parked request must end here, not linger: deciding it later would
    /// grant the session that reuses the id.
    pub fn forget_session(&self, sandbox: &str, session: &str) {
        let ended = {
            let mut state = self.state();
            state
                .tasks
                .remove(&(sandbox.to_owned(), session.to_owned()));
            state
                .grants
                .retain(|g| !(g.sandbox == sandbox && g.session.as_deref() == Some(session)));
            state
                .destinations
                .retain(|(sb, ss, _)| !(sb == sandbox && ss.as_deref() == Some(session)));
            self.unpark_where(&mut state, |card| {
                card.sandbox == sandbox && card.session.as_deref() == Some(session)
            })
        };
        withdraw(ended, "session_removed");
    }

    /// A sandbox went away: every grant, task and parked request of it.
    pub fn forget_sandbox(&self, sandbox: &str) {
        let ended = {
            let mut state = self.state();
            state.tasks.retain(|(sb, _), _| sb != sandbox);
            state.grants.retain(|g| g.sandbox != sandbox);
            state.destinations.retain(|(sb, _, _)| sb != sandbox);
            self.unpark_where(&mut state, |card| card.sandbox == sandbox)
        };
        withdraw(ended, "sandbox_removed");
    }

    /// Takes the parked requests `owned` selects off the desk (under the
    /// same lock as the grants, so a racing `decide` either finds them and
    /// its grant is then forgotten, or finds nothing).
    fn unpark_where(
        &self,
        state: &mut State,
        owned: impl Fn(&ApprovalCard) -> bool,
    ) -> Vec<Parked> {
        let ids: Vec<String> = state
            .parked
            .iter()
            .filter(|(_, p)| owned(&p.card))
            .map(|(id, _)| id.clone())
            .collect();
        let ended: Vec<Parked> = ids.iter().filter_map(|id| state.unpark(id)).collect();
        for _ in &ended {
            self.metrics.approvals_parked.dec();
        }
        ended
    }
}

/// Who decided, as the audit log names them: `by` if printable and at
/// most [`MAX_BY_LEN`] long, `admin-api` when absent.
pub fn decided_by(by: Option<&str>) -> Result<String, DecideError> {
    match by {
        None => Ok("admin-api".to_owned()),
        Some(by)
            if !by.is_empty() && by.len() <= MAX_BY_LEN && !by.chars().any(char::is_control) =>
        {
            Ok(by.to_owned())
        }
        Some(_) => Err(DecideError::BadBy),
    }
}

/// Ends requests whose owner left: they fail closed, each audited by its
/// waiting task with `by` naming why.
fn withdraw(ended: Vec<Parked>, by: &str) {
    for parked in ended {
        // The waiting task may be gone already (its client left).
        let _ = parked.decide.send(Waited::Withdrawn { by: by.to_owned() });
    }
}

/// Removes a parked request whose wait ended any way other than a decision
/// (expiry, the client leaving), keeping the gauge exact.
struct Unpark<'a> {
    approvals: &'a Approvals,
    id: String,
}

impl Drop for Unpark<'_> {
    fn drop(&mut self) {
        if self.approvals.state().unpark(&self.id).is_some() {
            self.approvals.metrics.approvals_parked.dec();
        }
    }
}

/// Delivers a card to the webhook, retrying with exponential backoff while
/// the request is still parked. Each attempt first waits for a delivery
/// slot and checks the request is still parked: a card whose client went
/// away (or that was decided) before it was sent is never sent.
async fn notify(approvals: std::sync::Weak<Approvals>, webhook: Arc<Webhook>, card: ApprovalCard) {
    let body = match serde_json::to_vec(&card) {
        Ok(body) => body,
        Err(err) => {
            tracing::warn!(%err, "cannot encode an approval card");
            return;
        }
    };
    let mut backoff = webhook.initial_backoff();
    for attempt in 1..=webhook.attempts() {
        if attempt > 1 {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(webhook::MAX_BACKOFF);
        }
        let Ok(_slot) = webhook.in_flight.acquire().await else {
            return;
        };
        match approvals.upgrade() {
            Some(approvals) if approvals.is_parked(&card.id) => {}
            _ => return,
        }
        match webhook.post(&body).await {
            Ok(()) => return,
            Err(err) => {
                tracing::warn!(id = %card.id, attempt, %err, "approval webhook failed");
            }
        }
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
