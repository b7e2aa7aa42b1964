//! Steering: what a sandbox's sockets do once Sluice's programs are attached.
//! Allowed TCP is relayed byte-exact, other destinations are refused,
//! non-DNS UDP, raw sockets and transports other than TCP and UDP are
//! refused in the kernel, DNS is answered by Sluice, IPv6 behaves as IPv4,
//! and a sandbox in its own network namespace reaches loopback upstreams
//! only through Sluice.

use std::{
    ffi::OsStr,
    net::{IpAddr, Ipv4Addr},
};

use serde_json::Value;
use sluice_e2e::{
    Daemon, DaemonBuilder, EchoServer, HttpServer, HttpsUpstream, Rule, TestNetns, in_cgroup,
    python3, run,
    scripts::{self, curl_request_from_verbose},
    upstream::HTTP_BODY,
};

/// `curl` with flags that make a refusal a failure (also an HTTP 403).
fn curl(url: &str) -> Vec<String> {
    ["curl", "-sS", "-v", "--fail", "--max-time", "10", "-g", url]
        .map(str::to_owned)
        .to_vec()
}

fn is_connection(event: &Value, verdict: &str, sandbox: &str, dst: &str) -> bool {
    event["event"] == "connection"
        && event["verdict"] == verdict
        && event["sandbox"] == sandbox
        && event["dst"] == dst
}

#[test]
fn curl_request_reaches_allowed_upstream_byte_exact() {
    let upstream = HttpServer::v4();
    let (daemon, sb1) = Daemon::with_sandbox(vec![Rule::exact(upstream.addr())]);

    let url = format!("http://{}/some/path?q=1", upstream.addr());
    let mut args = curl(&url);
    args.extend(["-H".into(), "X-Sluice-Test: byte-exact".into()]);
    let out = in_cgroup(&sb1).run(&args);
    out.expect_success("curl from the sandbox to an allowed upstream");
    assert_eq!(out.stdout_str(), HTTP_BODY, "response body relayed back");

    let conns = upstream.wait_closed(1, sluice_e2e::WAIT);
    assert_eq!(
        conns.len(),
        1,
        "exactly one connection reached the upstream"
    );
    let sent = curl_request_from_verbose(&out.stderr_str());
    assert!(sent.starts_with("GET /some/path?q=1 HTTP/1.1\r\n"), "{out}");
    assert_eq!(
        String::from_utf8_lossy(&conns[0].received),
        sent,
        "the upstream must see exactly the bytes curl sent"
    );

    let events = daemon.wait_audit("allow sb1 → upstream", 1, |e| {
        is_connection(e, "allow", "sb1", &upstream.addr_string())
    });
    assert_eq!(
        events[0]["rule"], "default:network.allow_out[0]",
        "{}",
        events[0]
    );
    daemon.wait_metric_at_least("sluice_connections_total{verdict=\"allow\"}", 1.0);
}

#[test]
fn binary_payload_round_trips_byte_exact_with_half_close() {
    let upstream = EchoServer::v4();
    let (daemon, sb1) = Daemon::with_sandbox(vec![Rule::exact(upstream.addr())]);

    // Starts with a NUL (neither TLS nor HTTP), every byte value, then 1 MiB
    // of pseudo-random bytes.
    let mut payload: Vec<u8> = (0..=255u8).collect();
    let mut x: u32 = 0x1234_5678;
    payload.extend((0..1 << 20).map(|_| {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (x >> 24) as u8
    }));
    let input = daemon.dir().join("payload.bin");
    let output = daemon.dir().join("echoed.bin");
    std::fs::write(&input, &payload).expect("write payload");

    let out = in_cgroup(&sb1).python(
        scripts::SEND_FILE,
        &[
            "127.0.0.1",
            &upstream.port().to_string(),
            &input.to_string_lossy(),
            &output.to_string_lossy(),
        ],
    );
    out.expect_success("send a binary payload through sluice and read the echo");
    let echoed = std::fs::read(&output).expect("read echoed bytes");
    assert!(
        echoed == payload,
        "downstream bytes differ ({} vs {} bytes)",
        echoed.len(),
        payload.len()
    );

    let conns = upstream.wait_closed(1, sluice_e2e::WAIT);
    assert_eq!(conns.len(), 1);
    assert!(
        conns[0].received == payload,
        "upstream received {} bytes, expected the exact {} sent",
        conns[0].received.len(),
        payload.len()
    );

    let len = payload.len() as f64;
    daemon.wait_metric_at_least("sluice_relay_bytes_total{direction=\"upstream\"}", len);
    daemon.wait_metric_at_least("sluice_relay_bytes_total{direction=\"downstream\"}", len);
    daemon.wait_audit("allow sb1 → echo", 1, |e| {
        is_connection(e, "allow", "sb1", &upstream.addr_string())
    });
}

