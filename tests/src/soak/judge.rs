//! Deciding, for the soak: when each fault happens, whether an error is
//! explained by a fault made meanwhile, and whether the daemon's growth
//! levels off. Pure, and tested with tables.

use super::proc_stats::Sample;

/// What the soak does to the daemon's world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// The TLS upstream stopped and started again on its port.
    RestartUpstream,
    /// The workers' policy changed for real (their connections close).
    ChangePolicy,
    /// A sandbox added, used, removed; a session likewise.
    Churn,
    ResolverServfail,
    ResolverSilent,
    ResolverHealthy,
    AuditSlow,
    AuditClosed,
    AuditFast,
}

/// One cycle of the soak, `(seconds into the cycle, action)`, for a cycle
/// of `cycle` seconds: every fault once, each over before the next begins,
/// the resolver and the audit sink healthy again by the cycle's end. Policy
/// files are rewritten every few seconds besides (not here: they excuse
/// nothing, an unchanged policy must not disturb a connection).
pub fn schedule(cycle: f64) -> Vec<(f64, Action)> {
    let at = |fraction: f64| cycle * fraction;
    vec![
        (at(0.10), Action::Churn),
        (at(0.15), Action::RestartUpstream),
        (at(0.25), Action::ResolverServfail),
        (at(0.35), Action::ResolverHealthy),
        (at(0.40), Action::ChangePolicy),
        (at(0.50), Action::ResolverSilent),
        (at(0.60), Action::ResolverHealthy),
        (at(0.60), Action::Churn),
        (at(0.65), Action::AuditSlow),
        (at(0.75), Action::AuditClosed),
        (at(0.85), Action::AuditFast),
    ]
}

/// A fault the soak made, in epoch seconds: from its start until the
/// world was whole again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fault {
    pub kind: Action,
    pub start: f64,
    pub end: f64,
}

/// How long after a fault ended its effects may still show: a pooled
/// upstream connection found dead, a query the resolver timed out on
/// (5 s a try, two tries) answered late, intercepted requests in flight
/// given 5 s to finish before a changed policy closes their connection.
pub const GRACE_SECS: f64 = 12.0;

/// The client's operations (`client.py`) a fault may make fail.
fn affects(kind: Action, op: &str) -> bool {
    const UPSTREAM: [&str; 4] = ["h1_keepalive", "h2", "sse", "ws"];
    match kind {
        Action::RestartUpstream => UPSTREAM.contains(&op),
        Action::ChangePolicy => UPSTREAM.contains(&op) || op == "h1_new",
        Action::ResolverServfail | Action::ResolverSilent => op == "dns_resolver",
        // The sink failing never changes what a sandbox sees; the churned
        // sandboxes are not the workers.
        _ => false,
    }
}

/// The fault that explains `op` failing between `t0` and `t1`, if any.
pub fn excuse(op: &str, t0: f64, t1: f64, faults: &[Fault]) -> Option<Action> {
    faults
        .iter()
        .find(|f| affects(f.kind, op) && t0 <= f.end + GRACE_SECS && t1 >= f.start)
        .map(|f| f.kind)
}

/// What growth may remain over the last third of a run, in each measure's
/// unit: allocator and connection noise, not a leak.
#[derive(Debug, Clone, Copy)]
pub struct Floor {
    pub rss_kib: f64,
    pub fds: f64,
    pub tasks: f64,
}

/// 8 MiB: glibc arenas and tokio's per-worker caches move by a few MiB with
/// the load; a leak of 1 KiB a request at the soak's rate (dozens a second)
/// adds more than that in the last third of a 30-minute run. 16
/// descriptors and 8 tasks: connections and blocking threads in flight
/// when a sample is taken.
pub const FLOOR: Floor = Floor {
    rss_kib: 8.0 * 1024.0,
    fds: 16.0,
    tasks: 8.0,
};

/// The least-squares slope of `points` (per second); 0 for fewer than two.
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 2 {
        return 0.0;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx == 0.0 { 0.0 } else { sxy / sxx }
}

/// Whether a measure levels off: the growth the last third's slope makes
/// over a third is within `floor`, or at most half of what the first
/// third's made (warm-up slows down; a leak grows as fast at the end as at
/// the start). `Err` says by how much it did not.
pub fn levels_off(points: &[(f64, f64)], floor: f64) -> Result<(), String> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Ok(());
    };
    let third = (last.0 - first.0) / 3.0;
    let early: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|p| p.0 <= first.0 + third)
        .collect();
    let late: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|p| p.0 >= last.0 - third)
        .collect();
    let early_growth = slope(&early) * third;
    let late_growth = slope(&late) * third;
    if late_growth <= floor || late_growth <= 0.5 * early_growth {
        Ok(())
    } else {
        Err(format!(
            "grew {late_growth:.1} over the last third (first third: {early_growth:.1}; \
             allowed: {floor:.1} or half the first)"
        ))
    }
}

