//! Sluice's kernel side: cgroup programs attached once to the sandbox root
//! cgroup. They steer every TCP connect and every DNS datagram of a registered
//! sandbox to the Sluice listener of the socket's network namespace, record
//! where the socket really wanted to go, and refuse everything else.
//!
//! Fail closed everywhere: a cgroup with no registered ancestor, a namespace
//! with no known listener, a transport other than TCP/UDP, UDP to any port but
//! 53, and raw/packet/ICMP sockets are refused (`connect`/`sendmsg` get EPERM).
//! No socket under the root may bind the listener's port, so none can stand
//! in for Sluice while the daemon is down.
//! The one program that cannot refuse, `recvmsg`, only ever rewrites the source
//! of a reply that came from Sluice's own DNS listener.
#![no_std]
#![no_main]
// The relay's atomic add (see `relay`): core's atomics have no
// read-modify-write on the bpf target.
#![cfg_attr(
    target_arch = "bpf",
    feature(core_intrinsics),
    allow(internal_features)
)]
// Map keys and values are passed by reference on purpose: by value they would
// be copied onto the 512-byte BPF stack once more.
#![allow(clippy::needless_borrows_for_generic_args)]

mod relay;

use core::ptr::{addr_of, addr_of_mut, read_volatile, write_volatile};

use aya_ebpf::{
    EbpfContext,
    bindings::{BPF_SOCK_OPS_TCP_CONNECT_CB, bpf_sock_addr},
    helpers::{
        bpf_get_current_ancestor_cgroup_id, bpf_get_current_cgroup_id, bpf_get_current_comm,
        bpf_get_current_pid_tgid, bpf_get_netns_cookie, bpf_get_socket_cookie,
    },
    macros::{cgroup_sock, cgroup_sock_addr, lsm_cgroup, map, sock_ops},
    maps::{Array, HashMap, LruHashMap, PerCpuArray, RingBuf},
    programs::{LsmContext, SockAddrContext, SockContext, SockOpsContext},
};
use gateway_common::{
    ConnKey, Listener, MAX_CGROUP_DEPTH, OrigDst, ProcessId, Refusal, RefusalEvent, Registration,
    SteerConfig, capacity,
    sock::{
        AF_INET, AF_INET6, AF_PACKET, DNS_PORT, IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_TCP,
        IPPROTO_UDP, SOCK_DGRAM, SOCK_RAW, SOCK_STREAM,
    },
};

/// Return values of cgroup sock and sock_addr programs.
const ALLOW: i32 = 1;
const REFUSE: i32 = 0;

// Map names must match `gateway_common::maps` (checked by the daemon on load).
#[map(name = "SLUICE_IDENTITY")]
static IDENTITY: HashMap<u64, Registration> = HashMap::pinned(capacity::IDENTITY, 0);
#[map(name = "SLUICE_LISTENERS")]
static LISTENERS: HashMap<u64, Listener> = HashMap::pinned(capacity::LISTENERS, 0);
#[map(name = "SLUICE_CONFIG")]
static CONFIG: Array<SteerConfig> = Array::pinned(1, 0);
#[map(name = "SLUICE_PENDING")]
static PENDING: LruHashMap<u64, OrigDst> = LruHashMap::pinned(capacity::CONNS, 0);
#[map(name = "SLUICE_CONNS")]
static CONNS: LruHashMap<ConnKey, OrigDst> = LruHashMap::pinned(capacity::CONNS, 0);
#[map(name = "SLUICE_DNS_ORIG")]
static DNS_ORIG: LruHashMap<u64, OrigDst> = LruHashMap::pinned(capacity::DNS_ORIG, 0);
#[map(name = "SLUICE_REFUSALS")]
static REFUSALS: PerCpuArray<u64> = PerCpuArray::pinned(Refusal::COUNT, 0);
#[map(name = "SLUICE_EVENTS")]
static EVENTS: RingBuf = RingBuf::pinned(capacity::EVENTS_BYTES, 0);

/// Every function taking a `Family` is `#[inline(always)]`: each program
/// then sees a constant family and the compiler emits only the fixed-offset
/// context accesses the verifier accepts (a context pointer selected at run
/// time is refused).
#[derive(Clone, Copy)]
enum Family {
    V4,
    V6,
}

/// A socket address as the kernel hands it over (network-order words).
#[derive(Clone, Copy)]
struct Addr {
    ip: [u32; 4],
    port: u16,
}

/// TCP `connect()` (and UDP `connect()`) over IPv4. Miss in the identity map:
/// refused (fail closed). Miss in the listener map: refused.
#[cgroup_sock_addr(connect4)]
pub fn sluice_connect4(ctx: SockAddrContext) -> i32 {
    verdict(&ctx, Family::V4, try_connect(&ctx, Family::V4))
}

