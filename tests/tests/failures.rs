//! What fails how: Sluice with one of what it depends on broken. A lost
//! audit event never changes a decision and is never silent; what Sluice
//! cannot start without stops the start with a message naming it.

use std::time::Duration;

use serde_json::json;
use sluice_e2e::{
    DaemonBuilder, HttpsUpstream, WAIT, eventually, in_cgroup,
    interception::{Curl, curl_args},
};

/// The audit log on a full disk (`/dev/full`): the refusal still holds,
/// every lost event is counted, and the loss is logged.
#[test]
fn an_unwritable_audit_log_loses_events_loudly_and_decisions_hold() {
    let upstream = HttpsUpstream::plain_v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .policy_doc("p", json!({ "network": { "deny_out": ["ALL_TRAFFIC"] } }))
        .sandbox("sb1", &sb1, None, "p")
        .config_key("audit", json!("/dev/full"));
    let daemon = builder.start();

    let url = format!("http://127.0.0.1:{}/echo", upstream.port());
    let curl = Curl::parse(in_cgroup(&sb1).run(&curl_args(None, &url, &[])));
    assert_eq!(curl.code, 403, "{curl}");
    assert_eq!(upstream.request_count(), 0);
    daemon.wait_metric_at_least("sluice_audit_errors_total", 1.0);
    eventually("the loss logged", WAIT, || {
        let lines = daemon.stderr_lines();
        match lines.iter().any(|l| l.contains("audit event not written")) {
            true => Ok(()),
            false => Err(lines.join("\n")),
        }
    });
}

/// The metrics address taken by another process: the daemon does not
/// start, and says which address.
#[test]
fn a_taken_metrics_port_stops_the_start_naming_it() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr");
    let mut builder = DaemonBuilder::new();
    builder.config_key("metrics", json!(addr.to_string()));
    let out = builder.start_failing();
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr_str()
            .contains(&format!("binding metrics on {addr}")),
        "{out}"
    );
}

/// A CA key that does not parse: the daemon does not start (it would
/// otherwise mint nothing, or mint under a new CA no sandbox trusts), and
/// names the file.
#[test]
fn an_unreadable_ca_key_stops_the_start_naming_it() {
    let builder = DaemonBuilder::new();
    let ca = builder.dir().join("ca");
    std::fs::create_dir_all(&ca).expect("ca dir");
    std::fs::write(ca.join("ca.pem"), "not a certificate\n").expect("pem");
    std::fs::write(ca.join("ca.key"), "not a key\n").expect("key");
    let key = ca.join("ca.key");
    let perms = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    std::fs::set_permissions(&key, perms).expect("chmod");
    let out = builder.start_failing();
    assert!(!out.success(), "{out}");
    let stderr = out.stderr_str();
    assert!(stderr.contains("ca."), "the CA file is named:\n{out}");
}

/// The resolver down (its one name server a closed loopback port): the
/// sandbox's query for a name the policy allows is answered SERVFAIL, and
/// a connection naming it is refused, the name's address unverifiable.
/// Both wait out the resolver's own timeout first (5 s a try, two tries),
/// so the sandbox's clients are given longer than that here.
#[test]
fn a_resolver_that_is_down_fails_closed() {
    let closed = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let nameserver = closed.local_addr().expect("addr");
    drop(closed);
    let upstream = HttpsUpstream::plain_v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .policy_doc(
            "p",
            json!({ "network": {
                "allow_out": ["down.test"],
                "deny_out": ["ALL_TRAFFIC"],
                "ssrf_guard": false,
            }}),
        )
        .sandbox("sb1", &sb1, None, "p")
        .config_key(
            "resolver",
            json!({ "nameservers": [nameserver.to_string()], "system": false }),
        );
    let daemon = builder.start();

    let patient = in_cgroup(&sb1).timeout(Duration::from_secs(60));
    let query = sluice_e2e::scripts::DNS_QUERY.replace("settimeout(5)", "settimeout(30)");
    let out = patient.python(&query, &["127.0.0.1", "53", "down.test"]);
    let answer = out.json();
    assert_eq!(answer["rcode"], 2, "SERVFAIL: {out}");

    let url = format!("http://127.0.0.1:{}/echo", upstream.port());
    let named = ["-H", "Host: down.test", "--max-time", "30"];
    let curl = Curl::parse(patient.run(&curl_args(None, &url, &named)));
    assert_eq!(curl.code, 403, "{curl}");
    assert_eq!(curl.json()["reason"], "name_address_mismatch", "{curl}");
    assert_eq!(upstream.request_count(), 0);
    daemon.wait_audit("the refusal", 1, |e| e["reason"] == "name_address_mismatch");
}

