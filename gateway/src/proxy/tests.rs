//! In-process tests of the connection path: the real listener and relay, with
//! a mock original-destination source and upstreams on 127.0.0.1.

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
    sync::watch,
};

use super::{Identities, Limits, Proxy, Standing, Who};
use crate::{
    audit::Audit,
    dns,
    metrics::Metrics,
    policy::{compiled::CompiledPolicy, raw},
    resolve::Resolver,
    steer::{MockOrigDst, Steered},
};

const NETNS: u64 = 42;
const IDENTITY: u64 = 7;
/// Connections the test sandbox may have open at once.
const PER_SANDBOX: usize = 4;

struct OneSandbox(Arc<CompiledPolicy>);

impl Identities for OneSandbox {
    fn who(&self, identity: u64) -> Option<Who> {
        (identity == IDENTITY).then(|| Who {
            identity: Some(IDENTITY),
            sandbox: Arc::from("sb1"),
            session: None,
            policy: self.0.clone(),
            dns: Arc::new(dns::Open),
            dry_run: false,
            tools: None,
            process: None,
            overlay: None,
        })
    }
}

/// This test's own thread, as the connect program records a caller.
fn this_thread() -> gateway_common::ProcessId {
    let name = std::fs::read("/proc/thread-self/comm").expect("comm");
    let name = name.strip_suffix(b"\n").unwrap_or(&name);
    let mut comm = [0u8; 16];
    comm[..name.len()].copy_from_slice(name);
    gateway_common::ProcessId {
        tgid: std::process::id(),
        tid: nix::unistd::gettid().as_raw() as u32,
        comm,
    }
}

/// Everything holds until [`Revocable::revoke`], as after a reload or a
/// removal.
struct Revocable {
    changes: watch::Sender<u64>,
    holds: AtomicBool,
}

impl Revocable {
    fn new() -> Revocable {
        Revocable {
            changes: watch::Sender::new(0),
            holds: AtomicBool::new(true),
        }
    }

    fn revoke(&self) {
        self.holds.store(false, Ordering::SeqCst);
        self.changes.send_modify(|n| *n += 1);
    }
}

impl Standing for Revocable {
    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn holds(&self, _: &Who) -> bool {
        self.holds.load(Ordering::SeqCst)
    }
}

/// A policy `p` from its `network` section, in YAML.
fn policy(network: &str) -> Arc<CompiledPolicy> {
    policy_doc(&format!("network:\n{network}"))
}

/// A policy `p` from its YAML.
fn policy_doc(yaml: &str) -> Arc<CompiledPolicy> {
    let raw: raw::Policy = serde_yaml::from_str(yaml).expect("test policy parses");
    Arc::new(CompiledPolicy::compile("p", &raw).expect("test policy compiles"))
}

struct Harness {
    proxy: Arc<Proxy>,
    proxy_addr: SocketAddr,
    orig: Arc<MockOrigDst>,
    standing: Arc<Revocable>,
    metrics: Arc<Metrics>,
    audit_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Harness {
    async fn start(policy: Arc<CompiledPolicy>, hosts: &[(&str, IpAddr)]) -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        let audit_path = dir.path().join("audit.jsonl");
        let metrics = Arc::new(Metrics::new());
        let audit =
            Audit::open(audit_path.to_str().expect("utf-8"), metrics.clone()).expect("audit");
        let mut static_hosts = BTreeMap::new();
        for (name, ip) in hosts {
            static_hosts.insert((*name).to_owned(), vec![*ip]);
        }
        let resolver = Resolver::static_only(&static_hosts);
        let orig = Arc::new(MockOrigDst::default());
        let standing = Arc::new(Revocable::new());
        let proxy = Arc::new(Proxy {
            orig: orig.clone(),
            interceptor: None,
            identities: Arc::new(OneSandbox(policy)),
            standing: standing.clone(),
            resolver: Arc::new(resolver),
            metrics: metrics.clone(),
            audit,
            limits: Limits {
                sniff: Duration::from_millis(300),
                connect: Duration::from_secs(5),
            },
            drain: crate::drain::Drain::new(),
            quota: crate::proxy::quota::Quota::new(PER_SANDBOX),
            relayer: Default::default(),
            processes: Arc::new(crate::process::Processes::new("/proc")),
            approvals: Arc::new(crate::approvals::Approvals::new(
                Arc::default(),
                &crate::approvals::ApprovalsConfig {
                    timeout_ms: 10_000,
                    ..Default::default()
                },
                None,
                metrics.clone(),
            )),
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let proxy_addr = listener.local_addr().expect("addr");
        tokio::spawn(proxy.clone().serve(listener, NETNS));
        Harness {
            proxy,
            proxy_addr,
            orig,
            standing,
            metrics,
            audit_path,
            _dir: dir,
        }
    }

    /// Connects as a sandbox that asked for `dst`.
    async fn connect(&self, dst: SocketAddr) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .bind("127.0.0.1:0".parse().expect("addr"))
            .expect("bind");
        let local = socket.local_addr().expect("local");
        self.orig.insert(
            NETNS,
            local,
            Steered {
                dst,
                identity: IDENTITY,
                process: this_thread(),
            },
        );
        socket.connect(self.proxy_addr).await.expect("connect")
    }

    fn count(&self, verdict: &str, reason: &str) -> u64 {
        self.metrics
            .connections
            .with_label_values(&[verdict, reason])
            .get()
    }

    async fn audit(&self) -> Vec<serde_json::Value> {
        let text = tokio::fs::read_to_string(&self.audit_path)
            .await
            .unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).expect("audit line is JSON"))
            .collect()
    }
}

