//! The daemon's side of the in-kernel relay maps: giving each relayed
//! socket a slot in `SLUICE_RELAY_STATE` (mapped into the daemon's memory),
//! holding its bytes there before the socket goes into `SLUICE_RELAY_SOCKS`
//! with its peer named in `SLUICE_RELAY_PEERS`, the handover of each
//! direction to the kernel, reading how many bytes each sent, and taking
//! them out again. The I/O around it (reading what was held, half-close,
//! revocation) is `proxy::kernel_relay`.

use std::{
    os::fd::{AsFd as _, AsRawFd},
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use aya::{
    Ebpf,
    maps::{HashMap, MapData, SockHash},
    programs::{Program, sk_skb::SkSkbLink},
};
use gateway_common::{RELAY_HOLD, RelayPeer, capacity, maps, programs};

use super::handles::{SteerError, lock, map_err, take};
use crate::sys::MappedWords;

/// Words of a slot in the state map (`RelaySlot`: state, redirected).
const SLOT_WORDS: usize = 2;

/// The relay maps, with the verdict program attached to the socket map for
/// as long as this lives.
pub struct KernelRelay {
    socks: Mutex<SockHash<MapData, u64>>,
    peers: Mutex<HashMap<MapData, u64, RelayPeer>>,
    /// `SLUICE_RELAY_STATE`, mapped.
    state: MappedWords,
    slots: Mutex<Slots>,
    /// Keeps the state map open (the mapping would too; this says so).
    _state_map: MapData,
    _verdict: SkSkbLink,
}

/// Why a connection's sockets are not in the maps.
#[derive(Debug)]
pub struct Refusal {
    pub err: SteerError,
    /// Nothing was lost: the connection can be relayed in user space.
    pub clean: bool,
}

/// One relayed socket in the maps.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub cookie: u64,
    pub slot: u32,
}

impl KernelRelay {
    /// Loads the verdict program, attaches it to the (pinned) socket map
    /// and maps the state map.
    pub(super) fn attach(ebpf: &mut Ebpf) -> Result<KernelRelay, SteerError> {
        let name = programs::RELAY_VERDICT;
        let err = |source| SteerError::Program { name, source };
        let socks: SockHash<MapData, u64> = take(ebpf, maps::RELAY_SOCKS)?;
        let peers = take(ebpf, maps::RELAY_PEERS)?;
        let state_map = match ebpf.take_map(maps::RELAY_STATE) {
            Some(aya::maps::Map::Array(data)) => data,
            _ => {
                return Err(SteerError::Map {
                    name: maps::RELAY_STATE,
                    message: "missing from the eBPF object, or not an array".to_owned(),
                });
            }
        };
        let words = capacity::RELAY_SLOTS as usize * SLOT_WORDS;
        let state =
            MappedWords::map(state_map.fd().as_fd(), words).map_err(|e| SteerError::Map {
                name: maps::RELAY_STATE,
                message: format!("mmap: {e}"),
            })?;
        let Some(Program::SkSkb(program)) = ebpf.program_mut(name) else {
            return Err(err(aya::programs::ProgramError::UnexpectedProgramType));
        };
        program.load().map_err(err)?;
        let id = program.attach(socks.fd()).map_err(err)?;
        let verdict = program.take_link(id).map_err(err)?;
        Ok(KernelRelay {
            socks: Mutex::new(socks),
            peers: Mutex::new(peers),
            state,
            slots: Mutex::new(Slots::new(capacity::RELAY_SLOTS)),
            _state_map: state_map,
            _verdict: verdict,
        })
    }

    /// Puts both sockets into the maps, each pointing at the other, with
    /// their bytes held: what they receive from now on (and what waited in
    /// their queues) stays in their own receive queues, in order, counted
    /// in their state, until [`KernelRelay::state`] is swapped to zero. On
    /// failure nothing is left in the maps.
    pub fn insert(
        &self,
        a: (u64, &impl AsRawFd),
        b: (u64, &impl AsRawFd),
    ) -> Result<[Entry; 2], Refusal> {
        let full = || Refusal {
            err: SteerError::Map {
                name: maps::RELAY_STATE,
                message: "no free slot".to_owned(),
            },
            clean: true,
        };
        let (sa, sb) = {
            let mut slots = lock(&self.slots);
            let sa = slots.take().ok_or_else(full)?;
            let Some(sb) = slots.take() else {
                slots.put(sa);
                return Err(full());
            };
            (sa, sb)
        };
        let entries = [
            Entry {
                cookie: a.0,
                slot: sa,
            },
            Entry {
                cookie: b.0,
                slot: sb,
            },
        ];
        // The holds and the peers come first: the program must never see
        // one of these sockets without them.
        for entry in entries {
            self.state(entry.slot).store(RELAY_HOLD, Ordering::SeqCst);
            self.redirected_word(entry.slot).store(0, Ordering::SeqCst);
        }
        let inserted = self.insert_peers(entries).and_then(|()| {
            let mut socks = lock(&self.socks);
            socks
                .insert(a.0, a.1.as_raw_fd(), 0)
                .map_err(|e| map_err(maps::RELAY_SOCKS, e))?;
            if let Err(e) = socks.insert(b.0, b.1.as_raw_fd(), 0) {
                let _ = socks.remove(&a.0);
                return Err(map_err(maps::RELAY_SOCKS, e));
            }
            Ok(())
        });
        if let Err(err) = inserted {
            self.remove(entries);
            // Taking a socket out of the socket map drops what the program
            // had passed to its own queue: bytes that arrived between the
            // two inserts. Then the connection cannot be relayed whole.
            let clean = entries
                .iter()
                .all(|e| self.state(e.slot).load(Ordering::SeqCst) == RELAY_HOLD);
            return Err(Refusal { err, clean });
        }
        Ok(entries)
    }

