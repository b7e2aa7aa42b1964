//! A client process: moves itself into the target's cgroup when it has
//! one (so Sluice's eBPF programs steer it) and into its network namespace
//! when it has one (the published web app's), runs one measurement and
//! prints the outcome as one JSON line.

mod dial;
mod work;

use std::{io::Write as _, sync::Arc};

use anyhow::Context as _;

use crate::spec::{Dial, Work};

pub fn run(dial: Dial, work: Work) -> anyhow::Result<()> {
    // Before any thread exists: cgroup.procs moves the whole process.
    if let Some(cgroup) = &dial.cgroup {
        std::fs::write(cgroup.join("cgroup.procs"), std::process::id().to_string())
            .with_context(|| format!("joining cgroup {}", cgroup.display()))?;
    }
    // Before any thread exists too: setns moves the calling thread, and
    // the runtime's threads, made after, start in its namespace.
    if let Some(netns) = &dial.netns {
        crate::netns::enter(netns)?;
    }
    let dialer = Arc::new(dial::Dialer::new(dial)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(async move {
        let outcome = match work {
            Work::Bulk { bytes } => work::bulk(dialer, bytes).await,
            Work::Requests {
                size,
                conns,
                secs,
                new_conn,
            } => work::requests(dialer, size, conns, secs, new_conn).await,
            Work::Handshakes { conns, secs } => work::handshakes(dialer, conns, secs).await,
            Work::Latency {
                size,
                rate,
                conns,
                secs,
            } => work::latency(dialer, size, rate, conns, secs).await,
            Work::Idle { n, size } => {
                work::idle(dialer, n, size).await;
                // It reported on its READY line; nobody reads further.
                return None;
            }
        };
        Some(outcome)
    });
    let Some(outcome) = outcome else {
        runtime.shutdown_background();
        return Ok(());
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", serde_json::to_string(&outcome)?)?;
    stdout.flush()?;
    // Held connections and tasks go with the process.
    runtime.shutdown_background();
    Ok(())
}
