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

/// The bundle's path lies in a file system the sandbox writes: links it
/// planted there are refused or replaced, never written through as root.
#[test]
fn links_planted_in_the_sandbox_file_system_are_not_followed() {
    let ca = TestCa::upstream();
    let (_upstream, world) = World::intercepting(&ca, "upstream.test");
    let dir = world.daemon.dir();
    let host_file = dir.join("host-secret");
    std::fs::write(&host_file, "not the sandbox's").expect("write");
    let rootfs = dir.join("sb3-root");
    std::fs::create_dir_all(rootfs.join("etc/ssl")).expect("mkdir");
    // The temp name an earlier daemon wrote through, and the file itself.
    std::os::unix::fs::symlink(&host_file, rootfs.join("etc/ssl/sluice.sluice-tmp")).expect("link");
    std::os::unix::fs::symlink(&host_file, rootfs.join("etc/ssl/sluice.pem")).expect("link");
    // A directory that is a link to one outside.
    std::os::unix::fs::symlink(dir, rootfs.join("etc/pki")).expect("link");
    let _sb3 = world.daemon.root().child("sb3");
    let add = |id: &str, path: &std::path::Path| {
        world.daemon.cli(&[
            "sandbox",
            "add",
            id,
            "--cgroup",
            "sb3",
            "--policy",
            "p",
            "--ca-bundle",
            path.to_str().expect("utf-8 path"),
        ])
    };

    let out = add("sb3", &rootfs.join("etc/pki/host-secret"));
    out.expect_failure("a bundle path through a link");
    assert!(out.stderr_str().contains("symbolic link"), "{out}");

    add("sb3", &rootfs.join("etc/ssl/sluice.pem")).expect_success("sandbox add");
    assert_eq!(
        std::fs::read_to_string(&host_file).expect("read"),
        "not the sandbox's"
    );
    let bundle = std::fs::symlink_metadata(rootfs.join("etc/ssl/sluice.pem")).expect("stat");
    assert!(bundle.file_type().is_file(), "the link was replaced");
}
