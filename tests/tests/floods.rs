//! Floods a sandbox can send, and the limits that hold it while other
//! work goes on: connections to ever-new names each cost Sluice a
//! certificate signature, so minting is budgeted per sandbox.

use std::time::Instant;

use serde_json::json;
use sluice_e2e::{
    HttpsUpstream, TestCa, in_cgroup,
    interception::{Curl, World, intercepting_policy},
};

/// A sandbox opening TLS connections to many new names at once gets the
/// certificates its budget allows (`tls.max_mints_per_second`, twice that
/// at once); the rest are closed before the handshake, counted and
/// audited, and a name already minted is still served.
#[test]
fn new_names_beyond_the_mint_budget_are_refused() {
    const NAMES: usize = 8;
    let names: Vec<String> = (0..NAMES).map(|i| format!("n{i}.mint.test")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&names, &ca);
    let port = upstream.port();
    let policy = intercepting_policy(
        &["*.mint.test".to_owned(), format!("127.0.0.0/8:{port}")],
        json!({}),
    );
    let world = World::start_with(&ca, &names, policy, |builder| {
        builder.tls_key("max_mints_per_second", json!(1));
    });
    let url = |name: &str| format!("https://{name}:{port}/echo");
    let started = Instant::now();
    let running: Vec<_> = names
        .iter()
        .map(|name| in_cgroup(&world.sb1).spawn(&world.curl_https(&url(name), &[])))
        .collect();
    let codes: Vec<u16> = running
        .into_iter()
        .map(|r| Curl::parse(r.wait()).code)
        .collect();
    let elapsed = started.elapsed().as_secs();
    let served = codes.iter().filter(|&&c| c == 200).count();
    // Two at once, and one more for each second the burst took.
    assert!(
        (1..=2 + elapsed as usize).contains(&served),
        "{codes:?} in {elapsed} s"
    );
    assert!(codes.iter().all(|&c| c == 200 || c == 0), "{codes:?}");
    let refused = NAMES - served;
    let events = world.daemon.wait_audit("mint refusals", refused, |e| {
        e["reason"] == "mint_rate_limited" && e["rule"] == "tls.max_mints_per_second"
    });
    assert!(events.iter().all(|e| e["sandbox"] == "sb1"), "{events:?}");
    assert_eq!(
        world.metric(r#"sluice_connections_total{verdict="deny",reason="mint_rate_limited"}"#),
        refused as f64
    );
    // A name whose certificate was minted costs nothing to serve again.
    let minted = names[codes.iter().position(|&c| c == 200).expect("one served")];
    let again = world.curl(&world.curl_https(&url(minted), &[]));
    assert_eq!(again.code, 200, "{again}");
}
