//! Who is talking, and where to: for each accepted connection, the original
//! destination and the sandbox identity that the eBPF programs recorded.
//!
//! The source sits behind a trait so the proxy can be tested in-process with
//! a mock; in production it is the eBPF connection map (`ebpf`).

pub mod ebpf;
mod handles;
pub mod relay;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use gateway_common::{
    ConnKey, OrigDst, ProcessId,
    sock::{AF_INET, AF_INET6},
};

/// What the kernel recorded for one steered connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Steered {
    /// Where the sandbox asked to connect (IPv4-mapped addresses canonicalized).
    pub dst: SocketAddr,
    /// cgroup id of the nearest registered ancestor (sandbox or session).
    pub identity: u64,
    /// The process that called `connect()`.
    pub process: ProcessId,
}

/// Looks up (and forgets) the record of an accepted connection.
pub trait OrigDstSource: Send + Sync + 'static {
    /// `netns` is the cookie of the namespace the listener lives in, `peer`
    /// the client's address as `accept()` returned it.
    fn take(&self, netns: u64, peer: SocketAddr) -> Option<Steered>;
}

/// The key under which `sockops` published a connection (see gateway-common).
pub fn conn_key(netns: u64, peer: SocketAddr) -> ConnKey {
    let (addr, family) = match peer.ip() {
        IpAddr::V4(ip) => ([u32::from_ne_bytes(ip.octets()), 0, 0, 0], AF_INET),
        IpAddr::V6(ip) => (words(ip), AF_INET6),
    };
    ConnKey {
        netns,
        addr,
        port: peer.port(),
        family: family as u16,
        _pad: 0,
    }
}

/// The kernel's record turned back into an address.
pub fn steered(orig: &OrigDst) -> Steered {
    let ip = if u32::from(orig.family) == AF_INET {
        IpAddr::V4(Ipv4Addr::from(orig.addr[0].to_ne_bytes()))
    } else {
        let mut octets = [0u8; 16];
        for (chunk, word) in octets.chunks_exact_mut(4).zip(orig.addr) {
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        Ipv6Addr::from(octets).to_canonical()
    };
    Steered {
        dst: SocketAddr::new(ip, orig.port),
        identity: orig.identity,
        process: orig.process,
    }
}

/// An IPv6 address as the kernel stores it: four network-order words.
pub fn words(ip: Ipv6Addr) -> [u32; 4] {
    let o = ip.octets();
    std::array::from_fn(|i| {
        u32::from_ne_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]])
    })
}

/// An in-memory source for in-process tests.
#[cfg(any(test, feature = "testing"))]
#[derive(Default)]
pub struct MockOrigDst {
    entries: std::sync::Mutex<std::collections::HashMap<(u64, SocketAddr), Steered>>,
}

#[cfg(any(test, feature = "testing"))]
impl MockOrigDst {
    pub fn insert(&self, netns: u64, peer: SocketAddr, steered: Steered) {
        self.entries
            .lock()
            .expect("mock lock")
            .insert((netns, peer), steered);
    }
}

#[cfg(any(test, feature = "testing"))]
impl OrigDstSource for MockOrigDst {
    fn take(&self, netns: u64, peer: SocketAddr) -> Option<Steered> {
        self.entries
            .lock()
            .expect("mock lock")
            .remove(&(netns, peer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn orig(addr: [u32; 4], port: u16, family: u32) -> OrigDst {
        OrigDst {
            addr,
            port,
            family: family as u16,
            via_port: 0,
            _pad: 0,
            identity: 7,
            netns: 1,
            process: ProcessId::default(),
        }
    }

    #[test]
    fn kernel_records_become_socket_addrs() {
        let v4 = u32::from_ne_bytes([10, 1, 2, 3]);
        let mapped = words("::ffff:10.1.2.3".parse().expect("v6"));
        let v6 = words("2001:db8::1".parse().expect("v6"));
        let cases = [
            (orig([v4, 0, 0, 0], 443, AF_INET), "10.1.2.3:443"),
            (orig(mapped, 80, AF_INET6), "10.1.2.3:80"),
            (orig(v6, 8443, AF_INET6), "[2001:db8::1]:8443"),
        ];
        for (record, want) in cases {
            assert_eq!(
                steered(&record).dst,
                want.parse::<SocketAddr>().expect("addr")
            );
            assert_eq!(steered(&record).identity, 7);
        }
    }

    #[test]
    fn keys_include_namespace_family_and_port() {
        let a = conn_key(1, "127.0.0.1:40000".parse().expect("addr"));
        let b = conn_key(2, "127.0.0.1:40000".parse().expect("addr"));
        assert_ne!(a, b, "same tuple in two namespaces must not collide");
        assert_eq!(a.addr[0], u32::from_ne_bytes([127, 0, 0, 1]));
        assert_eq!(a.port, 40000);
        assert_eq!(u32::from(a.family), AF_INET);
        let c = conn_key(1, "[::1]:40000".parse().expect("addr"));
        assert_eq!(u32::from(c.family), AF_INET6);
        assert_eq!(c.addr, words(Ipv6Addr::LOCALHOST));
    }
}
