//! Network namespaces created for one test (`ip netns add`), with only `lo`
//! (up); deleted on drop.

use std::path::PathBuf;

use crate::{WAIT, run, unique_name};

/// A named network namespace at /run/netns/NAME.
#[derive(Debug)]
pub struct TestNetns {
    name: String,
}

impl TestNetns {
    /// Creates the namespace and brings `lo` up; nothing else is in it.
    pub fn new() -> TestNetns {
        let name = unique_name("sluice-t");
        let out = run::host(&["ip", "netns", "add", &name], WAIT);
        assert!(out.success(), "ip netns add {name}:\n{out}");
        let netns = TestNetns { name };
        let out = run::host(&["ip", "-n", &netns.name, "link", "set", "lo", "up"], WAIT);
        assert!(out.success(), "bring lo up in {}:\n{out}", netns.name);
        netns
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// /run/netns/NAME, what `nsenter --net=` and the daemon's `netns` take.
    pub fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.name)
    }
}

impl Default for TestNetns {
    fn default() -> Self {
        TestNetns::new()
    }
}

impl Drop for TestNetns {
    fn drop(&mut self) {
        let out = run::host(&["ip", "netns", "del", &self.name], WAIT);
        if !out.success() {
            eprintln!("warning: ip netns del {}:\n{out}", self.name);
        }
    }
}
