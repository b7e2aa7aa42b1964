//! The in-kernel relay: both sockets of a relayed connection (the accepted
//! one and the daemon's upstream one) sit in `SLUICE_RELAY_SOCKS`, and each
//! segment one of them receives is sent out of the other without reaching
//! the daemon. The daemon inserts them, keeps their descriptors, passes
//! half-closes on and removes them; the program only moves and counts bytes.

use aya_ebpf::{
    EbpfContext as _,
    bindings::sk_action::SK_PASS,
    helpers::bpf_get_socket_cookie,
    macros::{map, stream_verdict},
    maps::{HashMap, PerCpuHashMap, SockHash},
    programs::SkBuffContext,
};
use gateway_common::capacity;

#[map(name = "SLUICE_RELAY_SOCKS")]
static RELAY_SOCKS: SockHash<u64> = SockHash::pinned(capacity::RELAY_SOCKS, 0);
#[map(name = "SLUICE_RELAY_PEERS")]
static RELAY_PEERS: HashMap<u64, u64> = HashMap::pinned(capacity::RELAY_SOCKS, 0);
#[map(name = "SLUICE_RELAY_BYTES")]
static RELAY_BYTES: PerCpuHashMap<u64, u64> = PerCpuHashMap::pinned(capacity::RELAY_SOCKS, 0);

/// A segment received by a relayed socket goes out of its peer (egress:
/// flags 0), counted under the receiving socket. A socket with no peer
/// entry keeps the segment in its own receive queue (`SK_PASS`), where the
/// daemon reads it in order: that is the state between insertion and the
/// daemon's flush of what arrived before it.
#[stream_verdict]
pub fn sluice_relay_verdict(ctx: SkBuffContext) -> u32 {
    // SAFETY: sk_skb programs may read their socket's cookie.
    let cookie = unsafe { bpf_get_socket_cookie(ctx.as_ptr()) };
    // SAFETY: the value is copied out at once.
    let Some(mut peer) = (unsafe { RELAY_PEERS.get(&cookie) }).copied() else {
        return SK_PASS;
    };
    if let Some(bytes) = RELAY_BYTES.get_ptr_mut(&cookie) {
        // SAFETY: this CPU's slot; nothing else writes it meanwhile.
        unsafe { *bytes += u64::from(ctx.len()) };
    }
    RELAY_SOCKS.redirect_skb(&ctx, &mut peer, 0) as u32
}