/// As [`sluice_connect4`], for IPv6 (IPv4-mapped destinations included).
#[cgroup_sock_addr(connect6)]
pub fn sluice_connect6(ctx: SockAddrContext) -> i32 {
    verdict(&ctx, Family::V6, try_connect(&ctx, Family::V6))
}

/// Unconnected UDP `sendmsg()` over IPv4: port 53 goes to Sluice's DNS
/// listener, anything else is refused (QUIC included).
#[cgroup_sock_addr(sendmsg4)]
pub fn sluice_sendmsg4(ctx: SockAddrContext) -> i32 {
    verdict(&ctx, Family::V4, try_sendmsg(&ctx, Family::V4))
}

/// As [`sluice_sendmsg4`], for IPv6.
#[cgroup_sock_addr(sendmsg6)]
pub fn sluice_sendmsg6(ctx: SockAddrContext) -> i32 {
    verdict(&ctx, Family::V6, try_sendmsg(&ctx, Family::V6))
}

/// UDP `recvmsg()` over IPv4: a reply from Sluice's DNS listener appears to
/// come from the server the sandbox asked. A miss leaves the source as is;
/// recvmsg hooks cannot refuse, and nothing here can open a path.
#[cgroup_sock_addr(recvmsg4)]
pub fn sluice_recvmsg4(ctx: SockAddrContext) -> i32 {
    restore_dns_source(&ctx, Family::V4);
    ALLOW
}

/// As [`sluice_recvmsg4`], for IPv6.
#[cgroup_sock_addr(recvmsg6)]
pub fn sluice_recvmsg6(ctx: SockAddrContext) -> i32 {
    restore_dns_source(&ctx, Family::V6);
    ALLOW
}

/// `socket()`: raw, packet and ICMP sockets are refused for every cgroup
/// under the root, registered or not; they would carry traffic no listener
/// sees. So is every IPv4/IPv6 transport but TCP and UDP: the kernel runs
/// the connect hooks only for protocols with a pre-connect step, which
/// UDP-Lite and SCTP lack, so such a socket would connect and send unseen.
#[cgroup_sock(sock_create)]
pub fn sluice_sock_create(ctx: SockContext) -> i32 {
    // SAFETY: the kernel hands a valid `bpf_sock` to sock_create programs.
    let (family, sock_type, protocol) = unsafe {
        let sk = ctx.sock;
        (
            read_volatile(addr_of!((*sk).family)),
            read_volatile(addr_of!((*sk).type_)),
            read_volatile(addr_of!((*sk).protocol)),
        )
    };
    let icmp = (family == AF_INET && protocol == IPPROTO_ICMP)
        || (family == AF_INET6 && protocol == IPPROTO_ICMPV6);
    let steered = (sock_type == SOCK_STREAM && protocol == IPPROTO_TCP)
        || (sock_type == SOCK_DGRAM && protocol == IPPROTO_UDP);
    let refusal = if family == AF_PACKET || sock_type == SOCK_RAW || icmp {
        Refusal::RawSocket
    } else if !steered {
        Refusal::Protocol
    } else {
        return ALLOW;
    };
    count(refusal);
    emit(RefusalEvent {
        cgroup: unsafe { bpf_get_current_cgroup_id() },
        addr: [0; 4],
        port: 0,
        family: family as u16,
        reason: refusal as u32,
        sock_type,
        protocol,
        process: current_process(),
    });
    REFUSE
}

/// TCP `bind()` over IPv4, once the port is chosen (`bind(0)` included): no
/// socket under the root may hold the port of its namespace's Sluice
/// listener, on any address. While the daemon is down (stopped, upgrading)
/// the pinned programs still steer every connect of the namespace to that
/// port; a sandbox bound to it would be handed the other sandboxes'
/// connections. Refused, the bind fails with EPERM and the port is free.
#[cgroup_sock(post_bind4)]
pub fn sluice_post_bind4(ctx: SockContext) -> i32 {
    post_bind(&ctx, Family::V4)
}

/// As [`sluice_post_bind4`], for IPv6 (a dual-stack `[::]` bind included).
#[cgroup_sock(post_bind6)]
pub fn sluice_post_bind6(ctx: SockContext) -> i32 {
    post_bind(&ctx, Family::V6)
}

