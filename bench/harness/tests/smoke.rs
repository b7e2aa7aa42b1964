//! The benchmark's smoke run, so the harness never rots: every target
//! (direct, Sluice passthrough and intercepting, with a random secret bound
//! and with none, mitmproxy, Squid, nginx, and
//! a web app through the ingress and dialled directly) and every metric is exercised with tiny sizes, and the report, the figures
//! and the chart come out. Nothing is timed or compared: figures from a
//! smoke run mean nothing. Root, the release daemon (`SLUICE_BIN`) and the
//! peers (`cargo xtask test` and `cargo xtask setup` install them) are
//! required; a missing one fails loudly.

use std::process::{Command, Stdio};

use serde_json::Value;

#[test]
fn smoke_run_measures_every_target_and_writes_report_and_chart() {
    sluice_e2e::require_root();
    let sluice = sluice_e2e::sluice_bin();
    let out = tempfile::tempdir().expect("tempdir");
    let status = Command::new(env!("CARGO_BIN_EXE_sluice-bench"))
        .args(["run", "--smoke", "--out"])
        .arg(out.path())
        .env("SLUICE_BIN", &sluice)
        // The report is read from its file; progress stays on stderr.
        .stdout(Stdio::null())
        .status()
        .expect("start sluice-bench");
    assert!(
        status.success(),
        "sluice-bench run --smoke failed: {status}"
    );

    let report = std::fs::read_to_string(out.path().join("latest.md")).expect("latest.md");
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("results.json")).expect("results.json"),
    )
    .expect("results.json is JSON");
    let targets = results["targets"].as_array().expect("targets");
    let names: Vec<&str> = targets.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "direct-tcp",
            "direct-tls",
            "sluice-http",
            "passthrough-tls",
            "sluice-empty",
            "sluice-full",
            "sluice-nocred",
            "mitmproxy",
            "squid",
            "nginx",
            "direct-app",
            "ingress"
        ]
    );
    for target in targets {
        let metrics = target["metrics"].as_object().expect("metrics");
        let expected = match (target["name"].as_str(), target["baseline"].as_str()) {
            // Only 1 MiB bodies, against those with a credential bound.
            (Some("sluice-nocred"), _) => 1,
            (_, Some("direct-tls")) => 6,
            // Keep-alive requests/s and latency.
            (_, Some("direct-app")) => 2,
            _ => 5,
        };
        assert_eq!(metrics.len(), expected, "{target}");
        for (metric, result) in metrics {
            assert!(
                result["median"].as_f64().is_some_and(|v| v > 0.0),
                "{} {metric} has no figure: {result}\n{report}",
                target["name"]
            );
        }
        if expected == 1 {
            continue;
        }
        // Every proxy's memory after load is read; direct has no proxy.
        let keepalive = &target["metrics"]["rps_keepalive"];
        let proxied = !target["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("direct"));
        assert_eq!(
            keepalive["rss_after_kib_median"]
                .as_f64()
                .is_some_and(|k| k > 0.0),
            proxied,
            "{target}"
        );
        assert!(keepalive["cpu_us_per_request"].is_array(), "{target}");
        assert!(
            target["metrics"]["latency"]["latency"]["samples"]
                .as_u64()
                .is_some_and(|n| n > 0),
            "{target}"
        );
    }
    let memory = &results["memory"][0];
    assert_eq!(memory["target"], "sluice-full", "{results}");
    assert!(
        memory["connections"].as_u64().is_some_and(|n| n > 0),
        "{memory}"
    );
    assert!(report.contains("## Against the design targets"), "{report}");
    assert!(
        report.contains("## CPU and memory of the proxy"),
        "{report}"
    );
    assert!(report.contains("CPU µs / keep-alive request"), "{report}");
    assert!(report.contains("## Web-app ingress"), "{report}");
    // One random secret in a smoke run, bound for `sluice-full` and held
    // against the same pipeline with none.
    let secrets = results["secrets"].as_array().expect("secrets");
    assert_eq!(secrets.len(), 1, "{results}");
    assert_eq!(secrets[0]["target"], "sluice-full", "{results}");
    assert!(
        secrets[0]["len"].as_u64().is_some_and(|n| n >= 32),
        "{results}"
    );
    let bound = &results["bound_credential"];
    assert_eq!(bound["without"], "sluice-nocred", "{results}");
    assert!(bound["min"].as_f64().is_some_and(|r| r > 0.0), "{results}");
    assert!(
        report.contains("## 1 MiB bodies with a bound credential"),
        "{report}"
    );
    assert!(
        report.contains("| 1 MiB bodies with a bound credential ≥ 0.9× without, every secret | sluice-full / sluice-nocred bodies_1m: min "),
        "{report}"
    );
    let through = report
        .lines()
        .find(|l| l.starts_with("Through the ingress: requests/s "))
        .expect("the ingress's ratio and added p99");
    assert!(
        through.contains("added p99 ") && !through.contains("no figure"),
        "{report}"
    );
    let png = std::fs::read(out.path().join("chart.png")).expect("chart.png");
    assert!(png.starts_with(b"\x89PNG"), "chart.png is not a PNG");
}
