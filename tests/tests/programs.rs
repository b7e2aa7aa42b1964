//! Which program: the connect program records the process behind every
//! steered socket, and Sluice names it (`curl (pid 412)`) in the refusal a
//! sandbox gets and in the audit event; an `allow_out` rule with
//! `binaries` admits only the executables it lists.
//!
//! Real programs (curl, python3, git) in a registered cgroup, a plain-HTTP
//! upstream on 127.0.0.1 reached by test names.

use std::path::PathBuf;

use serde_json::{Value, json};
use sluice_e2e::{
    HttpsUpstream, TestCa, WAIT, in_cgroup,
    interception::{Curl, World, curl_args},
    python3,
    run::host,
};

/// Asks `url` (argv 1) with urllib from `python3`, `Host` argv 2, and
/// prints the status, then the body (HTTP errors included).
const PYTHON_GET: &str = r#"
import sys, urllib.request, urllib.error
request = urllib.request.Request(sys.argv[1], headers={"Host": sys.argv[2]})
try:
    with urllib.request.urlopen(request, timeout=20) as r:
        status, body = r.status, r.read()
except urllib.error.HTTPError as e:
    status, body = e.code, e.read()
print(status)
print(body.decode())
"#;

/// A world whose policy allows `git.test` to git alone and nothing else
/// by name: `denied.test` is refused to every program.
fn world(plain: &HttpsUpstream, git_binaries: &[String]) -> World {
    let policy = json!({ "network": {
        "allow_out": [{
            "to": "git.test",
            "ports": [plain.port()],
            "binaries": git_binaries,
        }],
        "deny_out": ["ALL_TRAFFIC"],
        "ssrf_guard": false,
    }});
    World::start(&TestCa::upstream(), &["git.test", "denied.test"], policy)
}

/// The executables git's HTTP transport runs: `git` and its helpers
/// (`git-remote-http`, which opens the connection), wherever this
/// machine's git lives.
fn git_binaries() -> Vec<String> {
    let out = host(&["git", "--exec-path"], WAIT);
    let exec_path = PathBuf::from(out.stdout_str().trim());
    let git = host(&["sh", "-c", "command -v git"], WAIT);
    let git = std::fs::canonicalize(git.stdout_str().trim()).expect("git on PATH");
    let helpers = std::fs::canonicalize(&exec_path).expect("git's exec path");
    vec![
        git.to_string_lossy().into_owned(),
        format!("{}/*", helpers.display()),
    ]
}

fn refused_naming(world: &World, body: &Value, program: &str, pid: u32) {
    assert_eq!(body["reason"], "denied_by_rule", "{body}");
    assert_eq!(body["process"], format!("{program} (pid {pid})"), "{body}");
    world
        .daemon
        .wait_audit(&format!("{program}'s refusal names it"), 1, |e| {
            e["event"] == "connection"
                && e["verdict"] == "deny"
                && e["host"] == "denied.test"
                && e["process"]["pid"] == pid
                && e["process"]["comm"] == program
                && e["process"]["exe"].is_string()
                && e["process"].get("cmdline").is_none()
        });
}

#[test]
fn refused_programs_are_named_by_name_and_pid() {
    let plain = HttpsUpstream::plain_v4();
    let world = world(&plain, &git_binaries());
    // By address, naming the host: the sandbox's DNS refuses the name.
    let url = format!("http://127.0.0.1:{}/x", plain.port());
    let named = ["-H", "Host: denied.test"];
    let curl = in_cgroup(&world.sb1).spawn(&curl_args(None, &url, &named));
    let pid = curl.pid();
    let curl = Curl::parse(curl.wait());
    assert_eq!(curl.code, 403, "{curl}");
    refused_naming(&world, &curl.json(), "curl", pid);

    let python = in_cgroup(&world.sb1).spawn_python(PYTHON_GET, &[&url, "denied.test"]);
    let pid = python.pid();
    let out = python.wait();
    let text = out.stdout_str();
    let (status, body) = text.split_once('\n').expect("status and body");
    assert_eq!(status, "403", "{out}");
    let body: Value = serde_json::from_str(body.trim()).expect("a JSON body");
    // The kernel names a process after the file it ran, cut to 15 bytes.
    let python = python3();
    let name = python.file_name().expect("a file").to_string_lossy();
    let comm = &name[..name.len().min(15)];
    refused_naming(&world, &body, comm, pid);
    assert_eq!(plain.request_count(), 0, "nothing reached the upstream");
}

#[test]
fn a_binaries_rule_admits_git_and_refuses_curl_to_the_same_host() {
    let plain = HttpsUpstream::plain_v4();
    let world = world(&plain, &git_binaries());
    let repo = format!("http://git.test:{}/repo.git", plain.port());

    // git reaches the host (the upstream is no git server: git fails
    // after its request arrived, which is all this needs).
    let _ = in_cgroup(&world.sb1).run(&["git", "ls-remote", &repo]);
    let requests = plain.wait_requests(1, WAIT);
    assert!(
        requests[0].path.starts_with("/repo.git/info/refs"),
        "{requests:#?}"
    );

    let curl = world.curl(&curl_args(None, &format!("{repo}/info/refs"), &[]));
    assert_eq!(curl.code, 403, "{curl}");
    let body = curl.json();
    assert_eq!(body["reason"], "binary_not_allowed", "{body}");
    assert_eq!(body["rule"], "p:network.allow_out[0]", "{body}");
    assert!(
        body["process"]
            .as_str()
            .is_some_and(|p| p.starts_with("curl (pid ")),
        "{body}"
    );
    assert_eq!(plain.request_count(), 1, "curl's request never arrived");
    world
        .daemon
        .wait_audit("curl refused by the binaries rule", 1, |e| {
            e["reason"] == "binary_not_allowed"
                && e["rule"] == "p:network.allow_out[0]"
                && e["process"]["comm"] == "curl"
        });
    world.daemon.wait_audit("git admitted", 1, |e| {
        e["verdict"] == "allow"
            && e["host"] == "git.test"
            && e["process"]["comm"]
                .as_str()
                .is_some_and(|c| c.starts_with("git"))
    });
}
