//! Types and names shared by Sluice's eBPF programs (`gateway-ebpf`) and its
//! daemon (`gateway`).
//!
//! Every map value is `#[repr(C)]`, has explicit padding and no `bool`, so the
//! kernel and the daemon agree on the layout byte for byte; the sizes are
//! asserted at compile time. The daemon enables the `user` feature to get the
//! `aya::Pod` impls. Addresses are stored as the kernel hands them over:
//! IPv4 as one network-order `u32` in `addr[0]`, IPv6 as four network-order
//! words. Ports are stored in host order.
#![no_std]

/// Bumped whenever a map's key or value layout changes. Maps are pinned under
/// `maps-v{LAYOUT_VERSION}`, so a new build never reads an old build's maps
/// with the wrong layout (or size: 3 added a [`Refusal`], a counter slot;
/// 4 added the process to [`OrigDst`] and [`RefusalEvent`]).
pub const LAYOUT_VERSION: u32 = 4;

/// Names of the maps, as the eBPF object declares them and the daemon opens them.
pub mod maps {
    /// cgroup id → [`super::Registration`]: registered sandboxes and sessions.
    pub const IDENTITY: &str = "SLUICE_IDENTITY";
    /// network-namespace cookie → [`super::Listener`]: where to steer sockets.
    pub const LISTENERS: &str = "SLUICE_LISTENERS";
    /// index 0 → [`super::SteerConfig`].
    pub const CONFIG: &str = "SLUICE_CONFIG";
    /// socket cookie → [`super::OrigDst`]: recorded by `connect4|6`, moved to
    /// `CONNS` by `sockops` once the source port is known.
    pub const PENDING: &str = "SLUICE_PENDING";
    /// [`super::ConnKey`] → [`super::OrigDst`]: read (and deleted) by the daemon
    /// on accept.
    pub const CONNS: &str = "SLUICE_CONNS";
    /// [`super::ConnKey`] of a UDP socket → [`super::OrigDst`]: the DNS server
    /// the sandbox asked, restored as the reply's source by `recvmsg4|6`.
    pub const DNS_ORIG: &str = "SLUICE_DNS_ORIG";
    /// Per-CPU refusal counters indexed by [`super::Refusal`].
    pub const REFUSALS: &str = "SLUICE_REFUSALS";
    /// Ring buffer of [`super::RefusalEvent`]s for the audit log.
    pub const EVENTS: &str = "SLUICE_EVENTS";
    /// socket cookie → socket: both ends of each connection relayed in the
    /// kernel (a sockhash; `RELAY_VERDICT` is attached to it).
    pub const RELAY_SOCKS: &str = "SLUICE_RELAY_SOCKS";
    /// socket cookie → [`super::RelayPeer`]: where that socket's bytes go,
    /// and its slot in `RELAY_STATE`.
    pub const RELAY_PEERS: &str = "SLUICE_RELAY_PEERS";
    /// slot → [`super::RelaySlot`]: whether a relayed socket's bytes are
    /// held for the daemon or redirected, and how many were redirected.
    /// An array created `BPF_F_MMAPABLE`: the daemon maps it and works on
    /// the words with atomics, as the program does.
    pub const RELAY_STATE: &str = "SLUICE_RELAY_STATE";
}

/// Names of the programs (the function names in `gateway-ebpf`).
pub mod programs {
    pub const CONNECT4: &str = "sluice_connect4";
    pub const CONNECT6: &str = "sluice_connect6";
    pub const SENDMSG4: &str = "sluice_sendmsg4";
    pub const SENDMSG6: &str = "sluice_sendmsg6";
    pub const RECVMSG4: &str = "sluice_recvmsg4";
    pub const RECVMSG6: &str = "sluice_recvmsg6";
    pub const SOCK_CREATE: &str = "sluice_sock_create";
    pub const SOCKOPS: &str = "sluice_sockops";
    pub const POST_BIND4: &str = "sluice_post_bind4";
    pub const POST_BIND6: &str = "sluice_post_bind6";
    /// cgroup BPF LSM on `socket_create`; attached only where the kernel runs
    /// the BPF LSM (`bpf` in /sys/kernel/security/lsm).
    pub const SOCKET_CREATE_LSM: &str = "sluice_socket_create";
    /// `sk_skb/stream_verdict` on [`super::maps::RELAY_SOCKS`]: each
    /// segment a relayed socket receives goes out of its peer socket.
    pub const RELAY_VERDICT: &str = "sluice_relay_verdict";
}

