//! How many connections each sandbox has open through the steering
//! listeners and the explicit proxy, so one sandbox cannot take every socket and buffer the daemon
//! has from the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Open connections per sandbox, each at most `max`. Clones share the
/// counts (the steering listeners and the explicit proxy count together).
#[derive(Clone)]
pub struct Quota {
    max: usize,
    open: Arc<Mutex<HashMap<Arc<str>, usize>>>,
}

/// One connection's place in its sandbox's count, given back on drop.
pub struct Slot {
    sandbox: Arc<str>,
    open: Arc<Mutex<HashMap<Arc<str>, usize>>>,
}

impl Quota {
    pub fn new(max: usize) -> Quota {
        Quota {
            max,
            open: Arc::default(),
        }
    }

    /// A place for one more connection of `sandbox`, or `None` when it
    /// has `max` open already.
    pub fn take(&self, sandbox: &Arc<str>) -> Option<Slot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(sandbox.clone()).or_insert(0);
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(Slot {
            sandbox: sandbox.clone(),
            open: self.open.clone(),
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.sandbox) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.sandbox);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sandbox_has_its_own_count_and_slots_come_back() {
        let quota = Quota::new(2);
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("b"));
        let first = quota.take(&a).expect("1 of 2");
        let _second = quota.take(&a).expect("2 of 2");
        assert!(quota.take(&a).is_none(), "a is full");
        let _other = quota.take(&b).expect("b is not");
        drop(first);
        assert!(quota.take(&a).is_some(), "a slot came back");
        drop(_other);
        assert!(
            !quota.open.lock().expect("lock").contains_key(&b),
            "no entry left for b"
        );
    }
}