/// Unmounts on drop, whatever the test did.
struct ReadOnly(std::path::PathBuf);

impl ReadOnly {
    /// `dir` bind-mounted over itself, read-only.
    fn mount(dir: &std::path::Path) -> ReadOnly {
        let path = dir.to_str().expect("utf-8 path");
        sluice_e2e::run::host(&["mount", "--bind", path, path], WAIT).expect_success("bind mount");
        let guard = ReadOnly(dir.to_owned());
        sluice_e2e::run::host(&["mount", "-o", "remount,bind,ro", path, path], WAIT)
            .expect_success("remount read-only");
        guard
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// state_dir read-only under a running daemon: a registration that could
/// not be saved is refused and undone (it would not survive a restart),
/// the error naming the directory; what was registered before still works.
#[test]
fn a_read_only_state_dir_refuses_registrations_it_cannot_keep() {
    let upstream = sluice_e2e::EchoServer::v4();
    let (daemon, sb1) =
        sluice_e2e::Daemon::with_sandbox(vec![sluice_e2e::Rule::exact(upstream.addr())]);
    let _sb2 = daemon.root().child("sb2");
    let state = daemon.dir().join("state");
    let _read_only = ReadOnly::mount(&state);

    let out = daemon.cli(&[
        "sandbox", "add", "sb2", "--cgroup", "sb2", "--policy", "default",
    ]);
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr_str().contains(&state.display().to_string()),
        "{out}"
    );
    let ids: Vec<String> = daemon
        .sandboxes()
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(ids, ["sb1"], "the unsaved registration was undone");

    let probe = in_cgroup(&sb1).python(
        sluice_e2e::scripts::TCP_PROBE,
        &[
            "127.0.0.1",
            &upstream.port().to_string(),
            &sluice_e2e::scripts::hex(b"still\n"),
        ],
    );
    probe.expect_success("the sandbox registered before still reaches its upstream");
}

/// Unmounts every bpffs at /sys/fs/bpf in the (private) mount namespace
/// it runs in, checks none is left, then runs its arguments.
const WITHOUT_BPFFS: &str = r#"
while [ "$(stat -f -c %T /sys/fs/bpf)" = bpf_fs ]; do umount -l /sys/fs/bpf || exit 3; done
exec "$@"
"#;

/// bpffs not mounted where the pins go: the daemon mounts it at
/// /sys/fs/bpf itself, pins there and enforces. Run in a private mount
/// namespace (`unshare --mount --propagation private`) whose bpffs was
/// unmounted first, so the host's mount and every other test's pins are
/// untouched; the namespace, its bpffs and the pins go with the daemon.
#[test]
fn an_unmounted_bpffs_is_mounted_by_the_daemon() {
    let upstream = HttpsUpstream::plain_v4();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .policy_doc("p", json!({ "network": { "deny_out": ["ALL_TRAFFIC"] } }))
        .sandbox("sb1", &sb1, None, "p");
    let pins = builder.bpffs_dir().to_owned();
    let daemon = builder.start_wrapped(&[
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        WITHOUT_BPFFS,
        "sh",
    ]);
    // Its namespace has a bpffs at /sys/fs/bpf again, mounted by the
    // daemon, holding its pins; the host's has none of them.
    let mountinfo = std::fs::read_to_string(format!("/proc/{}/mountinfo", daemon.pid()))
        .expect("the daemon's mountinfo");
    assert!(
        mountinfo
            .lines()
            .any(|l| l.split(' ').nth(4) == Some("/sys/fs/bpf") && l.contains(" - bpf ")),
        "{mountinfo}"
    );
    let in_ns = format!("/proc/{}/root{}", daemon.pid(), pins.display());
    assert!(
        std::fs::read_dir(&in_ns).is_ok_and(|mut d| d.next().is_some()),
        "no pins in the daemon's bpffs at {in_ns}"
    );
    assert!(!pins.exists(), "pins at {} on the host", pins.display());
    // And it enforces.
    let url = format!("http://127.0.0.1:{}/echo", upstream.port());
    let curl = Curl::parse(in_cgroup(&sb1).run(&curl_args(None, &url, &[])));
    assert_eq!(curl.code, 403, "{curl}");
    assert_eq!(upstream.request_count(), 0);
}
