//! The audit log: one JSON line per security decision, to stdout or a file.
//!
//! Events carry sandbox ids, destinations and the rule that decided; never a
//! secret or a payload byte. Every event is also counted
//! (`sluice_audit_events_total`), and the last few refusals are kept in
//! memory for `sluice status`.

use std::{
    collections::VecDeque,
    fs::OpenOptions,
    io::Write,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use serde::Serialize;

use crate::{admin::api::RecentRefusal, metrics::Metrics, process::Process};

/// Refusals kept for `sluice status`.
pub const RECENT_REFUSALS: usize = 32;

/// Events of one kind are audited at most this often where they can come
/// in floods ([`Fold`]).
pub const FOLD_EVERY: Duration = Duration::from_secs(1);

/// One kind of event audited at most once a [`FOLD_EVERY`], each event
/// saying how many of its kind were folded into it since the one before.
#[derive(Debug, Default)]
pub struct Fold {
    last: Option<Instant>,
    folded: u64,
}

impl Fold {
    /// `Some(folded)`: audit this one, standing for `folded` more; `None`:
    /// fold it into the next.
    pub fn admit(&mut self, now: Instant) -> Option<u64> {
        if !self.quiet_at(now) {
            self.folded += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.folded))
    }

    /// Whether an event of this kind would be audited at `now`.
    pub fn quiet_at(&self, now: Instant) -> bool {
        self.last
            .is_none_or(|last| now.duration_since(last) >= FOLD_EVERY)
    }

    /// How many were folded since the last event.
    pub fn folded(&self) -> u64 {
        self.folded
    }
}

/// One audit event. Optional fields are omitted when empty.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Event<'a> {
    /// `connection`, `kernel_refusal`, `dns`, `registration`, `approval`,
    /// `explicit_proxy`, `redirect`, and the refusals' own
    /// (`intercept::refusal::Refusal`).
    pub event: &'a str,
    /// `allow` or `deny` (or `add`/`remove` for registrations).
    pub verdict: &'a str,
    /// Why: a stable machine-readable reason.
    pub reason: &'a str,
    /// The rule that decided, where one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Who decided, for decisions a person (or expiry) made: approvals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<&'a str>,
    /// The program behind the connection, where the kernel saw it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<&'a Process>,
}

enum Sink {
    Stdout,
    File(std::fs::File),
}

/// The sink, and the events it could not write since the loss was last
/// logged.
struct Writer {
    sink: Sink,
    lost: Fold,
}

/// Writes audit events; cheap to clone.
#[derive(Clone)]
pub struct Audit {
    writer: Arc<Mutex<Writer>>,
    metrics: Arc<Metrics>,
    /// The newest refusals, oldest first.
    recent: Arc<Mutex<VecDeque<RecentRefusal>>>,
}

impl Audit {
    /// `target` is `stdout` or a file path (created, appended to).
    pub fn open(target: &str, metrics: Arc<Metrics>) -> std::io::Result<Audit> {
        let sink = if target == "stdout" {
            Sink::Stdout
        } else {
            Sink::File(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(PathBuf::from(target))?,
            )
        };
        Ok(Audit {
            writer: Arc::new(Mutex::new(Writer {
                sink,
                lost: Fold::default(),
            })),
            metrics,
            recent: Arc::new(Mutex::new(VecDeque::with_capacity(RECENT_REFUSALS))),
        })
    }

