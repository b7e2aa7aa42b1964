//! The load generators. Closed loops measure capacity (requests, bytes,
//! handshakes per second); the open loop measures latency at a fixed rate,
//! from each request's intended send time, so a stalled target cannot hide
//! its tail by slowing the generator down (coordinated omission).

use std::{
    io::Write as _,
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _},
    task::JoinSet,
};

use super::dial::{Dialer, idle_source};
use crate::spec::{MEASURING, Outcome};

/// After the schedule ends, how long answers are still waited for.
const GRACE: Duration = Duration::from_secs(5);

/// Tells the harness the measured phase starts now (it samples the
/// proxy's CPU on this line); written through at once.
fn measuring() {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{MEASURING}");
    let _ = stdout.flush();
}

pub async fn bulk(dialer: Arc<Dialer>, bytes: u64) -> Outcome {
    let mut out = Outcome::default();
    let mut sender = match dialer.http().await {
        Ok(sender) => sender,
        Err(e) => {
            out.error(format!("{e:#}"));
            return out;
        }
    };
    measuring();
    let start = Instant::now();
    match dialer.get(&mut sender, bytes).await {
        Ok(n) => {
            out.ok = 1;
            out.bytes = n;
        }
        Err(e) => out.error(format!("{e:#}")),
    }
    out.secs = start.elapsed().as_secs_f64();
    out
}

/// `conns` loops of back-to-back GETs; keep-alive connections are opened
/// (and warmed with one request) before the clock starts.
pub async fn requests(
    dialer: Arc<Dialer>,
    size: u64,
    conns: usize,
    secs: f64,
    new_conn: bool,
) -> Outcome {
    let mut out = Outcome::default();
    let mut senders = Vec::new();
    if !new_conn {
        for _ in 0..conns {
            let warmed = async {
                let mut sender = dialer.http().await?;
                dialer.get(&mut sender, size).await?;
                anyhow::Ok(sender)
            };
            match warmed.await {
                Ok(sender) => senders.push(Some(sender)),
                Err(e) => {
                    out.error(format!("{e:#}"));
                    return out;
                }
            }
        }
    } else {
        senders.resize_with(conns, || None);
    }
    measuring();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let mut tasks = JoinSet::new();
    for mut sender in senders {
        let dialer = dialer.clone();
        tasks.spawn(async move {
            let mut out = Outcome::default();
            while Instant::now() < deadline {
                let result = async {
                    match sender.as_mut() {
                        Some(sender) => dialer.get(sender, size).await,
                        None => {
                            let mut fresh = dialer.http().await?;
                            dialer.get(&mut fresh, size).await
                        }
                    }
                };
                match result.await {
                    Ok(n) => {
                        out.ok += 1;
                        out.bytes += n;
                    }
                    Err(e) => {
                        out.error(format!("{e:#}"));
                        // A broken keep-alive connection is replaced.
                        if sender.is_some() {
                            match dialer.http().await {
                                Ok(fresh) => sender = Some(fresh),
                                Err(_) => break,
                            }
                        }
                    }
                }
            }
            out
        });
    }
    while let Some(part) = tasks.join_next().await {
        out.merge(part.unwrap_or_default());
    }
    out.secs = start.elapsed().as_secs_f64();
    out
}

pub async fn handshakes(dialer: Arc<Dialer>, conns: usize, secs: f64) -> Outcome {
    measuring();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let mut tasks = JoinSet::new();
    for _ in 0..conns {
        let dialer = dialer.clone();
        tasks.spawn(async move {
            let mut out = Outcome::default();
            while Instant::now() < deadline {
                match dialer.open().await {
                    Ok(mut io) => {
                        out.ok += 1;
                        let _ = io.shutdown().await;
                    }
                    Err(e) => out.error(format!("{e:#}")),
                }
            }
            out
        });
    }
    let mut out = Outcome::default();
    while let Some(part) = tasks.join_next().await {
        out.merge(part.unwrap_or_default());
    }
    out.secs = start.elapsed().as_secs_f64();
    out
}