/// Map capacities.
pub mod capacity {
    pub const IDENTITY: u32 = 65_536;
    pub const LISTENERS: u32 = 16_384;
    /// Connections between `connect()` and the daemon's `accept()`; LRU, so an
    /// abandoned entry ages out instead of filling the map.
    pub const CONNS: u32 = 262_144;
    pub const DNS_ORIG: u32 = 65_536;
    pub const EVENTS_BYTES: u32 = 256 * 1024;
    /// Sockets relayed in the kernel at once (two per connection); past it
    /// a connection is relayed in user space.
    pub const RELAY_SOCKS: u32 = 131_072;
    /// Slots of `RELAY_STATE`: one a relayed socket.
    pub const RELAY_SLOTS: u32 = RELAY_SOCKS;
}

/// Deepest cgroup below the sandbox root that still resolves to a registered
/// ancestor. Deeper cgroups are refused (fail closed).
pub const MAX_CGROUP_DEPTH: u32 = 16;

/// Socket constants from the kernel's UAPI, named so the programs read plainly.
pub mod sock {
    pub const AF_INET: u32 = 2;
    pub const AF_INET6: u32 = 10;
    pub const AF_PACKET: u32 = 17;
    pub const SOCK_STREAM: u32 = 1;
    pub const SOCK_DGRAM: u32 = 2;
    pub const SOCK_RAW: u32 = 3;
    pub const IPPROTO_ICMP: u32 = 1;
    pub const IPPROTO_TCP: u32 = 6;
    pub const IPPROTO_UDP: u32 = 17;
    pub const IPPROTO_ICMPV6: u32 = 58;
    pub const DNS_PORT: u16 = 53;
}

/// What a registered cgroup is.
pub mod kind {
    pub const SANDBOX: u32 = 1;
    pub const SESSION: u32 = 2;
}

/// Value of the identity map.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration {
    /// [`kind::SANDBOX`] or [`kind::SESSION`].
    pub kind: u32,
    /// The sandbox's own DNS listener port (host order) in its namespace:
    /// one listener per sandbox, so the daemon knows who asked by the socket
    /// the query arrived on. 0: none yet, DNS is refused.
    pub dns_port: u16,
    pub _pad: u16,
}

/// Where Sluice listens inside one network namespace.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listener {
    /// IPv4 listener address, network order (127.0.0.1).
    pub addr4: u32,
    /// IPv6 listener address, network-order words (::1).
    pub addr6: [u32; 4],
    /// TCP listener port (host order), for both families.
    pub tcp_port: u16,
    pub _pad: u16,
}

/// Global settings, index 0 of the config array.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SteerConfig {
    /// Level of the sandbox root cgroup in the cgroup2 hierarchy (root = 0).
    pub root_level: u32,
    pub _pad: u32,
}

/// A destination the sandbox asked for, and who asked.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrigDst {
    pub addr: [u32; 4],
    pub port: u16,
    /// [`sock::AF_INET`] or [`sock::AF_INET6`] (as u16).
    pub family: u16,
    /// For DNS records: the sandbox DNS listener port the datagram was sent
    /// to, so `recvmsg` knows which replies to rewrite. 0 for TCP.
    pub via_port: u16,
    pub _pad: u16,
    /// cgroup id of the nearest registered ancestor: the sandbox or session.
    pub identity: u64,
    /// Network-namespace cookie of the socket.
    pub netns: u64,
    /// The process that made the call: its thread-group id as the host's
    /// pid namespace numbers it, and its `comm` (NUL-padded; the process
    /// can rename itself, so it names, never decides).
    pub process: ProcessId,
}

/// Which process made a socket call, as the kernel knew it at the call.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessId {
    /// 0 where unknown.
    pub tgid: u32,
    /// The calling thread (the kernel's pid), whose name `comm` is.
    pub tid: u32,
    pub comm: [u8; 16],
}

/// Identifies a steered connection as the daemon sees it on accept: the
/// client's address and port inside a given network namespace. The namespace
/// is part of the key because 4-tuples repeat across sandbox namespaces.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnKey {
    pub netns: u64,
    pub addr: [u32; 4],
    pub port: u16,
    pub family: u16,
    pub _pad: u32,
}