#[test]
fn disallowed_destination_is_refused_counted_and_audited() {
    let allowed = HttpServer::v4();
    let other = HttpServer::v4();
    let (daemon, sb1) = Daemon::with_sandbox(vec![Rule::exact(allowed.addr())]);

    let out = in_cgroup(&sb1).run(&curl(&format!("http://{}/", other.addr())));
    out.expect_failure("curl to a loopback port the policy does not allow");

    let events = daemon.wait_audit("deny sb1 → other", 1, |e| {
        is_connection(e, "deny", "sb1", &other.addr_string())
    });
    assert!(events[0]["reason"].is_string(), "{}", events[0]);
    daemon.wait_metric_at_least("sluice_connections_total{verdict=\"deny\"}", 1.0);
    assert_eq!(
        other.connection_count(),
        0,
        "a refused destination must never see a connection"
    );

    // The allowed one still works from the same sandbox.
    in_cgroup(&sb1)
        .run(&curl(&format!("http://{}/", allowed.addr())))
        .expect_success("curl to the allowed upstream");
}

/// A daemon whose sandbox sb1 may reach `upstream.test` (loopback, in
/// Sluice's resolver) on `port`, by a name rule only. The upstream is on
/// loopback and these tests are about the name rule, so the SSRF guard
/// (which would refuse loopback for a name) is off.
fn named_upstream(port: u16) -> (Daemon, sluice_e2e::TestCgroup) {
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .host("upstream.test", &[IpAddr::V4(Ipv4Addr::LOCALHOST)])
        .ssrf_guard(false)
        .policy("default", vec![Rule::host("upstream.test", &[port])])
        .sandbox("sb1", &sb1, None, "default");
    (builder.start(), sb1)
}

#[test]
fn host_rule_matches_http_host_and_resolved_address() {
    let upstream = HttpServer::v4();
    let port = upstream.port();
    let (daemon, sb1) = named_upstream(port);

    // The name resolves (for curl) to the upstream's address: allowed.
    let mut args = curl(&format!("http://upstream.test:{port}/named"));
    args.extend([
        "--resolve".into(),
        format!("upstream.test:{port}:127.0.0.1"),
    ]);
    in_cgroup(&sb1)
        .run(&args)
        .expect_success("curl with Host upstream.test");
    let events = daemon.wait_audit("allow by host rule", 1, |e| {
        is_connection(e, "allow", "sb1", &upstream.addr_string())
    });
    assert_eq!(events[0]["host"], "upstream.test", "{}", events[0]);
    assert_eq!(
        events[0]["rule"], "default:network.allow_out[0]",
        "{}",
        events[0]
    );

    // Same address and port, another name: refused before any byte leaves.
    let mut args = curl(&format!("http://127.0.0.1:{port}/other"));
    args.extend(["-H".into(), "Host: other.test".into()]);
    in_cgroup(&sb1)
        .run(&args)
        .expect_failure("curl with Host other.test");
    daemon.wait_audit("deny for Host other.test", 1, |e| {
        is_connection(e, "deny", "sb1", &upstream.addr_string())
    });
    assert_eq!(
        upstream.connection_count(),
        1,
        "only the allowed request arrived"
    );
}