/// Every measure that does not level off, named.
pub fn growth_failures(samples: &[Sample], floor: Floor) -> Vec<String> {
    let series = |f: fn(&Sample) -> u64| -> Vec<(f64, f64)> {
        samples.iter().map(|s| (s.secs, f(s) as f64)).collect()
    };
    [
        ("RSS (KiB)", series(|s| s.rss_kib), floor.rss_kib),
        ("open descriptors", series(|s| s.fds), floor.fds),
        ("tasks", series(|s| s.tasks), floor.tasks),
    ]
    .into_iter()
    .filter_map(|(name, points, floor)| {
        levels_off(&points, floor)
            .err()
            .map(|e| format!("{name}: {e}"))
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(from: f64, to: f64, f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        let mut points = Vec::new();
        let mut t = from;
        while t <= to {
            points.push((t, f(t)));
            t += 5.0;
        }
        points
    }

    /// A name, a series, whether it levels off.
    type Case = (&'static str, Vec<(f64, f64)>, bool);

    #[test]
    fn growth_that_levels_off_passes_and_a_leak_fails() {
        let cases: [Case; 7] = [
            ("flat", line(0.0, 1800.0, |_| 100.0), true),
            // Fast warm-up, then flat.
            (
                "warm-up",
                line(0.0, 1800.0, |t| {
                    100.0 + 50_000.0 * (1.0 - (-t / 200.0).exp())
                }),
                true,
            ),
            // 20 KiB a second throughout (12 MiB a third): a leak.
            (
                "linear leak",
                line(0.0, 1800.0, |t| 1000.0 + 20.0 * t),
                false,
            ),
            // 4 KiB a second (2.3 MiB a third): below the floor, not told apart
            // from noise in 30 minutes.
            ("small leak", line(0.0, 1800.0, |t| 1000.0 + 4.0 * t), true),
            // Flat, then growing at the end.
            (
                "late leak",
                line(0.0, 1800.0, |t| {
                    if t < 1200.0 { 0.0 } else { 20.0 * (t - 1200.0) }
                }),
                false,
            ),
            // Noise within the floor.
            (
                "noise",
                line(0.0, 1800.0, |t| {
                    if (t as u64 / 5).is_multiple_of(2) {
                        0.0
                    } else {
                        4000.0
                    }
                }),
                true,
            ),
            ("one point", vec![(0.0, 5.0)], true),
        ];
        for (name, points, ok) in cases {
            assert_eq!(levels_off(&points, FLOOR.rss_kib).is_ok(), ok, "{name}");
        }
    }

    #[test]
    fn slope_is_least_squares() {
        assert_eq!(slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]), 2.0);
        assert_eq!(slope(&[(1.0, 1.0)]), 0.0);
        assert_eq!(slope(&[(1.0, 1.0), (1.0, 2.0)]), 0.0);
    }

    #[test]
    fn an_error_is_excused_only_by_a_fault_that_can_cause_it_then() {
        let faults = [
            Fault {
                kind: Action::RestartUpstream,
                start: 100.0,
                end: 101.0,
            },
            Fault {
                kind: Action::ResolverSilent,
                start: 200.0,
                end: 210.0,
            },
            Fault {
                kind: Action::AuditClosed,
                start: 300.0,
                end: 310.0,
            },
        ];
        let cases = [
            ("ws", 99.0, 100.5, Some(Action::RestartUpstream)),
            (
                "h2",
                101.0 + GRACE_SECS - 1.0,
                120.0,
                Some(Action::RestartUpstream),
            ),
            ("h2", 101.0 + GRACE_SECS + 1.0, 120.0, None),
            ("h2", 90.0, 99.0, None),
            ("h1_new", 100.0, 100.5, None),
            ("dns_resolver", 205.0, 215.0, Some(Action::ResolverSilent)),
            ("dns_static", 205.0, 215.0, None),
            ("denied", 100.0, 101.0, None),
            // A sink that fails excuses nothing a sandbox sees.
            ("h1_keepalive", 300.0, 305.0, None),
        ];
        for (op, t0, t1, want) in cases {
            assert_eq!(excuse(op, t0, t1, &faults), want, "{op} {t0}..{t1}");
        }
    }

    #[test]
    fn a_cycle_makes_every_fault_once_and_ends_healthy() {
        let plan = schedule(100.0);
        assert!(plan.windows(2).all(|w| w[0].0 <= w[1].0), "in order");
        assert!(plan.iter().all(|(at, _)| (0.0..100.0).contains(at)));
        for action in [
            Action::RestartUpstream,
            Action::ChangePolicy,
            Action::ResolverServfail,
            Action::ResolverSilent,
            Action::AuditSlow,
            Action::AuditClosed,
        ] {
            assert_eq!(
                plan.iter().filter(|(_, a)| *a == action).count(),
                1,
                "{action:?}"
            );
        }
        let last = |kinds: &[Action]| {
            plan.iter()
                .rev()
                .find(|(_, a)| kinds.contains(a))
                .map(|p| p.1)
        };
        assert_eq!(
            last(&[
                Action::ResolverServfail,
                Action::ResolverSilent,
                Action::ResolverHealthy
            ]),
            Some(Action::ResolverHealthy)
        );
        assert_eq!(
            last(&[Action::AuditSlow, Action::AuditClosed, Action::AuditFast]),
            Some(Action::AuditFast)
        );
    }
}
