//! The harness itself, without a daemon: sandboxed commands land in their
//! cgroup and namespace, cleanup kills and removes, upstream servers record
//! exactly, and the Python clients report what they see. If these fail, the
//! other tests' failures say nothing about Sluice.

use std::{
    net::{TcpListener, UdpSocket},
    time::Duration,
};

use sluice_e2e::{
    EchoServer, HttpServer, TestCgroup, TestNetns, WAIT, cgroup2_mount, in_cgroup, python3,
    require_root, run,
    scripts::{self, curl_request_from_verbose, hex},
    upstream::HTTP_BODY,
    wait_until,
};

fn host_python(script: &str, args: &[&str]) -> run::Output {
    let python = python3().to_string_lossy().into_owned();
    let mut all = vec![python.as_str(), "-c", script];
    all.extend_from_slice(args);
    run::host(&all, WAIT)
}

#[test]
fn sandboxed_command_runs_in_its_cgroup_and_netns() {
    require_root();
    let cgroup = TestCgroup::new_unique(&cgroup2_mount(), "sluice-harness");
    let relative = cgroup
        .path()
        .strip_prefix(cgroup2_mount())
        .expect("under the mount")
        .to_string_lossy()
        .into_owned();

    let out = in_cgroup(&cgroup).run(&["cat", "/proc/self/cgroup"]);
    out.expect_success("cat /proc/self/cgroup");
    assert!(
        out.stdout_str()
            .lines()
            .any(|l| l == format!("0::/{relative}")),
        "{out}"
    );

    let netns = TestNetns::new();
    let out =
        in_cgroup(&cgroup)
            .netns(&netns)
            .run(&["sh", "-c", "cat /proc/self/cgroup; ip -o link"]);
    out.expect_success("cgroup and links inside the netns");
    let stdout = out.stdout_str();
    assert!(
        stdout.lines().any(|l| l == format!("0::/{relative}")),
        "{out}"
    );
    let links: Vec<&str> = stdout.lines().filter(|l| l.contains(": <")).collect();
    assert_eq!(links.len(), 1, "only lo in the namespace: {out}");
    assert!(
        links[0].contains(": lo: <") && links[0].contains("UP"),
        "{out}"
    );
}

#[test]
fn sandboxed_command_is_killed_at_its_timeout() {
    require_root();
    let cgroup = TestCgroup::new_unique(&cgroup2_mount(), "sluice-harness");
    let out = in_cgroup(&cgroup)
        .timeout(Duration::from_millis(300))
        .run(&["sleep", "60"]);
    assert!(out.timed_out, "{out}");
    assert!(!out.success());
}

#[test]
fn cgroup_drop_kills_processes_and_removes_the_tree() {
    require_root();
    let parent = TestCgroup::new_unique(&cgroup2_mount(), "sluice-harness");
    let child = parent.child("a");
    let grandchild = child.child("b");
    let mut sleeper = in_cgroup(&grandchild).spawn(&["sleep", "600"]);
    wait_until("the sleeper to be in its cgroup", WAIT, || {
        !grandchild.procs().is_empty()
    });
    let path = parent.path().to_owned();
    // Dropping the parent first: it must take the whole tree with it.
    drop(parent);
    assert!(!path.exists(), "{} still exists", path.display());
    wait_until("the sleeper to die", WAIT, || sleeper.finished());
    // The children's own drops find nothing left to do.
    drop(grandchild);
    drop(child);
}

#[test]
fn echo_server_records_and_echoes_exactly() {
    require_root();
    let echo = EchoServer::v4();
    let payload = b"\x00\x01binary\xff\r\n";
    let out = host_python(
        scripts::TCP_PROBE,
        &["127.0.0.1", &echo.port().to_string(), &hex(payload)],
    );
    out.expect_success("echo probe");
    let conns = echo.wait_closed(1, WAIT);
    assert_eq!(conns[0].received, payload);

    let echo6 = EchoServer::v6();
    let out = host_python(
        scripts::TCP_PROBE,
        &["::1", &echo6.port().to_string(), &hex(payload)],
    );
    out.expect_success("echo probe over IPv6");
    assert_eq!(echo6.addr_string(), format!("[::1]:{}", echo6.port()));

    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in");
    let output = dir.path().join("out");
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&input, &big).expect("write");
    host_python(
        scripts::SEND_FILE,
        &[
            "127.0.0.1",
            &echo.port().to_string(),
            &input.to_string_lossy(),
            &output.to_string_lossy(),
        ],
    )
    .expect_success("send file");
    assert!(std::fs::read(&output).expect("read") == big);
    let conns = echo.wait_closed(2, WAIT);
    assert!(conns[1].received == big);
}

#[test]
fn http_server_records_the_request_curl_sent() {
    require_root();
    let http = HttpServer::v4();
    let url = format!("http://{}/p?x=1", http.addr());
    let out = run::host(&["curl", "-sS", "-v", "--fail", "-H", "X-A: b", &url], WAIT);
    out.expect_success("curl");
    assert_eq!(out.stdout_str(), HTTP_BODY);
    let conns = http.wait_closed(1, WAIT);
    assert_eq!(
        String::from_utf8_lossy(&conns[0].received),
        curl_request_from_verbose(&out.stderr_str())
    );
}

#[test]
fn many_connections_script_counts_successes() {
    require_root();
    let echo = EchoServer::v4();
    let out = host_python(
        scripts::MANY_CONNECTIONS,
        &["127.0.0.1", &echo.port().to_string(), "host", "50"],
    );
    out.expect_success("50 connections");
    assert_eq!(out.json()["succeeded"], 50);
    assert_eq!(echo.wait_closed(50, WAIT).len(), 50);
}

#[test]
fn dns_script_parses_answers_and_source() {
    require_root();
    let server = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
    let port = server.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        let (n, peer) = server.recv_from(&mut buf).expect("recv query");
        let mut reply = buf[..n].to_vec();
        reply[2] = 0x81; // response, recursion desired
        reply[3] = 0x80; // recursion available, rcode 0
        reply[7] = 1; // one answer
        reply.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]);
        server.send_to(&reply, peer).expect("send reply");
    });
    let out = host_python(
        scripts::DNS_QUERY,
        &["127.0.0.1", &port.to_string(), "upstream.test"],
    );
    out.expect_success("dns query");
    let reply = out.json();
    assert_eq!(reply["id_match"], true, "{reply}");
    assert_eq!(reply["from"], serde_json::json!(["127.0.0.1", port]));
    assert_eq!(reply["answers"], serde_json::json!(["127.0.0.1"]));
}

#[test]
fn silent_client_reports_how_it_ended() {
    require_root();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let python = python3().to_string_lossy().into_owned();
    let handle = std::thread::spawn(move || {
        run::host(
            &[
                python.as_str(),
                "-c",
                scripts::SILENT_CLIENT,
                "127.0.0.1",
                &port.to_string(),
            ],
            WAIT,
        )
    });
    let (stream, _) = listener.accept().expect("accept");
    drop(stream);
    let out = handle.join().expect("client thread");
    out.expect_success("silent client");
    assert_eq!(out.json()["ended"], "eof", "{out}");
}