#[inline(always)]
fn post_bind(ctx: &SockContext, family: Family) -> i32 {
    let sk = ctx.sock;
    // SAFETY: the kernel hands a valid `bpf_sock` to post_bind programs;
    // one 4-byte volatile load per field, as the verifier wants.
    let (sock_type, protocol, port) = unsafe {
        (
            read_volatile(addr_of!((*sk).type_)),
            read_volatile(addr_of!((*sk).protocol)),
            read_volatile(addr_of!((*sk).src_port)) as u16,
        )
    };
    if sock_type != SOCK_STREAM || protocol != IPPROTO_TCP {
        return ALLOW;
    }
    let netns = unsafe { bpf_get_netns_cookie(ctx.as_ptr()) };
    // No listener in this namespace: nothing is steered to any port here.
    let Some(listener) = (unsafe { LISTENERS.get(&netns) }) else {
        return ALLOW;
    };
    if port != listener.tcp_port {
        return ALLOW;
    }
    count(Refusal::ListenerPort);
    // SAFETY: as above.
    let addr = unsafe {
        match family {
            Family::V4 => [read_volatile(addr_of!((*sk).src_ip4)), 0, 0, 0],
            Family::V6 => [
                read_volatile(addr_of!((*sk).src_ip6[0])),
                read_volatile(addr_of!((*sk).src_ip6[1])),
                read_volatile(addr_of!((*sk).src_ip6[2])),
                read_volatile(addr_of!((*sk).src_ip6[3])),
            ],
        }
    };
    emit(RefusalEvent {
        cgroup: unsafe { bpf_get_current_cgroup_id() },
        addr,
        port,
        family: family_code(family),
        reason: Refusal::ListenerPort as u32,
        sock_type,
        protocol,
        process: current_process(),
    });
    REFUSE
}

/// `socket()` of any family, through the cgroup BPF LSM: `sock_create` only
/// sees IPv4/IPv6 sockets, so packet sockets (which bypass the IP stack's
/// hooks entirely) are refused here, for every cgroup under the root.
/// Kernel-internal sockets are left alone. Returns 1 to allow, 0 for EPERM.
#[lsm_cgroup(hook = "socket_create")]
pub fn sluice_socket_create(ctx: LsmContext) -> i32 {
    // int socket_create(int family, int type, int protocol, int kern)
    let family: i32 = ctx.arg(0);
    let kern: i32 = ctx.arg(3);
    if kern == 0 && family as u32 == AF_PACKET {
        count(Refusal::RawSocket);
        emit(RefusalEvent {
            cgroup: unsafe { bpf_get_current_cgroup_id() },
            addr: [0; 4],
            port: 0,
            family: family as u16,
            reason: Refusal::RawSocket as u32,
            sock_type: ctx.arg::<i32>(1) as u32,
            protocol: ctx.arg::<i32>(2) as u32,
            process: current_process(),
        });
        return REFUSE;
    }
    ALLOW
}

/// TCP socket operations: when a steered socket sends its SYN its source port
/// is known, so the record moves from the socket cookie to the key the
/// daemon can compute on accept (namespace, client address, client port).
/// A miss means the socket was not steered; nothing to do.
#[sock_ops]
pub fn sluice_sockops(ctx: SockOpsContext) -> u32 {
    if ctx.op() == BPF_SOCK_OPS_TCP_CONNECT_CB {
        publish_conn(&ctx);
    }
    0
}

fn publish_conn(ctx: &SockOpsContext) {
    let cookie = unsafe { bpf_get_socket_cookie(ctx.as_ptr()) };
    let Some(orig) = (unsafe { PENDING.get(&cookie) }).copied() else {
        return;
    };
    let ops = ctx.ops;
    // SAFETY: `ops` is the context the kernel handed over. One volatile
    // 4-byte load per field: the verifier refuses loads through a pointer the
    // compiler derived from the context (e.g. one chosen by a branch).
    let (family, addr, port) = unsafe {
        let family = read_volatile(addr_of!((*ops).family));
        let addr = if family == AF_INET6 {
            [
                read_volatile(addr_of!((*ops).local_ip6[0])),
                read_volatile(addr_of!((*ops).local_ip6[1])),
                read_volatile(addr_of!((*ops).local_ip6[2])),
                read_volatile(addr_of!((*ops).local_ip6[3])),
            ]
        } else {
            [read_volatile(addr_of!((*ops).local_ip4)), 0, 0, 0]
        };
        (family, addr, read_volatile(addr_of!((*ops).local_port)))
    };
    let key = ConnKey {
        netns: orig.netns,
        addr,
        port: port as u16,
        family: family as u16,
        _pad: 0,
    };
    if CONNS.insert(&key, &orig, 0).is_err() {
        count(Refusal::MapFull);
    }
    let _ = PENDING.remove(&cookie);
}