/// An upstream that echoes what it reads, prefixed with "echo:".
async fn echo_upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut got = Vec::new();
                let _ = stream.read_to_end(&mut got).await;
                let _ = stream.write_all(b"echo:").await;
                let _ = stream.write_all(&got).await;
            });
        }
    });
    addr
}

/// Reads until EOF; a reset counts as the end too and is reported.
async fn read_all(stream: &mut TcpStream) -> (Vec<u8>, bool) {
    let mut got = Vec::new();
    let reset = stream.read_to_end(&mut got).await.is_err();
    (got, reset)
}

#[tokio::test]
async fn allowed_by_address_relays_exact_bytes_both_ways() {
    let upstream = echo_upstream().await;
    let rules = format!(
        "  allow_out: [\"127.0.0.1:{}\"]\n  deny_out: [ALL_TRAFFIC]\n",
        upstream.port()
    );
    let h = Harness::start(policy(&rules), &[]).await;
    let mut client = h.connect(upstream).await;
    let payload: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    client.write_all(&payload).await.expect("write");
    client.shutdown().await.expect("half-close");
    let (got, reset) = read_all(&mut client).await;
    assert!(!reset);
    assert_eq!(&got[..5], b"echo:");
    assert_eq!(&got[5..], &payload[..]);
    // Nothing in the policy reads the bytes: relayed unread, and said so.
    assert_eq!(h.count("allow", "relayed_unread"), 1);
    let audit = h.audit().await;
    assert_eq!(audit[0]["verdict"], "allow");
    assert_eq!(audit[0]["reason"], "relayed_unread");
    assert_eq!(audit[0]["rule"], "p:network.allow_out[0]");
    assert_eq!(audit[0]["sandbox"], "sb1");
    assert_eq!(audit[0]["dst"], upstream.to_string());
}

/// One sandbox cannot hold more than its share of connections: the one
/// past it is refused, counted and audited, and a slot given back is
/// taken again.
#[tokio::test]
async fn a_sandbox_past_its_connection_limit_is_refused() {
    let upstream = echo_upstream().await;
    let rules = format!(
        "  allow_out: [\"127.0.0.1:{}\"]\n  deny_out: [ALL_TRAFFIC]\n",
        upstream.port()
    );
    let h = Harness::start(policy(&rules), &[]).await;
    let mut open = Vec::new();
    for _ in 0..PER_SANDBOX {
        open.push(h.connect(upstream).await);
    }
    // The echo upstream holds each open until the client half-closes.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while h.count("allow", "relayed_unread") < PER_SANDBOX as u64 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "connections admitted"
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut over = h.connect(upstream).await;
    let (got, _) = read_all(&mut over).await;
    assert!(got.is_empty(), "refused: {got:?}");
    assert_eq!(h.count("deny", "connection_limit"), 1);
    let audit = h.audit().await;
    let denied = audit
        .iter()
        .find(|e| e["reason"] == "connection_limit")
        .expect("audited");
    assert_eq!(denied["rule"], "config:limits.max_connections_per_sandbox");
    assert_eq!(denied["sandbox"], "sb1");

    // One closes: its slot is free again.
    let mut first = open.remove(0);
    first.shutdown().await.expect("half-close");
    let _ = read_all(&mut first).await;
    drop(first);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let mut again = h.connect(upstream).await;
        let _ = again.write_all(b"x").await;
        let _ = again.shutdown().await;
        let (got, _) = read_all(&mut again).await;
        if got == b"echo:x" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "a slot never came back"
        );
    }
}