/// Request `i` is due at `start + i / rate` and goes on connection
/// `i % conns`; its latency runs from when it was due to its last body byte.
pub async fn latency(
    dialer: Arc<Dialer>,
    size: u64,
    rate: u64,
    conns: usize,
    secs: f64,
) -> Outcome {
    let mut out = Outcome::default();
    let mut senders = Vec::new();
    for _ in 0..conns {
        let warmed = async {
            let mut sender = dialer.http().await?;
            dialer.get(&mut sender, size).await?;
            anyhow::Ok(sender)
        };
        match warmed.await {
            Ok(sender) => senders.push(sender),
            Err(e) => {
                out.error(format!("{e:#}"));
                return out;
            }
        }
    }
    let total = (rate as f64 * secs) as u64;
    measuring();
    let start = tokio::time::Instant::now() + Duration::from_millis(10);
    let hard_deadline = start + Duration::from_secs_f64(secs) + GRACE;
    let mut tasks = JoinSet::new();
    for (w, mut sender) in senders.into_iter().enumerate() {
        let dialer = dialer.clone();
        tasks.spawn(async move {
            let mut out = Outcome::default();
            let mut i = w as u64;
            while i < total {
                let due = start + Duration::from_secs_f64(i as f64 / rate as f64);
                if tokio::time::Instant::now() >= hard_deadline {
                    out.unfinished += (total - i).div_ceil(conns as u64);
                    break;
                }
                tokio::time::sleep_until(due).await;
                match tokio::time::timeout_at(hard_deadline, dialer.get(&mut sender, size)).await {
                    Ok(Ok(n)) => {
                        out.ok += 1;
                        out.bytes += n;
                        out.latencies_us.push(due.elapsed().as_micros() as u64);
                    }
                    Ok(Err(e)) => {
                        out.error(format!("{e:#}"));
                        match dialer.http().await {
                            Ok(fresh) => sender = fresh,
                            Err(_) => break,
                        }
                    }
                    Err(_) => out.unfinished += 1,
                }
                i += conns as u64;
            }
            out
        });
    }
    while let Some(part) = tasks.join_next().await {
        out.merge(part.unwrap_or_default());
    }
    out.secs = start.elapsed().as_secs_f64();
    out
}

/// Opens `n` connections (64 at a time, from loopback sources in turn so
/// 100,000 fit in the ephemeral ports), one request on each, reports
/// `READY <ok>` on stdout and holds them until stdin closes.
pub async fn idle(dialer: Arc<Dialer>, n: usize, size: u64) {
    const PARALLEL: usize = 64;
    let mut tasks = JoinSet::new();
    for w in 0..PARALLEL {
        let dialer = dialer.clone();
        let mine = n / PARALLEL + usize::from(w < n % PARALLEL);
        tasks.spawn(async move {
            let mut held = Vec::with_capacity(mine);
            let mut out = Outcome::default();
            for j in 0..mine {
                let source = idle_source(dialer.dial.addr, w + j * PARALLEL);
                let opened = async {
                    let mut sender = dialer.http_from(source).await?;
                    dialer.get(&mut sender, size).await?;
                    anyhow::Ok(sender)
                };
                match opened.await {
                    Ok(sender) => {
                        out.ok += 1;
                        held.push(sender);
                    }
                    Err(e) => out.error(format!("{e:#}")),
                }
            }
            (out, held)
        });
    }
    let mut out = Outcome::default();
    let mut held = Vec::new();
    while let Some(part) = tasks.join_next().await {
        if let Ok((part, senders)) = part {
            out.merge(part);
            held.extend(senders);
        }
    }
    if let Some(e) = &out.first_error {
        eprintln!("{} of {n} connections failed; the first: {e}", out.errors);
    }
    let mut stdout = tokio::io::stdout();
    let _ = stdout
        .write_all(format!("READY {}\n", out.ok).as_bytes())
        .await;
    let _ = stdout.flush().await;
    let mut line = String::new();
    let _ = tokio::io::BufReader::new(tokio::io::stdin())
        .read_line(&mut line)
        .await;
    drop(held);
}
