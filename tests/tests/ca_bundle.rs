//! The CA bundle Sluice writes into a sandbox's view at registration: its
//! own CA first, then the system roots, so the sandbox's clients trust
//! intercepted names without any other setup.

use sluice_e2e::{
    TestCa, in_cgroup,
    interception::{World, curl_args},
};

#[test]
fn registration_writes_a_bundle_the_sandbox_can_trust() {
    let ca = TestCa::upstream();
    let (upstream, world) = World::intercepting(&ca, "upstream.test");
    let port = upstream.port();
    let sb2 = world.daemon.root().child("sb2");
    let bundle = world.daemon.dir().join("sb2-root/etc/ssl/sluice.pem");
    let out = world.daemon.cli(&[
        "sandbox",
        "add",
        "sb2",
        "--cgroup",
        "sb2",
        "--policy",
        "p",
        "--ca-bundle",
        bundle.to_str().expect("utf-8 path"),
    ]);
    out.expect_success("sandbox add --ca-bundle");

    let written = std::fs::read_to_string(&bundle).expect("bundle written");
    let sluice_ca = std::fs::read_to_string(&world.sluice_ca).expect("Sluice CA");
    assert!(written.starts_with(&sluice_ca), "Sluice's CA comes first");

    let url = format!("https://upstream.test:{port}/echo");
    let args = curl_args(Some(bundle.to_str().expect("utf-8")), &url, &[]);
    let out = in_cgroup(&sb2).run(&args);
    out.expect_success("curl trusting only the written bundle");
    // curl_args prints the status code and HTTP version last.
    assert!(out.stdout_str().contains("\n200 "), "{out}");
}