/// A relayed connection is decided once; a reload or a removal that
/// revokes what it was admitted under must still end it.
#[tokio::test]
async fn a_revoked_relay_is_reset_on_both_sides_and_counted() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let upstream = listener.local_addr().expect("addr");
    let rules = format!(
        "  allow_out: [\"127.0.0.1:{}\"]\n  deny_out: [ALL_TRAFFIC]\n",
        upstream.port()
    );
    let h = Harness::start(policy(&rules), &[]).await;
    let mut client = h.connect(upstream).await;
    let (mut server, _) = listener.accept().await.expect("accept");
    client.write_all(b"ping").await.expect("write");
    let mut got = [0; 4];
    server.read_exact(&mut got).await.expect("relayed up");
    server.write_all(b"pong").await.expect("write");
    client.read_exact(&mut got).await.expect("relayed down");
    assert_eq!(&got, b"pong");

    h.standing.revoke();
    let (got, reset) = read_all(&mut client).await;
    assert!(got.is_empty() && reset, "the sandbox sees the cut");
    let (got, reset) = read_all(&mut server).await;
    assert!(got.is_empty() && reset, "so does the upstream");
    assert_eq!(h.count("closed", "revoked"), 1);
}

#[tokio::test]
async fn not_allowed_is_refused_with_the_rule_counted_and_audited() {
    let upstream = echo_upstream().await;
    let h = Harness::start(
        policy("  allow_out: [good.test]\n  deny_out: [ALL_TRAFFIC]\n"),
        &[],
    )
    .await;

    // Plain HTTP: a 403 whose JSON body names the rule.
    let mut client = h.connect(upstream).await;
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: x.test\r\n\r\n")
        .await
        .expect("write");
    let (got, _) = read_all(&mut client).await;
    let text = String::from_utf8(got).expect("utf-8");
    assert!(text.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{text}");
    let body: serde_json::Value =
        serde_json::from_str(text.split("\r\n\r\n").nth(1).expect("body")).expect("JSON");
    assert_eq!(body["rule"], "p:network.deny_out[0]");
    assert_eq!(body["reason"], "denied_by_rule");

    // Anything else (bytes that are neither HTTP nor TLS): a reset.
    let mut client = h.connect(upstream).await;
    client.write_all(b"\x00\x01binary").await.expect("write");
    let (got, reset) = read_all(&mut client).await;
    assert!(
        got.is_empty() && reset,
        "a refusal is a reset, nothing relayed"
    );

    assert_eq!(h.count("deny", "denied_by_rule"), 2);
    let audit = h.audit().await;
    assert_eq!(audit[0]["verdict"], "deny");
    assert_eq!(audit[0]["rule"], "p:network.deny_out[0]");
    assert_eq!(audit[0]["host"], "x.test");
}

#[tokio::test]
async fn host_rules_need_the_name_to_resolve_to_the_connected_address() {
    let upstream = echo_upstream().await;
    let port = upstream.port();
    let right: IpAddr = "127.0.0.1".parse().expect("ip");
    let wrong: IpAddr = "127.0.0.2".parse().expect("ip");
    // Loopback upstream, name rules under test: the SSRF guard is off here.
    let rules = format!(
        "  allow_out: [\"good.test:{port}\", \"fronted.test:{port}\"]\n  deny_out: [ALL_TRAFFIC]\n  ssrf_guard: false\n"
    );
    let h = Harness::start(
        policy(&rules),
        &[("good.test", right), ("fronted.test", wrong)],
    )
    .await;

    let mut ok = h.connect(upstream).await;
    ok.write_all(b"GET / HTTP/1.1\r\nHost: good.test\r\n\r\n")
        .await
        .expect("write");
    ok.shutdown().await.expect("half-close");
    let _ = read_all(&mut ok).await;
    // Allowed by the name; this proxy has no interceptor to serve plain
    // HTTP with, so it refuses rather than relay it unread.
    assert_eq!(h.count("allow", "rule_matched"), 1);
    assert_eq!(h.count("deny", "no_interceptor"), 1);
    let audit = h.audit().await;
    assert_eq!(audit[0]["rule"], "p:network.allow_out[0]");
    assert_eq!(audit[0]["host"], "good.test");

    let mut forged = h.connect(upstream).await;
    forged
        .write_all(b"GET / HTTP/1.1\r\nHost: fronted.test\r\n\r\n")
        .await
        .expect("write");
    let (got, _) = read_all(&mut forged).await;
    assert!(got.starts_with(b"HTTP/1.1 403"), "{got:?}");
    assert_eq!(h.count("deny", "name_address_mismatch"), 1);
}

#[tokio::test]
async fn unsteered_connections_are_refused() {
    let h = Harness::start(policy("  allow_out: [ALL_TRAFFIC]\n"), &[]).await;
    let mut client = TcpStream::connect(h.proxy_addr).await.expect("connect");
    let (got, reset) = read_all(&mut client).await;
    assert!(got.is_empty() && reset);
    assert_eq!(h.count("deny", "no_original_destination"), 1);
}

#[tokio::test]
async fn silent_and_vanishing_clients_cost_nothing_but_a_count() {
    let upstream = echo_upstream().await;
    let rules = format!(
        "  allow_out: [\"good.test:{}\"]\n  deny_out: [ALL_TRAFFIC]\n",
        upstream.port()
    );
    let h = Harness::start(policy(&rules), &[]).await;

    // Silent: the sniff timeout passes, then the address alone decides (deny).
    let mut silent = h.connect(upstream).await;
    let (_, reset) = read_all(&mut silent).await;
    assert!(reset);
    assert_eq!(h.count("deny", "denied_by_rule"), 1);

    // Closes at once: counted, not audited.
    let gone = h.connect(upstream).await;
    drop(gone);
    for _ in 0..200 {
        if h.count("closed", "client_closed_early") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(h.count("closed", "client_closed_early"), 1);
    assert_eq!(
        h.audit().await.len(),
        1,
        "only the silent client's denial is audited"
    );
    assert!(Path::new(&h.audit_path).exists());
}

/// A DNS gate that refuses every question.
struct RefuseAll;

impl dns::Gate for RefuseAll {
    fn admit(&self, _: &str, _: hickory_proto::rr::RecordType) -> dns::Admission {
        dns::Admission::Refuse(hickory_proto::op::ResponseCode::Refused, "refused")
    }
    fn keep(&self, _: IpAddr) -> bool {
        false
    }
}

/// Whether a plain-HTTP Host names the address dialled is asked of the
/// resolver as the sandbox's own question: a name its DNS gate refuses
/// (denied, over a cap) is never looked up, so a Host cannot carry data to
/// a name server past the sandbox's DNS policy.
#[tokio::test]
async fn a_host_the_sandboxs_dns_gate_refuses_is_never_resolved() {
    let named: IpAddr = "10.1.2.3".parse().expect("ip");
    let h = Harness::start(
        policy("  allow_out: [10.0.0.0/8]\n"),
        &[("named.test", named)],
    )
    .await;
    let who = OneSandbox(policy("  allow_out: [10.0.0.0/8]\n"))
        .who(IDENTITY)
        .expect("the sandbox");
    let dst = SocketAddr::new(named, 80);
    assert!(h.proxy.named_address(&who, "named.test", dst, &[]).await);
    let refused = Who {
        dns: Arc::new(RefuseAll),
        ..who
    };
    assert!(
        !h.proxy
            .named_address(&refused, "named.test", dst, &[])
            .await
    );
}

/// On a port only address rules cover, the first bytes are read only when
/// something needs them: a stage that reads plain HTTP, or the ECH check.
/// What was read shows in the allow event's `host` and reason; what is
/// read is never relayed unread (this proxy has no interceptor, so it
/// refuses what it would have served).
#[tokio::test]
async fn first_bytes_are_read_where_a_stage_or_the_ech_check_needs_them() {
    let upstream = echo_upstream().await;
    let network = format!(
        "network:\n  allow_out: [\"127.0.0.1:{}\"]\n  deny_out: [ALL_TRAFFIC]\n",
        upstream.port()
    );
    let cases = [
        ("", false),
        ("pii:\n  enabled: true\n", true),
        ("dry_run: true\n", true),
        ("  encrypted_client_hello: refuse\n", true),
    ];
    for (extra, read) in cases {
        // Appended: top-level keys, or (indented) more of `network`.
        let h = Harness::start(policy_doc(&format!("{network}{extra}")), &[]).await;
        let mut client = h.connect(upstream).await;
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: named.test\r\n\r\n")
            .await
            .expect("write");
        client.shutdown().await.expect("half-close");
        let (got, _) = read_all(&mut client).await;
        assert_eq!(got.starts_with(b"echo:"), !read, "{extra:?}");
        assert_eq!(
            h.count("deny", "no_interceptor"),
            u64::from(read),
            "{extra:?}"
        );
        let audit = h.audit().await;
        assert_eq!(audit[0]["verdict"], "allow", "{extra:?}");
        let (reason, host) = if read {
            ("rule_matched", "named.test")
        } else {
            ("relayed_unread", "")
        };
        assert_eq!(audit[0]["reason"], reason, "{extra:?}");
        assert_eq!(audit[0]["host"].as_str().unwrap_or(""), host, "{extra:?}");
    }
}

/// Wherever the policy reads the first bytes, bytes that are not a
/// complete, well-formed ClientHello or request head are refused (a 400
/// naming why where they are recognisably HTTP, a reset otherwise),
/// counted and audited with what reads them; the upstream gets nothing.
/// Under address rules alone the same bytes are relayed unread.
#[tokio::test]
async fn unreadable_first_bytes_are_refused_where_the_policy_reads_them() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let upstream = listener.local_addr().expect("addr");
    let reached = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = reached.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut sink = Vec::new();
                let _ = stream.read_to_end(&mut sink).await;
            });
        }
    });
    let address_only = format!(
        "network:\n  allow_out: [\"127.0.0.1:{}\"]\n  deny_out: [ALL_TRAFFIC]\n",
        upstream.port()
    );
    let body = "{\"card\": \"4111 1111 1111 1111\"}";
    let with = |head: &str| format!("{head}content-length: {}\r\n\r\n{body}", body.len());
    let mut hello = vec![0x16, 0x03, 0x01, 0x00, 0x10, 0x01, 0x00, 0x00, 0x0c];
    hello.extend([0xee; 12]); // a hello whose body does not parse
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<u8>, Option<&str>)> = vec![
        ("two hosts", with("POST / HTTP/1.1\r\nhost: 127.0.0.1\r\nhost: other.test\r\n").into_bytes(), Some("http_duplicate_host")),
        ("userinfo", with("POST / HTTP/1.1\r\nhost: u@127.0.0.1\r\n").into_bytes(), Some("http_userinfo")),
        ("absolute form elsewhere", with("POST http://other.test/ HTTP/1.1\r\nhost: 127.0.0.1\r\n").into_bytes(), Some("http_host_mismatch")),
        ("obs-fold", with("POST / HTTP/1.1\r\nhost: 127.0.0.1\r\nx-a: 1\r\n 2\r\n").into_bytes(), Some("http_obs_fold")),
        ("bad hello", hello, None),
        ("ssh", b"SSH-2.0-OpenSSH_9.6\r\n".to_vec(), None),
    ];
    for (name, bytes, http_reason) in cases {
        for (extra, reader) in [
            ("pii:\n  enabled: true\n", "pii"),
            (
                "  decide_without_decryption: false\n",
                "network.decide_without_decryption",
            ),
        ] {
            let before = reached.load(Ordering::SeqCst);
            let h = Harness::start(policy_doc(&format!("{address_only}{extra}")), &[]).await;
            let mut client = h.connect(upstream).await;
            client.write_all(&bytes).await.expect("write");
            let (got, reset) = read_all(&mut client).await;
            let text = String::from_utf8_lossy(&got);
            let audit = h.audit().await;
            let denied = audit
                .iter()
                .find(|e| e["verdict"] == "deny")
                .expect("audited");
            assert_eq!(denied["rule"], format!("p:{reader}"), "{name}");
            match http_reason {
                Some(reason) => {
                    assert!(
                        text.starts_with("HTTP/1.1 400 Bad Request\r\n"),
                        "{name}: {text}"
                    );
                    assert!(
                        text.contains(&format!("\"reason\":\"{reason}\"")),
                        "{name}: {text}"
                    );
                    assert_eq!(denied["reason"], reason, "{name}");
                    assert_eq!(h.count("deny", reason), 1, "{name}");
                }
                None => assert!(got.is_empty() && reset, "{name}: {text}"),
            }
            assert_eq!(
                reached.load(Ordering::SeqCst),
                before,
                "{name}: the upstream got nothing"
            );
        }
        // Nothing reads them under address rules alone: relayed unread.
        let h = Harness::start(policy_doc(&address_only), &[]).await;
        let mut client = h.connect(upstream).await;
        client.write_all(&bytes).await.expect("write");
        client.shutdown().await.expect("half-close");
        let _ = read_all(&mut client).await;
        assert_eq!(h.count("allow", "relayed_unread"), 1, "{name}");
    }
}

