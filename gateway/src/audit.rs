//! The audit log: one JSON line per security decision, to stdout or a file.
//!
//! Events carry sandbox ids, destinations and the rule that decided; never a
//! secret or a payload byte.

use std::{
    fs::OpenOptions,
    io::Write,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{SystemTime, UNIX_EPOCH},
};

use serde::Serialize;

use crate::metrics::Metrics;

/// One audit event. Optional fields are omitted when empty.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Event<'a> {
    /// `connection`, `kernel_refusal`, `dns`, `registration`.
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
}

enum Sink {
    Stdout,
    File(std::fs::File),
}

/// Writes audit events; cheap to clone.
#[derive(Clone)]
pub struct Audit {
    sink: Arc<Mutex<Sink>>,
    metrics: Arc<Metrics>,
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
            sink: Arc::new(Mutex::new(sink)),
            metrics,
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
        let mut line = match serde_json::to_vec(&Line { ts_ms, event }) {
            Ok(line) => line,
            Err(_) => {
                self.metrics.audit_errors.inc();
                return;
            }
        };
        line.push(b'\n');
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        let written = match &mut *sink {
            Sink::Stdout => std::io::stdout().lock().write_all(&line),
            Sink::File(file) => file.write_all(&line),
        };
        if written.is_err() {
            self.metrics.audit_errors.inc();
        }
    }
}