/// A plain-HTTP connection is decided on its first request's Host; a later
/// request on it naming another host (reached through the same address:
/// name-based virtual hosting) must not ride on that decision.
#[test]
fn a_kept_alive_plain_http_connection_cannot_switch_host() {
    let upstream = HttpsUpstream::plain_v4();
    let port = upstream.port();
    let (daemon, sb1) = named_upstream(port);

    let out = in_cgroup(&sb1).python(
        scripts::KEEPALIVE_HOSTS,
        &[
            "127.0.0.1",
            &port.to_string(),
            "-",
            &format!("upstream.test:{port}"),
            &format!("upstream.test:{port}"),
            &format!("other.test:{port}"),
        ],
    );
    out.expect_success("three requests on one kept-alive connection");
    assert_eq!(
        out.json()["statuses"],
        serde_json::json!([200, 200, 421]),
        "{out}"
    );
    let hosts: Vec<String> = upstream
        .requests()
        .iter()
        .filter_map(|r| r.header("host").map(str::to_owned))
        .collect();
    assert_eq!(
        hosts,
        [
            format!("upstream.test:{port}"),
            format!("upstream.test:{port}")
        ],
        "the upstream must never see the other host"
    );
    let events = daemon.wait_audit("the switch refused", 1, |e| {
        e["event"] == "request" && e["verdict"] == "deny" && e["sandbox"] == "sb1"
    });
    assert_eq!(events[0]["reason"], "host_changed", "{}", events[0]);
}

/// An upgraded connection (a WebSocket) lives on after its HTTP
/// connection: it still holds its sandbox's connection slot.
#[test]
fn websockets_count_toward_the_connection_limit() {
    let upstream = HttpsUpstream::plain_v4();
    let port = upstream.port();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .host("upstream.test", &[IpAddr::V4(Ipv4Addr::LOCALHOST)])
        .ssrf_guard(false)
        .limit("max_connections_per_sandbox", serde_json::json!(2))
        .policy("default", vec![Rule::host("upstream.test", &[port])])
        .sandbox("sb1", &sb1, None, "default");
    let daemon = builder.start();
    let out = in_cgroup(&sb1).python(
        scripts::WEBSOCKETS_HELD,
        &[
            "127.0.0.1",
            &port.to_string(),
            &format!("upstream.test:{port}"),
            "2",
        ],
    );
    out.expect_success("three WebSocket upgrades");
    assert_eq!(
        out.json()["statuses"],
        serde_json::json!([101, 101, "closed"]),
        "{out}"
    );
    daemon.wait_metric_at_least(
        "sluice_connections_total{verdict=\"deny\",reason=\"connection_limit\"}",
        1.0,
    );
}

/// Plain HTTP is read with the same checks as decrypted HTTPS: a head
/// that frames its body two ways (request smuggling) is refused before
/// anything reaches the upstream.
#[test]
fn a_plain_http_request_framed_two_ways_is_refused() {
    let upstream = HttpsUpstream::plain_v4();
    let port = upstream.port();
    let (_daemon, sb1) = named_upstream(port);
    let smuggled = format!("0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: upstream.test:{port}\r\n\r\n");
    let raw = format!(
        "POST /echo HTTP/1.1\r\nHost: upstream.test:{port}\r\nContent-Length: {}\r\nTransfer-Encoding: chunked\r\n\r\n{smuggled}",
        smuggled.len()
    );
    let hex: String = raw.bytes().map(|b| format!("{b:02x}")).collect();
    let out = in_cgroup(&sb1).python(scripts::RAW_HTTP, &["127.0.0.1", &port.to_string(), &hex]);
    out.expect_success("a request framed two ways");
    assert_eq!(out.json()["status"], 400, "{out}");
    assert_eq!(upstream.request_count(), 0, "nothing reached the upstream");
}

/// Errors a refusal may surface as in Python: `PermissionError`.
fn is_permission_error(result: &Value) -> bool {
    result == "EPERM" || result == "EACCES"
}

