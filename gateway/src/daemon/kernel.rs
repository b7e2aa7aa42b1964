//! The programs' own bookkeeping, brought to the operator: refusal counters
//! into metrics (on scrape), refusal events into the audit log.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use aya::maps::{MapData, RingBuf};
use gateway_common::Refusal;

use super::Daemon;
use crate::{
    audit::Event,
    process::{Process, comm_text},
    steer::ebpf::parse_event,
};

impl Daemon {
    /// Copies the kernel's refusal counters into the metrics (on scrape).
    pub(super) fn refresh_kernel_counters(&self, seen: &Mutex<HashMap<u32, u64>>) {
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        for (reason, total) in self.steering.refusal_counts() {
            let last = seen.entry(reason as u32).or_insert(0);
            if total > *last {
                self.metrics
                    .ebpf_refusals
                    .with_label_values(&[reason.as_str()])
                    .inc_by(total - *last);
                *last = total;
            }
        }
    }

    /// Turns the programs' refusal events into audit events.
    pub(super) async fn read_refusal_events(self: Arc<Self>, events: RingBuf<MapData>) {
        let mut fd = match crate::sys::poll_ring(events) {
            Ok(fd) => fd,
            Err(err) => {
                let err = err.to_string();
                tracing::error!(%err, "cannot poll the eBPF event ring; kernel refusals are counted but not audited");
                return;
            }
        };
        loop {
            let Ok(mut guard) = fd.readable_mut().await else {
                return;
            };
            let ring = guard.get_inner_mut();
            while let Some(item) = ring.next() {
                if let Some(event) = parse_event(&item) {
                    self.audit_kernel_refusal(&event);
                }
            }
            guard.clear_ready();
        }
    }

    fn audit_kernel_refusal(&self, event: &gateway_common::RefusalEvent) {
        let reason = Refusal::ALL
            .get(event.reason as usize)
            .map_or("unknown", |r| r.as_str());
        let path = self.root.find(event.cgroup);
        let owner = path
            .as_deref()
            .and_then(|p| self.read_registry().owner_of_path(p));
        let dst = (event.port != 0).then(|| event_addr(event).to_string());
        // Named by pid and `comm` only: the ring is read in order, and a
        // refused process may well be gone by now.
        let process = (event.process.tgid != 0).then(|| Process {
            pid: event.process.tgid,
            comm: comm_text(&event.process.comm),
            exe: None,
        });
        self.audit.record(&Event {
            event: "kernel_refusal",
            verdict: "deny",
            reason,
            sandbox: owner.as_ref().map(|o| o.sandbox.as_str()),
            session: owner.as_ref().and_then(|o| o.session.as_deref()),
            cgroup: Some(
                path.map(|p| p.display().to_string())
                    .unwrap_or_else(|| format!("id:{}", event.cgroup)),
            ),
            dst,
            detail: Some(format!(
                "type={} protocol={}",
                event.sock_type, event.protocol
            )),
            process: process.as_ref(),
            ..Event::default()
        });
    }
}

fn event_addr(event: &gateway_common::RefusalEvent) -> SocketAddr {
    let orig = gateway_common::OrigDst {
        addr: event.addr,
        port: event.port,
        family: event.family,
        via_port: 0,
        _pad: 0,
        identity: 0,
        netns: 0,
        process: event.process,
    };
    crate::steer::steered(&orig).dst
}