    /// Writes one event as one line, with a timestamp in milliseconds.
    pub fn record(&self, event: &Event<'_>) {
        #[derive(Serialize)]
        struct Line<'a> {
            ts_ms: u128,
            #[serde(flatten)]
            event: &'a Event<'a>,
        }
        let ts_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        self.count(event, ts_ms);
        let mut line = match serde_json::to_vec(&Line { ts_ms, event }) {
            Ok(line) => line,
            Err(_) => {
                self.metrics.audit_errors.inc();
                return;
            }
        };
        line.push(b'\n');
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let written = match &mut writer.sink {
            Sink::Stdout => std::io::stdout().lock().write_all(&line),
            Sink::File(file) => file.write_all(&line),
        };
        // A lost event never changes the decision it records (that is
        // made and enforced already); it is counted, and logged at most
        // once a second with how many more were lost meanwhile.
        if let Err(err) = written {
            self.metrics.audit_errors.inc();
            if let Some(also_lost) = writer.lost.admit(Instant::now()) {
                tracing::error!(
                    %err,
                    also_lost,
                    event = event.event,
                    "audit event not written (sluice_audit_errors_total counts every one)"
                );
            }
        }
    }
}

impl Audit {
    /// Counts the event and remembers it when it is a refusal.
    fn count(&self, event: &Event<'_>, ts_ms: u128) {
        self.metrics
            .audit_events
            .with_label_values(&[
                event.event,
                event.verdict,
                event.reason,
                event.sandbox.unwrap_or(""),
            ])
            .inc();
        if event.verdict != "deny" {
            return;
        }
        let refusal = RecentRefusal {
            ts_ms: u64::try_from(ts_ms).unwrap_or(u64::MAX),
            event: event.event.to_owned(),
            reason: event.reason.to_owned(),
            rule: event.rule.map(str::to_owned),
            sandbox: event.sandbox.map(str::to_owned),
            dst: event.dst.clone(),
            name: event.sni.or(event.host).map(str::to_owned),
        };
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() == RECENT_REFUSALS {
            recent.pop_front();
        }
        recent.push_back(refusal);
    }

    /// The newest refusals, newest first.
    pub fn recent_refusals(&self) -> Vec<RecentRefusal> {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent.iter().rev().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fold_audits_one_event_a_second() {
        let mut fold = Fold::default();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // (ms, audited standing for this many more, or folded)
        let steps = [
            (0, Some(0)),
            (10, None),
            (999, None),
            (1000, Some(2)),
            (1500, None),
        ];
        for (ms, want) in steps {
            assert_eq!(fold.admit(at(ms)), want, "{ms} ms");
        }
    }

    /// A full disk (here `/dev/full`): every event is lost, and counted.
    #[test]
    fn events_that_cannot_be_written_are_counted() {
        let metrics = Arc::new(Metrics::new());
        let audit = Audit::open("/dev/full", metrics.clone()).expect("open");
        for _ in 0..3 {
            audit.record(&Event {
                event: "connection",
                verdict: "deny",
                reason: "denied_by_rule",
                ..Event::default()
            });
        }
        assert_eq!(metrics.audit_errors.get(), 3);
        // Still counted as events, and the refusals still kept for status.
        assert_eq!(audit.recent_refusals().len(), 3);
    }

    #[test]
    fn refusals_are_counted_and_the_newest_kept() {
        let metrics = Arc::new(Metrics::new());
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.jsonl");
        let audit = Audit::open(path.to_str().expect("utf-8"), metrics.clone()).expect("open");
        audit.record(&Event {
            event: "connection",
            verdict: "allow",
            reason: "rule_matched",
            sandbox: Some("sb1"),
            ..Event::default()
        });
        for i in 0..RECENT_REFUSALS + 3 {
            audit.record(&Event {
                event: "connection",
                verdict: "deny",
                reason: "no_rule",
                sandbox: Some("sb1"),
                dst: Some(format!("192.0.2.1:{i}")),
                ..Event::default()
            });
        }
        let recent = audit.recent_refusals();
        assert_eq!(
            recent.len(),
            RECENT_REFUSALS,
            "allowed events are not refusals"
        );
        let newest = format!("192.0.2.1:{}", RECENT_REFUSALS + 2);
        assert_eq!(recent[0].dst.as_deref(), Some(newest.as_str()));
        let denied = metrics
            .audit_events
            .with_label_values(&["connection", "deny", "no_rule", "sb1"])
            .get();
        assert_eq!(denied, (RECENT_REFUSALS + 3) as u64);
    }
}