#[test]
fn udp_other_than_dns_and_raw_sockets_are_refused() {
    let upstream = EchoServer::v4();
    let (daemon, sb1) = Daemon::with_sandbox(vec![Rule::exact(upstream.addr())]);

    // Control: outside any sandbox the same attempts work (we are root), so a
    // refusal below is Sluice's doing.
    let python = python3();
    let host = run::host(
        &[
            python.as_os_str(),
            OsStr::new("-c"),
            OsStr::new(scripts::FORBIDDEN_SOCKETS),
        ],
        sluice_e2e::WAIT,
    );
    host.expect_success("socket checks on the host");
    let host = host.json();
    for key in ["udp4_port9", "raw4_icmp", "raw4_tcp"] {
        assert_eq!(host[key], "ok", "on the host, {key} should work: {host}");
    }

    let out = in_cgroup(&sb1).python(scripts::FORBIDDEN_SOCKETS, &[]);
    out.expect_success("socket checks in the sandbox");
    let result = out.json();
    for key in [
        "udp4_port9",
        "udp6_port9",
        "raw4_icmp",
        "raw6_icmp",
        "raw4_tcp",
    ] {
        assert!(
            is_permission_error(&result[key]),
            "in the sandbox, {key} must fail with PermissionError: {result}"
        );
    }

    // Transports the connect hooks never see (UDP-Lite, SCTP) are refused
    // at socket(), where this kernel has them at all (the host shows it).
    let mut other_transports = 0;
    for key in ["udplite4", "udplite6", "sctp4"] {
        if host[key] == "ok" {
            other_transports += 1;
            assert!(
                is_permission_error(&result[key]),
                "in the sandbox, {key} must fail with PermissionError: {result}"
            );
        } else {
            eprintln!("{key}: not on this kernel ({}), not checked", host[key]);
        }
    }
    if other_transports > 0 {
        daemon.wait_metric_at_least("sluice_ebpf_refusals_total{reason=\"protocol\"}", 1.0);
    }

    daemon.wait_metric_at_least("sluice_ebpf_refusals_total{reason=\"udp_not_dns\"}", 1.0);
    daemon.wait_metric_at_least("sluice_ebpf_refusals_total{reason=\"raw_socket\"}", 1.0);
    daemon.wait_audit("kernel refusal udp_not_dns", 1, |e| {
        e["event"] == "kernel_refusal" && e["reason"] == "udp_not_dns"
    });
    daemon.wait_audit("kernel refusal raw_socket", 1, |e| {
        e["event"] == "kernel_refusal" && e["reason"] == "raw_socket"
    });
}

/// Packet sockets never reach the IP-level hooks (`sock_create` runs for
/// IPv4/IPv6 only), so Sluice refuses them with a cgroup BPF LSM program,
/// which only kernels running the BPF LSM without lockdown can load. Where it
/// loaded, the socket must fail; where it could not, the daemon must say so
/// (status omits the program and a warning names the gap), never pretend.
#[test]
fn packet_socket_is_refused_where_the_kernel_allows_it() {
    let upstream = EchoServer::v4();
    let (daemon, sb1) = Daemon::with_sandbox(vec![Rule::exact(upstream.addr())]);
    let out = in_cgroup(&sb1).python(scripts::FORBIDDEN_SOCKETS, &[]);
    out.expect_success("socket checks in the sandbox");
    let result = out.json();
    let lsm_attached = daemon
        .status()
        .programs
        .iter()
        .any(|p| p == "sluice_socket_create");
    if lsm_attached {
        assert!(
            is_permission_error(&result["packet"]),
            "an AF_PACKET socket must fail with PermissionError in a sandbox: {result}"
        );
        daemon.wait_audit("raw_socket refusal for AF_PACKET", 1, |e| {
            e["reason"] == "raw_socket"
                && e["detail"].as_str().is_some_and(|d| d.contains("type=3"))
        });
    } else {
        let warned = daemon
            .stderr_lines()
            .iter()
            .any(|l| l.contains("packet sockets are not refused"));
        assert!(
            warned,
            "without the LSM program the daemon must warn that packet sockets are not refused"
        );
        eprintln!(
            "NOTE: this kernel cannot load cgroup BPF LSM programs; AF_PACKET result here: {}",
            result["packet"]
        );
    }
}