/// A client that trickles a well-formed head past the sniff timeout is
/// refused, not relayed: the timeout never decides on the address alone
/// where the policy reads the bytes.
#[tokio::test]
async fn a_sniff_timeout_refuses_where_the_policy_reads() {
    let upstream = echo_upstream().await;
    let doc = format!(
        "network:\n  allow_out: [\"127.0.0.1:{}\"]\n  deny_out: [ALL_TRAFFIC]\npii:\n  enabled: true\n",
        upstream.port()
    );
    let h = Harness::start(policy_doc(&doc), &[]).await;
    let mut client = h.connect(upstream).await;
    client
        .write_all(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("write");
    let (got, _) = read_all(&mut client).await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 400"), "{text}");
    assert!(text.contains("http_incomplete"), "{text}");
    assert_eq!(h.count("deny", "http_incomplete"), 1);
    // Silent: a reset, counted.
    let mut silent = h.connect(upstream).await;
    let (got, reset) = read_all(&mut silent).await;
    assert!(got.is_empty() && reset);
    assert_eq!(h.count("deny", "sniff_timeout"), 1);
}

/// The program behind a connection is named in the refusal's body and in
/// every audit event of the connection; an `allow_out` rule with
/// `binaries` admits only those executables (this test binary here).
#[tokio::test]
async fn refusals_name_the_program_and_binaries_decide_who_may_connect() {
    let upstream = echo_upstream().await;
    let exe = std::fs::read_link("/proc/self/exe").expect("exe");
    let exe = exe.to_str().expect("utf-8");
    let h = Harness::start(
        policy(&format!(
            "  allow_out:\n    - {{to: mine.test, binaries: ['{exe}']}}\n    - {{to: theirs.test, binaries: [/usr/bin/git]}}\n  deny_out: [ALL_TRAFFIC]\n  verify_name_resolution: false\n  ssrf_guard: false\n"
        )),
        &[],
    )
    .await;
    let pid = std::process::id();

    let mut client = h.connect(upstream).await;
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: theirs.test\r\n\r\n")
        .await
        .expect("write");
    let (got, _) = read_all(&mut client).await;
    let text = String::from_utf8(got).expect("utf-8");
    assert!(text.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{text}");
    let body: serde_json::Value =
        serde_json::from_str(text.split("\r\n\r\n").nth(1).expect("body")).expect("JSON");
    assert_eq!(body["reason"], "binary_not_allowed");
    assert_eq!(body["rule"], "p:network.allow_out[1]");
    let named = body["process"].as_str().expect("the program is named");
    assert!(named.ends_with(&format!(" (pid {pid})")), "{named}");

    let mut client = h.connect(upstream).await;
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: mine.test\r\n\r\n")
        .await
        .expect("write");
    let _ = read_all(&mut client).await;

    let audit = h.audit().await;
    let refused = &audit[0];
    assert_eq!(refused["reason"], "binary_not_allowed");
    assert_eq!(refused["process"]["pid"], pid);
    assert_eq!(refused["process"]["exe"], exe);
    // Never the command line: it carries what the program was given.
    assert!(refused["process"].get("cmdline").is_none());
    let admitted = audit
        .iter()
        .find(|event| event["host"] == "mine.test")
        .expect("the admitted connection is audited");
    assert_eq!(admitted["verdict"], "allow", "{audit:#?}");
    assert_eq!(admitted["rule"], "p:network.allow_out[0]");
    assert_eq!(admitted["process"]["exe"], exe);
}

/// A connection the policy asks about waits at its first bytes for a
/// person (the card names the destination, the asking rule and the
/// program); approved for the session, the sandbox's next connection to
/// the same name passes unasked; rejected, a plain-HTTP client gets 403
/// naming the rule. Every step is counted and audited.
#[tokio::test]
async fn asked_connections_wait_for_a_person() {
    use crate::approvals::{CardKind, DecisionSpec, Verdict};
    let h = Harness::start(policy("  unmatched: ask\n  ssrf_guard: false\n"), &[]).await;
    let dst: SocketAddr = "127.0.0.1:9".parse().expect("addr");
    let get = |host: &str| format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n");
    let card = || async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(card) = h.proxy.approvals.list().pop() {
                return card;
            }
            assert!(tokio::time::Instant::now() < deadline, "never parked");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let decide = |id: &str, verdict| {
        let spec = DecisionSpec {
            verdict,
            by: Some("alice".into()),
        };
        h.proxy.approvals.decide(id, &spec).expect("decided");
    };

    let mut first = h.connect(dst).await;
    first
        .write_all(get("a.test").as_bytes())
        .await
        .expect("write");
    let asked = card().await;
    assert_eq!(
        (
            asked.kind,
            asked.host.as_str(),
            asked.port,
            asked.rule.as_deref()
        ),
        (
            CardKind::Network,
            "a.test",
            Some(9),
            Some("p:network.unmatched")
        )
    );
    assert_eq!(
        asked.process.as_ref().map(|p| p.pid),
        Some(std::process::id())
    );
    assert_eq!(h.count("ask", "parked"), 1);
    decide(&asked.id, Verdict::ApproveSession);
    // Approved, it goes on (to an interceptor this harness has none of).
    let _ = read_all(&mut first).await;
    assert_eq!(h.count("allow", "approve_session"), 1);

    let mut again = h.connect(dst).await;
    again
        .write_all(get("a.test").as_bytes())
        .await
        .expect("write");
    let _ = read_all(&mut again).await;
    assert_eq!(h.count("allow", "session_grant"), 1);
    assert_eq!(h.count("ask", "parked"), 1, "not asked again");

    let mut other = h.connect(dst).await;
    other
        .write_all(get("b.test").as_bytes())
        .await
        .expect("write");
    let asked = card().await;
    decide(&asked.id, Verdict::Reject);
    let (got, _) = read_all(&mut other).await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 403"), "{text}");
    assert!(text.contains("\"reason\":\"approval_rejected\""), "{text}");
    assert!(text.contains("\"rule\":\"p:network.unmatched\""), "{text}");
    let audit = h.audit().await;
    let reasons: Vec<&str> = audit
        .iter()
        .filter(|e| e["reason"] != "no_interceptor")
        .filter_map(|e| e["reason"].as_str())
        .collect();
    assert_eq!(
        reasons,
        [
            "parked",
            "approve_session",
            "session_grant",
            "parked",
            "approval_rejected"
        ]
    );
}

/// A connection's task keeps room for the largest state of `handle` for
/// as long as the connection is open, however long it stays idle: the
/// relay, the lookups, the question asked and DNS over TCP are boxed, so
/// an intercepted connection does not carry their room (a parked one held
/// 9.5 KiB of task, of about 18 KiB in all, before they were).
#[tokio::test]
async fn a_connection_task_keeps_no_room_for_states_it_is_not_in() {
    /// What the task of an intercepted connection may hold (unoptimized
    /// build, as tests run; the parked TLS session is boxed apart).
    const BUDGET: usize = 4096;
    let h = Harness::start(policy("  allow_out: [ALL_TRAFFIC]\n"), &[]).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let _client = TcpStream::connect(listener.local_addr().expect("addr"))
        .await
        .expect("connect");
    let (server, peer) = listener.accept().await.expect("accept");
    // Never polled: its size is its type's.
    let task = h.proxy.handle(server, peer, NETNS);
    let size = std::mem::size_of_val(&task);
    assert!(size <= BUDGET, "a connection's task holds {size} bytes");
}
