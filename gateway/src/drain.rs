//! Graceful drain: the signal that the daemon is stopping, and the count of
//! connections still being served, so that SIGTERM can let in-flight work
//! finish up to a deadline and then say how much it had to cut.
//!
//! Connection handlers hold a [`Tracked`] guard for as long as they run;
//! intercepted HTTP connections also watch [`Drain::started`] to finish the
//! request in flight and then close instead of waiting for the next one.

use std::{sync::Arc, time::Duration};

use tokio::sync::watch;

/// Cheap to clone; every clone sees the same state.
#[derive(Clone)]
pub struct Drain {
    state: Arc<State>,
}

struct State {
    draining: watch::Sender<bool>,
    open: watch::Sender<usize>,
}

impl Default for Drain {
    fn default() -> Self {
        Drain::new()
    }
}

impl Drain {
    pub fn new() -> Drain {
        Drain {
            state: Arc::new(State {
                draining: watch::Sender::new(false),
                open: watch::Sender::new(0),
            }),
        }
    }

    /// Counts one connection until the guard is dropped.
    pub fn track(&self) -> Tracked {
        self.state.open.send_modify(|n| *n += 1);
        Tracked(self.state.clone())
    }

    /// Connections being served now.
    pub fn open(&self) -> usize {
        *self.state.open.borrow()
    }

    pub fn is_draining(&self) -> bool {
        *self.state.draining.borrow()
    }

    /// Starts the drain: everything waiting on [`Drain::started`] wakes.
    pub fn start(&self) {
        self.state.draining.send_replace(true);
    }

    /// Resolves once the drain has started (at once if it already has).
    pub async fn started(&self) {
        let mut draining = self.state.draining.subscribe();
        // The sender lives in `self`, so this cannot see a closed channel.
        let _ = draining.wait_for(|d| *d).await;
    }

    /// Waits until no connection is open or `deadline` has passed; returns
    /// how many connections are still open (the ones the caller will cut).
    pub async fn settle(&self, deadline: Duration) -> usize {
        let mut open = self.state.open.subscribe();
        let _ = tokio::time::timeout(deadline, open.wait_for(|n| *n == 0)).await;
        *open.borrow()
    }
}

/// One connection counted by [`Drain::track`].
pub struct Tracked(Arc<State>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.open.send_modify(|n| *n = n.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn settle_returns_at_once_when_nothing_is_open() {
        let drain = Drain::new();
        drain.start();
        let started = tokio::time::Instant::now();
        assert_eq!(drain.settle(Duration::from_secs(30)).await, 0);
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn settle_waits_for_the_last_connection() {
        let drain = Drain::new();
        let (first, second) = (drain.track(), drain.track());
        assert_eq!(drain.open(), 2);
        drain.start();
        drop(first);
        let closer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            drop(second);
        });
        let started = tokio::time::Instant::now();
        assert_eq!(drain.settle(Duration::from_secs(30)).await, 0);
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        closer.await.expect("closer");
    }

    #[tokio::test(start_paused = true)]
    async fn settle_reports_what_the_deadline_cuts() {
        let drain = Drain::new();
        let _stuck = [drain.track(), drain.track()];
        drain.start();
        let started = tokio::time::Instant::now();
        assert_eq!(drain.settle(Duration::from_secs(3)).await, 2);
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test]
    async fn started_wakes_waiters_and_later_callers() {
        let drain = Drain::new();
        assert!(!drain.is_draining());
        let waiter = tokio::spawn({
            let drain = drain.clone();
            async move { drain.started().await }
        });
        drain.start();
        waiter.await.expect("woken");
        assert!(drain.is_draining());
        drain.started().await;
    }
}