#[inline(always)]
fn verdict(ctx: &SockAddrContext, family: Family, result: Result<(), Refusal>) -> i32 {
    match result {
        Ok(()) => ALLOW,
        Err(reason) => {
            count(reason);
            let dst = read_dst(ctx.sock_addr, family);
            emit(RefusalEvent {
                cgroup: unsafe { bpf_get_current_cgroup_id() },
                addr: dst.ip,
                port: dst.port,
                family: family_code(family),
                reason: reason as u32,
                sock_type: unsafe { read_volatile(addr_of!((*ctx.sock_addr).type_)) },
                protocol: unsafe { read_volatile(addr_of!((*ctx.sock_addr).protocol)) },
                process: current_process(),
            });
            REFUSE
        }
    }
}

#[inline(always)]
fn try_connect(ctx: &SockAddrContext, family: Family) -> Result<(), Refusal> {
    let (identity, registration) = identify()?;
    let netns = unsafe { bpf_get_netns_cookie(ctx.as_ptr()) };
    let listener = unsafe { LISTENERS.get(&netns) }.ok_or(Refusal::NoListener)?;
    let sa = ctx.sock_addr;
    let (sock_type, protocol) = unsafe {
        (
            read_volatile(addr_of!((*sa).type_)),
            read_volatile(addr_of!((*sa).protocol)),
        )
    };
    let dst = read_dst(sa, family);
    let orig = OrigDst {
        addr: dst.ip,
        port: dst.port,
        family: family_code(family),
        via_port: 0,
        _pad: 0,
        identity,
        netns,
        process: current_process(),
    };
    let cookie = unsafe { bpf_get_socket_cookie(ctx.as_ptr()) };
    if sock_type == SOCK_STREAM && protocol == IPPROTO_TCP {
        let target = listener_addr(listener, family, listener.tcp_port);
        // During an upgrade the old and the new program are both attached for
        // a moment; the first one already steered this socket.
        if same_addr(dst, target) {
            return Ok(());
        }
        PENDING
            .insert(&cookie, &orig, 0)
            .map_err(|_| Refusal::MapFull)?;
        write_dst(sa, family, target);
        Ok(())
    } else if sock_type == SOCK_DGRAM && protocol == IPPROTO_UDP {
        steer_dns(sa, family, listener, registration.dns_port, cookie, orig)
    } else {
        Err(Refusal::Protocol)
    }
}

#[inline(always)]
fn try_sendmsg(ctx: &SockAddrContext, family: Family) -> Result<(), Refusal> {
    let (identity, registration) = identify()?;
    let netns = unsafe { bpf_get_netns_cookie(ctx.as_ptr()) };
    let listener = unsafe { LISTENERS.get(&netns) }.ok_or(Refusal::NoListener)?;
    let sa = ctx.sock_addr;
    let dst = read_dst(sa, family);
    let orig = OrigDst {
        addr: dst.ip,
        port: dst.port,
        family: family_code(family),
        via_port: 0,
        _pad: 0,
        identity,
        netns,
        process: current_process(),
    };
    let cookie = unsafe { bpf_get_socket_cookie(ctx.as_ptr()) };
    steer_dns(sa, family, listener, registration.dns_port, cookie, orig)
}

/// UDP: port 53 is rewritten to the sandbox's own DNS listener (remembering
/// the server the sandbox asked, for `recvmsg`), everything else is refused.
#[inline(always)]
fn steer_dns(
    sa: *mut bpf_sock_addr,
    family: Family,
    listener: &Listener,
    dns_port: u16,
    cookie: u64,
    mut orig: OrigDst,
) -> Result<(), Refusal> {
    let target = listener_addr(listener, family, dns_port);
    let dst = Addr {
        ip: orig.addr,
        port: orig.port,
    };
    if same_addr(dst, target) {
        return Ok(());
    }
    if orig.port != DNS_PORT {
        return Err(Refusal::UdpNotDns);
    }
    if dns_port == 0 {
        return Err(Refusal::NoListener);
    }
    orig.via_port = dns_port;
    DNS_ORIG
        .insert(&cookie, &orig, 0)
        .map_err(|_| Refusal::MapFull)?;
    write_dst(sa, family, target);
    Ok(())
}

#[inline(always)]
fn restore_dns_source(ctx: &SockAddrContext, family: Family) {
    let netns = unsafe { bpf_get_netns_cookie(ctx.as_ptr()) };
    let Some(listener) = (unsafe { LISTENERS.get(&netns) }) else {
        return;
    };
    let cookie = unsafe { bpf_get_socket_cookie(ctx.as_ptr()) };
    let Some(orig) = (unsafe { DNS_ORIG.get(&cookie) }) else {
        return;
    };
    let sa = ctx.sock_addr;
    let src = read_dst(sa, family);
    if same_addr(src, listener_addr(listener, family, orig.via_port)) {
        write_dst(
            sa,
            family,
            Addr {
                ip: orig.addr,
                port: orig.port,
            },
        );
    }
}

