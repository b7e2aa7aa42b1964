//! The daemon's side of sandbox overlays (`policy::overlay`): changes
//! from the admin API and from a network approval's "always", each
//! checked against the sandbox's policy, saved before it applies, and
//! audited (`overlay` events naming who made it).

use std::collections::BTreeMap;

use super::Daemon;
use crate::{
    admin::api::{AdminError, OverlayChange},
    approvals::{ApprovalCard, CardKind, DecideError, DecisionSpec, Verdict, decided_by, now_ms},
    audit::Event,
    policy::overlay::{Entry, OverlayError},
};

impl Daemon {
    pub(super) fn overlay_list(&self) -> BTreeMap<String, Vec<Entry>> {
        self.directory.overlays.list()
    }

    /// Adds or removes one entry of `sandbox`'s overlay.
    pub(super) fn overlay_change(
        &self,
        sandbox: &str,
        change: OverlayChange,
    ) -> Result<Vec<Entry>, AdminError> {
        let by = checked_by(change.by.as_deref())?;
        match (change.add_allow, change.remove) {
            (Some(target), None) => self.overlay_add(sandbox, &target, &by)?,
            (None, Some(target)) => {
                let removed = self
                    .directory
                    .overlays
                    .remove(sandbox, &target)
                    .map_err(admin_error)?;
                self.audit_overlay("remove", sandbox, &removed.target, &by);
                // What the entry admitted closes, as after a policy edit.
                self.directory.changed();
            }
            _ => {
                return Err(AdminError::Invalid(
                    "give exactly one of `add_allow` and `remove`".to_owned(),
                ));
            }
        }
        Ok(self.directory.overlays.entries(sandbox))
    }

    /// Decides a parked request; a network card approved `always` first
    /// has its destination written into the sandbox's overlay, so the
    /// decision never outruns what it promised to keep.
    pub(super) fn decide_parked(
        &self,
        id: &str,
        spec: &DecisionSpec,
    ) -> Result<ApprovalCard, AdminError> {
        if spec.verdict == Verdict::ApproveAlways {
            let card = self.approvals.card(id);
            if let Some(card) = card.filter(|card| card.kind == CardKind::Network) {
                let by = checked_by(spec.by.as_deref())?;
                let target = match card.port {
                    Some(port) if card.host.contains(':') => format!("[{}]:{port}", card.host),
                    Some(port) => format!("{}:{port}", card.host),
                    None => card.host.clone(),
                };
                self.overlay_add(&card.sandbox, &target, &by)?;
            }
        }
        self.approvals.decide(id, spec).map_err(|err| match err {
            DecideError::NotFound(_) => AdminError::NotFound(err.to_string()),
            DecideError::BadBy | DecideError::AlwaysForApp => AdminError::Invalid(err.to_string()),
        })
    }

    fn overlay_add(&self, sandbox: &str, target: &str, by: &str) -> Result<(), AdminError> {
        let policy = {
            let registry = self.read_registry();
            let registered = registry
                .get(sandbox)
                .ok_or_else(|| AdminError::NotFound(format!("no sandbox `{sandbox}`")))?;
            self.directory
                .store
                .current()
                .get(&registered.policy)
                .cloned()
        };
        let policy = policy.ok_or_else(|| {
            AdminError::Internal(format!("the policy of sandbox `{sandbox}` is not loaded"))
        })?;
        let entry = Entry {
            target: target.to_owned(),
            by: by.to_owned(),
            added_at_ms: now_ms(),
        };
        let added = self
            .directory
            .overlays
            .add(sandbox, entry, &policy)
            .map_err(admin_error)?;
        if added {
            self.audit_overlay("add", sandbox, target, by);
        }
        Ok(())
    }

    /// A sandbox removed takes its overlay with it; a failure to save that
    /// is logged (the entries only allow, and a sandbox registered again
    /// under the id would find them: `sluice policy overlay rm` clears them).
    pub(super) fn forget_overlay(&self, sandbox: &str) {
        if let Err(err) = self.directory.overlays.forget(sandbox) {
            tracing::error!(sandbox, %err, "cannot drop the removed sandbox's overlay");
        }
    }

    fn audit_overlay(&self, verdict: &str, sandbox: &str, target: &str, by: &str) {
        self.audit.record(&Event {
            event: "overlay",
            verdict,
            reason: "allow_out",
            rule: Some(target),
            sandbox: Some(sandbox),
            by: Some(by),
            ..Event::default()
        });
    }
}

/// `by` as the approvals desk takes it ([`decided_by`]).
fn checked_by(by: Option<&str>) -> Result<String, AdminError> {
    decided_by(by).map_err(|err| AdminError::Invalid(err.to_string()))
}

fn admin_error(err: OverlayError) -> AdminError {
    match err {
        OverlayError::NotFound { .. } => AdminError::NotFound(err.to_string()),
        OverlayError::Invalid(_) | OverlayError::Full(_) => AdminError::Invalid(err.to_string()),
        OverlayError::Save { .. } => AdminError::Internal(err.to_string()),
    }
}
