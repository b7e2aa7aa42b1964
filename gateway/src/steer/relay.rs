//! The daemon's side of the in-kernel relay maps: putting a connection's two
//! sockets into `SLUICE_RELAY_SOCKS`, pointing each at the other in
//! `SLUICE_RELAY_PEERS`, reading how many bytes each sent, and taking them
//! out again. The I/O around it (what arrived before insertion, half-close,
//! revocation) is `proxy::kernel_relay`.

use std::{os::fd::AsRawFd, sync::Mutex};

use aya::{
    Ebpf,
    maps::{HashMap, MapData, PerCpuHashMap, PerCpuValues, SockHash},
    programs::{Program, sk_skb::SkSkbLink},
};
use gateway_common::{maps, programs};

use super::ebpf::{SteerError, lock, map_err, take};

/// The relay maps, with the verdict program attached to the socket map for
/// as long as this lives.
pub struct KernelRelay {
    socks: Mutex<SockHash<MapData, u64>>,
    peers: Mutex<HashMap<MapData, u64, u64>>,
    bytes: Mutex<PerCpuHashMap<MapData, u64, u64>>,
    _verdict: SkSkbLink,
}

impl KernelRelay {
    /// Loads the verdict program and attaches it to the (pinned) socket map.
    pub(super) fn attach(ebpf: &mut Ebpf) -> Result<KernelRelay, SteerError> {
        let name = programs::RELAY_VERDICT;
        let err = |source| SteerError::Program { name, source };
        let socks: SockHash<MapData, u64> = take(ebpf, maps::RELAY_SOCKS)?;
        let peers = take(ebpf, maps::RELAY_PEERS)?;
        let bytes = take(ebpf, maps::RELAY_BYTES)?;
        let Some(Program::SkSkb(program)) = ebpf.program_mut(name) else {
            return Err(err(aya::programs::ProgramError::UnexpectedProgramType));
        };
        program.load().map_err(err)?;
        let id = program.attach(socks.fd()).map_err(err)?;
        let verdict = program.take_link(id).map_err(err)?;
        Ok(KernelRelay {
            socks: Mutex::new(socks),
            peers: Mutex::new(peers),
            bytes: Mutex::new(bytes),
            _verdict: verdict,
        })
    }

    /// Puts both sockets into the socket map, with no peers yet: what they
    /// receive from now on stays in their own receive queues, in order,
    /// until [`KernelRelay::join`]. On failure nothing is left in the map.
    pub fn insert(
        &self,
        a: (u64, &impl AsRawFd),
        b: (u64, &impl AsRawFd),
    ) -> Result<(), SteerError> {
        let mut socks = lock(&self.socks);
        socks
            .insert(a.0, a.1.as_raw_fd(), 0)
            .map_err(|e| map_err(maps::RELAY_SOCKS, e))?;
        if let Err(e) = socks.insert(b.0, b.1.as_raw_fd(), 0) {
            let _ = socks.remove(&a.0);
            return Err(map_err(maps::RELAY_SOCKS, e));
        }
        Ok(())
    }

    /// Points each socket at the other, counters at zero: from now on
    /// their bytes move in the kernel.
    pub fn join(&self, a: u64, b: u64) -> Result<(), SteerError> {
        let cpus = aya::util::nr_cpus().map_or(1, |n| n);
        {
            let mut bytes = lock(&self.bytes);
            for cookie in [a, b] {
                let zero =
                    PerCpuValues::try_from(vec![0u64; cpus]).map_err(|e| SteerError::Map {
                        name: maps::RELAY_BYTES,
                        message: e.to_string(),
                    })?;
                bytes
                    .insert(cookie, zero, 0)
                    .map_err(|e| map_err(maps::RELAY_BYTES, e))?;
            }
        }
        let mut peers = lock(&self.peers);
        peers
            .insert(a, b, 0)
            .map_err(|e| map_err(maps::RELAY_PEERS, e))?;
        if let Err(e) = peers.insert(b, a, 0) {
            let _ = peers.remove(&a);
            return Err(map_err(maps::RELAY_PEERS, e));
        }
        Ok(())
    }

    /// Bytes the socket `cookie` received and the kernel sent to its peer.
    pub fn sent(&self, cookie: u64) -> u64 {
        lock(&self.bytes)
            .get(&cookie, 0)
            .map(|per_cpu| per_cpu.iter().sum())
            .unwrap_or(0)
    }

    /// Takes a socket out of the maps. Closing it takes it out of the
    /// socket map as well; the other entries are the daemon's to remove.
    pub fn remove(&self, cookie: u64) {
        let _ = lock(&self.socks).remove(&cookie);
        let _ = lock(&self.peers).remove(&cookie);
        let _ = lock(&self.bytes).remove(&cookie);
    }
}