#[test]
fn dns_queries_are_answered_by_sluice() {
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .host("upstream.test", &[IpAddr::V4(Ipv4Addr::LOCALHOST)])
        .policy("default", vec![Rule::host("upstream.test", &[])])
        .sandbox("sb1", &sb1, None, "default");
    let daemon = builder.start();

    // dig drops replies from an unexpected source, so an answer also proves
    // the reply appears to come from 127.0.0.53:53.
    let out = in_cgroup(&sb1).run(&[
        "dig",
        "+short",
        "+time=2",
        "+tries=1",
        "@127.0.0.53",
        "upstream.test",
    ]);
    out.expect_success("dig in the sandbox");
    assert_eq!(out.stdout_str().trim(), "127.0.0.1", "dig answer\n{out}");

    let out = in_cgroup(&sb1).python(scripts::DNS_QUERY, &["127.0.0.1", "53", "upstream.test"]);
    out.expect_success("python DNS query in the sandbox");
    let reply = out.json();
    assert_eq!(reply["id_match"], true, "{reply}");
    assert_eq!(reply["rcode"], 0, "{reply}");
    assert_eq!(
        reply["from"],
        serde_json::json!(["127.0.0.1", 53]),
        "{reply}"
    );
    assert_eq!(
        reply["answers"],
        serde_json::json!(["127.0.0.1"]),
        "{reply}"
    );

    daemon.wait_metric_at_least("sluice_dns_queries_total{result=\"answered\"}", 1.0);
    daemon.wait_metric_at_least("sluice_dns_queries_total", 2.0);
}

#[test]
fn ipv6_is_steered_like_ipv4() {
    let allowed = HttpServer::v6();
    let other = HttpServer::v6();
    let (daemon, sb1) = Daemon::with_sandbox(vec![Rule::cidr("::1/128", &[allowed.port()])]);

    let out = in_cgroup(&sb1).run(&curl(&format!("http://[::1]:{}/v6", allowed.port())));
    out.expect_success("curl to [::1] through sluice");
    assert_eq!(out.stdout_str(), HTTP_BODY);
    let conns = allowed.wait_closed(1, sluice_e2e::WAIT);
    assert_eq!(
        String::from_utf8_lossy(&conns[0].received),
        curl_request_from_verbose(&out.stderr_str())
    );
    daemon.wait_audit("allow sb1 → [::1]", 1, |e| {
        is_connection(e, "allow", "sb1", &allowed.addr_string())
    });

    in_cgroup(&sb1)
        .run(&curl(&format!("http://[::1]:{}/", other.port())))
        .expect_failure("curl to a disallowed [::1] port");
    daemon.wait_audit("deny sb1 → other [::1]", 1, |e| {
        is_connection(e, "deny", "sb1", &other.addr_string())
    });
    assert_eq!(other.connection_count(), 0);
}

#[test]
fn sandbox_in_own_netns_reaches_host_loopback_upstream() {
    let upstream = HttpServer::v4();
    let other = HttpServer::v4();
    let netns = TestNetns::new();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .policy("default", vec![Rule::exact(upstream.addr())])
        .sandbox("sb1", &sb1, Some(&netns), "default");
    let daemon = builder.start();
    let url = format!("http://{}/from-netns", upstream.addr());

    // Control: from that namespace but outside the sandbox cgroup, nothing
    // answers on 127.0.0.1:PORT (the upstream lives in the host namespace).
    let ns = format!("--net={}", netns.path().display());
    let mut args = vec!["nsenter".to_owned(), ns, "--".to_owned()];
    args.extend(curl(&url));
    run::host(&args, sluice_e2e::WAIT).expect_failure("curl in the netns, outside the sandbox");
    assert_eq!(upstream.connection_count(), 0);

    let out = in_cgroup(&sb1).netns(&netns).run(&curl(&url));
    out.expect_success("curl from the sandbox's own netns");
    assert_eq!(out.stdout_str(), HTTP_BODY);
    let conns = upstream.wait_closed(1, sluice_e2e::WAIT);
    assert_eq!(
        String::from_utf8_lossy(&conns[0].received),
        curl_request_from_verbose(&out.stderr_str())
    );
    daemon.wait_audit("allow sb1 (netns) → upstream", 1, |e| {
        is_connection(e, "allow", "sb1", &upstream.addr_string())
    });

    in_cgroup(&sb1)
        .netns(&netns)
        .run(&curl(&format!("http://{}/", other.addr())))
        .expect_failure("curl from the netns to a disallowed port");
    daemon.wait_audit("deny sb1 (netns) → other", 1, |e| {
        is_connection(e, "deny", "sb1", &other.addr_string())
    });
    assert_eq!(other.connection_count(), 0);
}