/// Why a program refused a socket operation; indexes [`maps::REFUSALS`].
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The cgroup has no registered ancestor below the sandbox root.
    Unregistered = 0,
    /// No Sluice listener is known in the socket's network namespace.
    NoListener = 1,
    /// UDP to a port other than 53 (QUIC included).
    UdpNotDns = 2,
    /// A transport other than TCP and UDP.
    Protocol = 3,
    /// A raw, packet or ICMP socket.
    RawSocket = 4,
    /// The connection table was full.
    MapFull = 5,
    /// A TCP bind to the port of the namespace's Sluice listener.
    ListenerPort = 6,
}

impl Refusal {
    pub const COUNT: u32 = 7;
    pub const ALL: [Refusal; Self::COUNT as usize] = [
        Refusal::Unregistered,
        Refusal::NoListener,
        Refusal::UdpNotDns,
        Refusal::Protocol,
        Refusal::RawSocket,
        Refusal::MapFull,
        Refusal::ListenerPort,
    ];

    /// The label used in metrics and audit events.
    pub const fn as_str(self) -> &'static str {
        match self {
            Refusal::Unregistered => "unregistered_cgroup",
            Refusal::NoListener => "no_listener",
            Refusal::UdpNotDns => "udp_not_dns",
            Refusal::Protocol => "protocol",
            Refusal::RawSocket => "raw_socket",
            Refusal::MapFull => "map_full",
            Refusal::ListenerPort => "listener_port",
        }
    }
}

/// One refusal, sent to the daemon through the ring buffer for the audit log.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefusalEvent {
    /// The calling process's cgroup id.
    pub cgroup: u64,
    /// The address refused: where the socket was going, or for
    /// [`Refusal::ListenerPort`] the address it bound.
    pub addr: [u32; 4],
    pub port: u16,
    pub family: u16,
    /// A [`Refusal`] as u32.
    pub reason: u32,
    /// Socket type and protocol, for raw-socket refusals.
    pub sock_type: u32,
    pub protocol: u32,
    pub process: ProcessId,
}

/// Value of the relay peers map.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RelayPeer {
    /// The peer socket's cookie: the key to redirect to.
    pub peer: u64,
    /// This socket's slot in the relay state map.
    pub slot: u32,
    pub _pad: u32,
}

/// One relayed socket's words in the relay state map. Both sides change
/// them with atomic instructions only.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RelaySlot {
    /// 0: what the socket receives is redirected to its peer. Otherwise
    /// [`RELAY_HOLD`] plus every byte the program passed to the socket's
    /// own queue (for the daemon to read) since the daemon set it.
    pub state: u64,
    /// Bytes the socket received and the program redirected to its peer.
    pub redirected: u64,
}

/// The state of a slot whose socket's bytes are held for the daemon: its
/// bit is never reached by the passed bytes added below it.
pub const RELAY_HOLD: u64 = 1 << 63;

const _: () = {
    assert!(core::mem::size_of::<Registration>() == 8);
    assert!(core::mem::size_of::<Listener>() == 24);
    assert!(core::mem::size_of::<SteerConfig>() == 8);
    assert!(core::mem::size_of::<ProcessId>() == 24);
    assert!(core::mem::size_of::<OrigDst>() == 64);
    assert!(core::mem::size_of::<ConnKey>() == 32);
    assert!(core::mem::size_of::<RefusalEvent>() == 64);
    assert!(core::mem::size_of::<RelayPeer>() == 16);
    assert!(core::mem::size_of::<RelaySlot>() == 16);
};

#[cfg(feature = "user")]
mod pod {
    // SAFETY: all of these are `#[repr(C)]`, made only of integers, with every
    // padding byte an explicit field, so any bit pattern is a valid value.
    unsafe impl aya::Pod for super::Registration {}
    unsafe impl aya::Pod for super::Listener {}
    unsafe impl aya::Pod for super::SteerConfig {}
    unsafe impl aya::Pod for super::OrigDst {}
    unsafe impl aya::Pod for super::ConnKey {}
    unsafe impl aya::Pod for super::RefusalEvent {}
    unsafe impl aya::Pod for super::ProcessId {}
    unsafe impl aya::Pod for super::RelayPeer {}
    unsafe impl aya::Pod for super::RelaySlot {}
}
