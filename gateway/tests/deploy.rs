//! The files in deploy/ agree with the daemon: every metric the Grafana
//! dashboard queries is one the daemon exports, and the Kubernetes
//! ConfigMaps hold a config and policies that load.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use serde::Deserialize as _;
use serde_json::Value;
use sluice::{
    config::Config,
    metrics::Metrics,
    policy::load::{Against, load_paths},
};

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(path)
}

/// Every PromQL expression in a dashboard (panels, rows, variables).
fn expressions(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                match (key.as_str(), inner) {
                    ("expr" | "definition", Value::String(expr)) => out.push(expr.clone()),
                    ("query", Value::String(expr)) if expr.contains("sluice_") => {
                        out.push(expr.clone());
                    }
                    _ => expressions(inner, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| expressions(item, out)),
        _ => {}
    }
}

#[test]
fn every_metric_the_dashboard_queries_is_exported() {
    let path = deploy("grafana/sluice.json");
    let text = std::fs::read_to_string(&path).expect("dashboard");
    let dashboard: Value = serde_json::from_str(&text).expect("dashboard is JSON");
    let mut exprs = Vec::new();
    expressions(&dashboard, &mut exprs);
    assert!(exprs.len() > 20, "too few queries found: {exprs:?}");

    let exported: BTreeSet<String> = Metrics::new().names.into_iter().collect();
    let name = regex::Regex::new(r"\bsluice_[a-z0-9_]+").expect("regex");
    let mut queried = BTreeSet::new();
    for expr in &exprs {
        for found in name.find_iter(expr) {
            queried.insert(found.as_str().to_owned());
        }
    }
    let unknown: Vec<&String> = queried
        .iter()
        .filter(|q| {
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| q.strip_suffix(suffix))
                .unwrap_or(q);
            !exported.contains(*q) && !exported.contains(base)
        })
        .collect();
    assert!(
        unknown.is_empty(),
        "the dashboard queries metrics the daemon does not export: {unknown:?}\nexported: {exported:?}"
    );
    // The panels the operations guide promises.
    for metric in [
        "sluice_sandbox_connections_total",
        "sluice_audit_events_total",
        "sluice_request_duration_seconds_bucket",
        "sluice_pii_detections_total",
        "sluice_injection_detections_total",
        "sluice_approvals_parked",
        "sluice_credential_injections_total",
        "sluice_credential_refusals_total",
        "sluice_certificate_cache_entries",
        "sluice_policy_synchronized",
        "sluice_ebpf_refusals_total",
        "sluice_ebpf_map_entries",
    ] {
        assert!(queried.contains(metric), "no panel queries {metric}");
    }
    // Every panel has a title and a unique id, and its queries a datasource.
    let mut ids = BTreeSet::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        assert!(
            panel["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{panel}"
        );
        assert!(
            ids.insert(panel["id"].as_u64().expect("id")),
            "duplicate id: {panel}"
        );
        for target in panel["targets"].as_array().into_iter().flatten() {
            assert_eq!(target["datasource"]["uid"], "${datasource}", "{panel}");
        }
    }
}

/// The ConfigMaps of deploy/kubernetes/configmap.yaml, by name.
fn config_maps() -> Vec<(String, serde_yaml::Mapping)> {
    let text = std::fs::read_to_string(deploy("kubernetes/configmap.yaml")).expect("configmap");
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| {
            let doc = serde_yaml::Value::deserialize(doc).expect("YAML document");
            assert_eq!(doc["kind"], "ConfigMap", "{doc:?}");
            let name = doc["metadata"]["name"].as_str().expect("name").to_owned();
            let data = doc["data"].as_mapping().expect("data").clone();
            (name, data)
        })
        .collect()
}

#[test]
fn the_kubernetes_config_and_policies_load() {
    let maps = config_maps();
    let data = |name: &str| {
        maps.iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d.clone())
            .unwrap_or_else(|| panic!("no ConfigMap {name}"))
    };
    let config_text = data("sluice-config")["sluice.yaml"]
        .as_str()
        .expect("sluice.yaml")
        .to_owned();
    let config = Config::parse(Path::new("configmap.yaml:sluice.yaml"), &config_text)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.policy_dir, Path::new("/etc/sluice/policies"));
    assert!(
        config.metrics.is_some_and(|m| m.ip().is_unspecified()),
        "with host networking the probes need a reachable metrics address"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    for (file, text) in data("sluice-policies") {
        let file = file.as_str().expect("file name");
        std::fs::write(dir.path().join(file), text.as_str().expect("policy text")).expect("write");
    }
    let catalogue = sluice::apps::Catalogue::compile(&config.apps)
        .unwrap_or_else(|errors| panic!("{}", errors.join("\n")));
    // As the daemon loads them: apps and credential bindings checked.
    let against = Against {
        apps: Some(&catalogue),
        credentials: Some(&config.credentials),
    };
    let set = load_paths(&[dir.path().to_owned()], against).unwrap_or_else(|diagnostics| {
        let all: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
        panic!("{}", all.join("\n"))
    });
    assert!(
        set.get("default").is_some(),
        "sandboxes default to `default`"
    );
}