#[test]
fn dns_over_ipv6_is_answered_by_sluice() {
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .host("upstream.test", &[IpAddr::V4(Ipv4Addr::LOCALHOST)])
        .policy("default", vec![Rule::host("upstream.test", &[])])
        .sandbox("sb1", &sb1, None, "default");
    let daemon = builder.start();

    let out = in_cgroup(&sb1).python(scripts::DNS_QUERY, &["::1", "53", "upstream.test"]);
    out.expect_success("python DNS query to [::1]:53 in the sandbox");
    let reply = out.json();
    assert_eq!(reply["id_match"], true, "{reply}");
    assert_eq!(reply["from"][0], "::1", "reply source restored: {reply}");
    assert_eq!(reply["from"][1], 53, "reply source restored: {reply}");
    assert_eq!(
        reply["answers"],
        serde_json::json!(["127.0.0.1"]),
        "{reply}"
    );
    daemon.wait_metric_at_least("sluice_dns_queries_total{result=\"answered\"}", 1.0);
}

#[test]
fn dns_in_own_netns_is_answered_by_sluice() {
    let netns = TestNetns::new();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    builder
        .host("upstream.test", &[IpAddr::V4(Ipv4Addr::LOCALHOST)])
        .policy("default", vec![Rule::host("upstream.test", &[])])
        .sandbox("sb1", &sb1, Some(&netns), "default");
    let daemon = builder.start();

    let out = in_cgroup(&sb1).netns(&netns).run(&[
        "dig",
        "+short",
        "+time=2",
        "+tries=1",
        "@127.0.0.53",
        "upstream.test",
    ]);
    out.expect_success("dig in the sandbox's own netns");
    assert_eq!(out.stdout_str().trim(), "127.0.0.1", "dig answer\n{out}");
    daemon.wait_metric_at_least("sluice_dns_queries_total{result=\"answered\"}", 1.0);
}

/// A registration may name the host's own namespace (a process's
/// `/proc/PID/ns/net` that shares it): its sandbox is then served by the host
/// listeners, and removing it must leave them published for the others.
#[test]
fn a_sandbox_named_in_the_host_netns_leaves_its_listeners_alone() {
    let upstream = HttpServer::v4();
    let (daemon, sb1) = Daemon::with_sandbox(vec![Rule::exact(upstream.addr())]);
    let _sb2 = daemon.root().child("sb2");
    let url = format!("http://{}/", upstream.addr());
    // This process's namespace is the host's.
    let host_netns = format!("/proc/{}/ns/net", std::process::id());

    daemon
        .cli(&[
            "sandbox",
            "add",
            "sb2",
            "--cgroup",
            "sb2",
            "--netns",
            &host_netns,
            "--policy",
            "default",
        ])
        .expect_success("sandbox add in the host netns");
    daemon
        .cli(&["sandbox", "rm", "sb2"])
        .expect_success("sandbox rm");

    let out = in_cgroup(&sb1).run(&curl(&url));
    out.expect_success("curl from a host-netns sandbox after another left");
    assert_eq!(out.stdout_str(), HTTP_BODY);
}