/// The cgroup id of the calling task's nearest registered ancestor below the
/// sandbox root (the sandbox, or a session inside it).
fn identify() -> Result<(u64, Registration), Refusal> {
    let root_level = CONFIG.get(0).ok_or(Refusal::Unregistered)?.root_level;
    let mut found = None;
    let mut depth = 1;
    while depth <= MAX_CGROUP_DEPTH {
        let id = unsafe { bpf_get_current_ancestor_cgroup_id((root_level + depth) as i32) };
        if id == 0 {
            break;
        }
        if let Some(registration) = unsafe { IDENTITY.get(&id) } {
            found = Some((id, *registration));
        }
        depth += 1;
    }
    found.ok_or(Refusal::Unregistered)
}

#[inline(always)]
fn listener_addr(listener: &Listener, family: Family, port: u16) -> Addr {
    let ip = match family {
        Family::V4 => [listener.addr4, 0, 0, 0],
        Family::V6 => listener.addr6,
    };
    Addr { ip, port }
}

fn same_addr(a: Addr, b: Addr) -> bool {
    a.port == b.port
        && a.ip[0] == b.ip[0]
        && a.ip[1] == b.ip[1]
        && a.ip[2] == b.ip[2]
        && a.ip[3] == b.ip[3]
}

#[inline(always)]
fn family_code(family: Family) -> u16 {
    match family {
        Family::V4 => AF_INET as u16,
        Family::V6 => AF_INET6 as u16,
    }
}

// The verifier only accepts 4-byte accesses to these context fields, hence
// one volatile access per word.
#[inline(always)]
fn read_dst(sa: *mut bpf_sock_addr, family: Family) -> Addr {
    // SAFETY: `sa` is the context pointer the kernel handed to the program.
    unsafe {
        let ip = match family {
            Family::V4 => [read_volatile(addr_of!((*sa).user_ip4)), 0, 0, 0],
            Family::V6 => [
                read_volatile(addr_of!((*sa).user_ip6[0])),
                read_volatile(addr_of!((*sa).user_ip6[1])),
                read_volatile(addr_of!((*sa).user_ip6[2])),
                read_volatile(addr_of!((*sa).user_ip6[3])),
            ],
        };
        let port = u16::from_be(read_volatile(addr_of!((*sa).user_port)) as u16);
        Addr { ip, port }
    }
}

#[inline(always)]
fn write_dst(sa: *mut bpf_sock_addr, family: Family, addr: Addr) {
    // SAFETY: as in `read_dst`; these fields are writable for these hooks.
    unsafe {
        match family {
            Family::V4 => write_volatile(addr_of_mut!((*sa).user_ip4), addr.ip[0]),
            Family::V6 => {
                write_volatile(addr_of_mut!((*sa).user_ip6[0]), addr.ip[0]);
                write_volatile(addr_of_mut!((*sa).user_ip6[1]), addr.ip[1]);
                write_volatile(addr_of_mut!((*sa).user_ip6[2]), addr.ip[2]);
                write_volatile(addr_of_mut!((*sa).user_ip6[3]), addr.ip[3]);
            }
        }
        write_volatile(addr_of_mut!((*sa).user_port), addr.port.to_be() as u32);
    }
}

/// The calling process, for the daemon to name in what it audits and to
/// look up its executable. Both helpers work in every program here: they read
/// the current task, which is the caller for socket calls.
#[inline(always)]
fn current_process() -> ProcessId {
    let pid_tgid = bpf_get_current_pid_tgid();
    ProcessId {
        tgid: (pid_tgid >> 32) as u32,
        tid: pid_tgid as u32,
        comm: bpf_get_current_comm().unwrap_or_default(),
    }
}

fn count(reason: Refusal) {
    if let Some(counter) = REFUSALS.get_ptr_mut(reason as u32) {
        // SAFETY: per-CPU slot, no concurrent writer on this CPU.
        unsafe { *counter += 1 };
    }
}

fn emit(event: RefusalEvent) {
    // A full ring buffer loses the audit event, never the refusal itself; the
    // counter above still counts it.
    let _ = EVENTS.output::<RefusalEvent>(&event, 0);
}

// On the host (cargo check/clippy of the workspace) std provides the handler.
#[cfg(target_arch = "bpf")]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
