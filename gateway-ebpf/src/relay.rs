//! The in-kernel relay: both sockets of a relayed connection (the accepted
//! one and the daemon's upstream one) sit in `SLUICE_RELAY_SOCKS`, and each
//! segment one of them receives is sent out of the other without reaching
//! the daemon, once the daemon has let go of that direction. The daemon
//! inserts them, keeps their descriptors, hands each direction to the
//! kernel, passes half-closes on and removes them; the program only moves,
//! holds and counts bytes.

use aya_ebpf::{
    EbpfContext as _,
    bindings::{
        BPF_F_MMAPABLE,
        sk_action::{SK_DROP, SK_PASS},
    },
    helpers::bpf_get_socket_cookie,
    macros::{map, stream_verdict},
    maps::{Array, HashMap, SockHash},
    programs::SkBuffContext,
};
use gateway_common::{RelayPeer, RelaySlot, capacity};

#[map(name = "SLUICE_RELAY_SOCKS")]
static RELAY_SOCKS: SockHash<u64> = SockHash::pinned(capacity::RELAY_SOCKS, 0);
#[map(name = "SLUICE_RELAY_PEERS")]
static RELAY_PEERS: HashMap<u64, RelayPeer> = HashMap::pinned(capacity::RELAY_SOCKS, 0);
/// Mapped by the daemon too (`BPF_F_MMAPABLE`): its compare-and-swap on a
/// slot's state and this program's fetch-and-add are the handover.
#[map(name = "SLUICE_RELAY_STATE")]
static RELAY_STATE: Array<RelaySlot> = Array::pinned(capacity::RELAY_SLOTS, BPF_F_MMAPABLE);

/// A segment received by a relayed socket: while its slot's state is not
/// zero (the daemon holds that direction), it stays in the socket's own
/// queue (`SK_PASS`), for the daemon to read in order, and its length is
/// added to the state so the daemon sees it arrived. Once the daemon has
/// swapped the state to zero (having written on everything passed before),
/// the segment goes out of the peer (egress: flags 0), counted.
///
/// The add comes first and is one atomic instruction; the value before it
/// decides: a segment is either counted while held or redirected after
/// the swap, never redirected while the daemon still writes what came
/// before it. The kernel runs this program for one socket at a time (under
/// the socket's lock), so the undo below cannot interleave with another
/// segment of the same socket.
#[stream_verdict]
pub fn sluice_relay_verdict(ctx: SkBuffContext) -> u32 {
    // SAFETY: sk_skb programs may read their socket's cookie.
    let cookie = unsafe { bpf_get_socket_cookie(ctx.as_ptr()) };
    // SAFETY: the value is copied out at once.
    let Some(peer) = (unsafe { RELAY_PEERS.get(&cookie) }).copied() else {
        // The daemon writes the peer entry before it inserts the socket and
        // removes it after the socket is closed: not one of its sockets.
        return SK_PASS;
    };
    let Some(slot) = RELAY_STATE.get_ptr_mut(peer.slot) else {
        return SK_PASS;
    };
    let len = u64::from(ctx.len());
    if len == 0 {
        // A FIN alone: dropped, which ends nothing (the kernel marked the
        // socket shut for reading as it queued it, and that is what reads,
        // poll and the daemon see). The daemon passes the half-close on
        // itself, once the bytes before it are out. Passed or redirected,
        // an empty segment can reach the kernel's relay work queue (behind
        // bytes waiting there), which takes its zero length for a failed
        // send: it reports EPIPE on the socket and stops relaying to it.
        return SK_DROP;
    }
    // SAFETY: `slot` points into the array map's value, valid and 8-byte
    // aligned for as long as the program runs; the daemon touches these
    // words only atomically.
    unsafe {
        let state = &raw mut (*slot).state;
        atomic_add(state, len);
        // See `atomic_add` for why this is the value before plus `len`.
        if core::ptr::read_volatile(state) != len {
            return SK_PASS;
        }
        atomic_add(state, len.wrapping_neg());
        atomic_add(&raw mut (*slot).redirected, len);
    }
    let mut to = peer.peer;
    RELAY_SOCKS.redirect_skb(&ctx, &mut to, 0) as u32
}

/// Adds `n` to `word` with one atomic instruction (`BPF_ATOMIC | BPF_ADD`,
/// lock-prefixed on x86).
///
/// Not a fetch-and-add: LLVM emits the fetching form only for CPU v3 and
/// the programs are built for the generic CPU (and the bpf target's core
/// has no read-modify-write atomics at all, lacking compare-and-swap; the
/// intrinsic behind them is the one instruction). Reading the word back
/// after the add is as good here: the kernel runs this program for one
/// socket at a time, and the daemon's only write while the socket is held,
/// a compare-and-swap against a value it read earlier, fails once this add
/// moved the word (`n` > 0; the program never adds 0). So the value read
/// back is the value before plus `n`.
///
/// # Safety
/// `word` is valid, aligned, and written by others only atomically.
#[inline(always)]
unsafe fn atomic_add(word: *mut u64, n: u64) {
    #[cfg(target_arch = "bpf")]
    {
        use core::intrinsics::{AtomicOrdering, atomic_xadd};
        // SAFETY: as the caller promises. The result is unused: the
        // plain atomic add.
        let _ = unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::SeqCst }>(word, n) };
    }
    #[cfg(not(target_arch = "bpf"))]
    {
        // On the host, where the workspace is checked and linted.
        use core::sync::atomic::{AtomicU64, Ordering};
        // SAFETY: as the caller promises.
        unsafe { AtomicU64::from_ptr(word) }.fetch_add(n, Ordering::SeqCst);
    }
}
