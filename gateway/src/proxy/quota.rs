//! How many connections each sandbox has open through the steering
//! listeners and the explicit proxy (and, there, how many each source
//! address holds before showing a token), so one sandbox cannot take every socket and buffer the daemon
//! has from the others.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

type Counts<K> = Arc<Mutex<HashMap<K, usize>>>;

/// Open connections per key (a sandbox, or a source address), each at
/// most `max`. Clones share the counts (the steering listeners and the
/// explicit proxy count a sandbox's connections together).
#[derive(Clone)]
pub struct Quota<K = Arc<str>> {
    max: usize,
    open: Counts<K>,
}

/// One connection's place in its key's count, given back on drop.
pub struct Slot<K: Hash + Eq = Arc<str>> {
    key: K,
    open: Counts<K>,
}

impl<K: Hash + Eq + Clone> Quota<K> {
    pub fn new(max: usize) -> Quota<K> {
        Quota {
            max,
            open: Arc::default(),
        }
    }

    /// A place for one more connection of `key`, or `None` when it has
    /// `max` open already.
    pub fn take(&self, key: &K) -> Option<Slot<K>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(key.clone()).or_insert(0);
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(Slot {
            key: key.clone(),
            open: self.open.clone(),
        })
    }
}

impl<K: Hash + Eq> Drop for Slot<K> {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sandbox_has_its_own_count_and_slots_come_back() {
        let quota: Quota = Quota::new(2);
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
