//! Kept-alive HTTP/1.1 connections to the published apps, so a viewer's
//! requests do not each pay a dial inside the sandbox's namespace (a
//! blocking thread entering it) and a handshake. Keyed by where the app is
//! dialled (its namespace and port): connections never cross apps.
//! A connection is taken only when ready for a request (the previous
//! answer's body read to its end) and still open; one that was upgraded
//! (WebSocket) is never given back.

use std::{collections::HashMap, path::PathBuf, sync::Mutex};

use hyper::{body::Incoming, client::conn::http1::SendRequest};

/// Idle connections kept per app: enough for a browser's parallel
/// requests, few enough that an app cannot be made to hold many.
const MAX_IDLE: usize = 16;

/// Where an app is dialled: its sandbox's namespace (`None`: the host's)
/// and port.
pub type AppKey = (Option<PathBuf>, u16);

#[derive(Default)]
pub struct AppConns {
    idle: Mutex<HashMap<AppKey, Vec<SendRequest<Incoming>>>>,
}

impl AppConns {
    /// A connection to `key` ready for a request, if one is kept; closed
    /// ones found on the way are dropped.
    pub fn take(&self, key: &AppKey) -> Option<SendRequest<Incoming>> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let kept = idle.get_mut(key)?;
        kept.retain(|sender| !sender.is_closed());
        let ready = kept.iter().position(SendRequest::is_ready);
        let taken = ready.map(|at| kept.swap_remove(at));
        if kept.is_empty() {
            idle.remove(key);
        }
        taken
    }

    /// Keeps `sender` for `key`'s next requests; past `MAX_IDLE` it is
    /// dropped (its connection closes once its answer is done).
    pub fn give(&self, key: AppKey, sender: SendRequest<Incoming>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let kept = idle.entry(key).or_default();
        kept.retain(|sender| !sender.is_closed());
        if kept.len() < MAX_IDLE {
            kept.push(sender);
        }
    }
}
