//! `sluice status --text`: the daemon's status as an operator reads it.
//! Pure, so the layout is tested without a daemon.

use std::fmt::Write as _;

use super::api::Status;

/// Renders `status`; `now_ms` (Unix milliseconds) dates the refusals.
pub fn render(status: &Status, now_ms: u64) -> String {
    let mut out = String::new();
    let state = if status.draining {
        "draining (no new connections)"
    } else if status.ready {
        "ready"
    } else {
        "NOT READY"
    };
    let line = |out: &mut String, label: &str, value: &str| {
        let _ = writeln!(out, "{label:<16}{value}");
    };
    line(&mut out, "sluice", &format!("{} ({state})", status.version));
    line(
        &mut out,
        "cgroup root",
        &status.cgroup_root.display().to_string(),
    );
    line(
        &mut out,
        "steering port",
        &format!("{} (127.0.0.1 and ::1)", status.tcp_port),
    );
    line(
        &mut out,
        "metrics",
        status.metrics_addr.as_deref().unwrap_or("off"),
    );
    line(
        &mut out,
        "programs",
        &format!(
            "{} attached: {}",
            status.programs.len(),
            status.programs.join(", ")
        ),
    );
    for map in &status.maps {
        line(
            &mut out,
            "map",
            &format!("{} {}/{}", map.name, map.entries, map.capacity),
        );
    }
    line(
        &mut out,
        "sandboxes",
        &format!(
            "{} ({} cgroups with sessions)",
            status.sandboxes, status.registered_cgroups
        ),
    );
    let sync = if status.policies.synchronized {
        "in sync"
    } else {
        "OUT OF SYNC (last reload failed; previous policies in force)"
    };
    line(
        &mut out,
        "policies",
        &format!(
            "{sync}: {} from {} ({})",
            status.policies.loaded.len(),
            status.policies.dir.display(),
            status.policies.loaded.join(", ")
        ),
    );
    let kernel: Vec<String> = status
        .kernel_refusals
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(reason, n)| format!("{reason}={n}"))
        .collect();
    line(
        &mut out,
        "kernel refusals",
        &if kernel.is_empty() {
            "none".to_owned()
        } else {
            kernel.join(" ")
        },
    );
    if status.recent_refusals.is_empty() {
        line(&mut out, "recent refusals", "none");
    } else {
        let _ = writeln!(out, "recent refusals (newest first):");
        for r in &status.recent_refusals {
            let ago = now_ms.saturating_sub(r.ts_ms) / 1000;
            let mut text = format!(
                "  {ago:>5}s ago  {:<14} {:<28} {}",
                r.event,
                r.reason,
                r.sandbox.as_deref().unwrap_or("-")
            );
            if let Some(dst) = &r.dst {
                let _ = write!(text, " -> {dst}");
            }
            if let Some(name) = &r.name {
                let _ = write!(text, " ({name})");
            }
            if let Some(rule) = &r.rule {
                let _ = write!(text, " rule {rule}");
            }
            let _ = writeln!(out, "{text}");
        }
    }
    if !status.overlays.is_empty() {
        let _ = writeln!(out, "overlays (allow rules added at run time):");
        for (sandbox, targets) in &status.overlays {
            let _ = writeln!(out, "  {sandbox:<20} {}", targets.join(", "));
        }
    }
    if !status.apps.is_empty() {
        let _ = writeln!(out, "published apps:");
        for app in &status.apps {
            let _ = writeln!(
                out,
                "  {:<20} {}:{:<6} {:<14} {}",
                app.name, app.sandbox, app.port, app.scope, app.url
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::admin::api::{MapStatus, PolicySync, RecentRefusal};

    #[test]
    fn renders_every_section() {
        let status = Status {
            ready: true,
            version: "1.2.3".into(),
            cgroup_root: PathBuf::from("/sys/fs/cgroup/sluice"),
            metrics_addr: Some("127.0.0.1:9464".into()),
            tcp_port: 15001,
            sandboxes: 2,
            programs: vec!["sluice_connect4".into(), "sluice_sockops".into()],
            draining: false,
            registered_cgroups: 3,
            maps: vec![MapStatus {
                name: "SLUICE_IDENTITY".into(),
                entries: 3,
                capacity: 65536,
            }],
            policies: PolicySync {
                synchronized: false,
                dir: PathBuf::from("/etc/sluice/policies"),
                loaded: vec!["default".into()],
            },
            kernel_refusals: [
                ("unregistered_cgroup".to_owned(), 4),
                ("map_full".to_owned(), 0),
            ]
            .into(),
            recent_refusals: vec![RecentRefusal {
                ts_ms: 10_000,
                event: "connection".into(),
                reason: "no_rule".into(),
                rule: Some("default:deny_out[0]".into()),
                sandbox: Some("sb1".into()),
                dst: Some("192.0.2.1:443".into()),
                name: Some("example.com".into()),
            }],
            explicit_proxy_addr: None,
            apps: vec![],
            ingress_addrs: vec![],
            overlays: [("sb1".to_owned(), vec!["api.test:443".to_owned()])].into(),
        };
        let text = render(&status, 25_000);
        for want in [
            "1.2.3 (ready)",
            "sb1                  api.test:443",
            "2 attached: sluice_connect4, sluice_sockops",
            "SLUICE_IDENTITY 3/65536",
            "2 (3 cgroups with sessions)",
            "OUT OF SYNC",
            "unregistered_cgroup=4",
            "15s ago",
            "sb1 -> 192.0.2.1:443 (example.com) rule default:deny_out[0]",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        assert!(
            !text.contains("map_full"),
            "zero counters are left out:\n{text}"
        );
    }
}