    fn insert_peers(&self, [a, b]: [Entry; 2]) -> Result<(), SteerError> {
        let mut peers = lock(&self.peers);
        for (from, to) in [(a, b), (b, a)] {
            let value = RelayPeer {
                peer: to.cookie,
                slot: from.slot,
                _pad: 0,
            };
            peers
                .insert(from.cookie, value, 0)
                .map_err(|e| map_err(maps::RELAY_PEERS, e))?;
        }
        Ok(())
    }

    /// A socket's state word: `RELAY_HOLD` plus the bytes passed to its
    /// own queue while held; zero once its bytes are redirected.
    pub fn state(&self, slot: u32) -> &AtomicU64 {
        self.state
            .word(slot as usize * SLOT_WORDS)
            .expect("slots are below the map's capacity")
    }

    fn redirected_word(&self, slot: u32) -> &AtomicU64 {
        self.state
            .word(slot as usize * SLOT_WORDS + 1)
            .expect("slots are below the map's capacity")
    }

    /// Bytes the socket in `slot` received and the kernel sent to its peer.
    pub fn redirected(&self, slot: u32) -> u64 {
        self.redirected_word(slot).load(Ordering::SeqCst)
    }

    /// Takes both sockets out of the maps and frees their slots. The
    /// sockets must be closed by now (closing takes a socket out of the
    /// socket map, and waits for a verdict running on it): a slot is given
    /// to another socket only once nothing can run the program for this one.
    pub fn remove(&self, entries: [Entry; 2]) {
        {
            let mut socks = lock(&self.socks);
            let mut peers = lock(&self.peers);
            for entry in entries {
                let _ = socks.remove(&entry.cookie);
                let _ = peers.remove(&entry.cookie);
            }
        }
        let mut slots = lock(&self.slots);
        for entry in entries {
            slots.put(entry.slot);
        }
    }
}

/// Free slots of the state map: the lowest never used ones first, then
/// those given back (most recently freed first: its words are likely still
/// in cache).
#[derive(Debug)]
struct Slots {
    capacity: u32,
    /// Slots below this were handed out at least once.
    fresh: u32,
    freed: Vec<u32>,
}

impl Slots {
    fn new(capacity: u32) -> Slots {
        Slots {
            capacity,
            fresh: 0,
            freed: Vec::new(),
        }
    }

    fn take(&mut self) -> Option<u32> {
        if let Some(slot) = self.freed.pop() {
            return Some(slot);
        }
        (self.fresh < self.capacity).then(|| {
            self.fresh += 1;
            self.fresh - 1
        })
    }

    fn put(&mut self, slot: u32) {
        debug_assert!(slot < self.fresh && !self.freed.contains(&slot));
        self.freed.push(slot);
    }
}

#[cfg(test)]
mod tests {
    use super::Slots;

    #[test]
    fn slots_are_unique_until_given_back() {
        let mut slots = Slots::new(3);
        let taken: Vec<u32> = (0..3).filter_map(|_| slots.take()).collect();
        assert_eq!(taken, [0, 1, 2]);
        assert_eq!(slots.take(), None, "all three are in use");
        slots.put(1);
        assert_eq!(slots.take(), Some(1));
        assert_eq!(slots.take(), None);
    }

    #[test]
    fn a_freed_slot_is_reused_before_a_fresh_one() {
        let mut slots = Slots::new(10);
        let a = slots.take().expect("a slot");
        let b = slots.take().expect("a slot");
        slots.put(a);
        assert_eq!(slots.take(), Some(a));
        slots.put(b);
        slots.put(a);
        assert_eq!(slots.take(), Some(a));
        assert_eq!(slots.take(), Some(b));
        assert_eq!(slots.take(), Some(2));
    }

    #[test]
    fn no_slot_from_an_empty_map() {
        assert_eq!(Slots::new(0).take(), None);
    }
}
