//! Floods a sandbox can send, the limit that holds each, and what a
//! well-behaved sandbox (`sb2`) sees meanwhile: its p99 before and during
//! the flood, printed as `FLOOD ...` lines (`--nocapture`) for the README.
//! The HTTP/2 floods are in `floods_h2.rs`.

use std::time::Instant;

use serde_json::json;
use sluice_e2e::{
    HttpsUpstream, TestCa, WAIT, eventually,
    flood::{Flood, PRELUDE, Probe, open_fds, p99_during, two_upstreams, world_with_good_sandbox},
    in_cgroup,
    interception::{Curl, World, intercepting_policy},
};

/// `PORT CAFILE N`: TLS handshakes for `s0..s{N-1}.mint.test` round and
/// round until stopped; prints how many were served and refused.
const MINT_STORM: &str = r#"
port, cafile, n = int(ARGS[0]), ARGS[1], int(ARGS[2])
ctx = ssl.create_default_context(cafile=cafile)
served = refused = i = 0
while not stopped():
    name = "s%d.mint.test" % (i % n)
    i += 1
    try:
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname=name)
        s.close()
        served += 1
    except OSError:
        refused += 1
    if i == 20:
        ready()
print(json.dumps({"served": served, "refused": refused}))
"#;

/// A sandbox opening TLS connections to many new names at once gets the
/// certificates its budget allows (`tls.max_mints_per_second`, twice that
/// at once); the rest are closed before the handshake, counted and
/// audited, and a name already minted is still served. A storm of them
/// leaves another sandbox's requests served.
#[test]
fn new_names_beyond_the_mint_budget_are_refused() {
    const NAMES: usize = 8;
    const STORM: usize = 40;
    let names: Vec<String> = (0..NAMES)
        .map(|i| format!("n{i}.mint.test"))
        .chain((0..STORM).map(|i| format!("s{i}.mint.test")))
        .chain(["good.test".to_owned()])
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&names, &ca);
    let port = upstream.port();
    let policy = intercepting_policy(
        &[
            "*.mint.test".to_owned(),
            "good.test".to_owned(),
            format!("127.0.0.0/8:{port}"),
        ],
        json!({}),
    );
    let (world, sb2) = world_with_good_sandbox(&ca, &names, policy, |builder| {
        builder.tls_key("max_mints_per_second", json!(1));
    });
    let url = |name: &str| format!("https://{name}:{port}/echo");
    let started = Instant::now();
    let running: Vec<_> = names[..NAMES]
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

    // A storm that goes on: the other sandbox is served meanwhile.
    let probe = Probe {
        cgroup: &sb2,
        port,
        name: "good.test",
        cafile: &world.sluice_ca,
    };
    let args = [port.to_string(), world.sluice_ca.clone(), STORM.to_string()];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let script = format!("{PRELUDE}{MINT_STORM}");
    let (p99, storm) = p99_during("mint storm", &probe, || {
        Flood::start(&world.sb1, world.daemon.dir(), &script, &args)
    });
    let seen = storm.stop();
    p99.assert_served();
    eprintln!("mint storm: {seen}");
    assert!(seen["refused"].as_u64() > Some(0), "{seen}");
}

/// `PORT N`: N TCP connections that send nothing, held until stopped;
/// prints how many connected and how many Sluice still held at the end.
const IDLE: &str = r#"
port, n = int(ARGS[0]), int(ARGS[1])
socks = []
for i in range(n):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
        socks.append(s)
    except OSError:
        pass
ready()
while not stopped():
    time.sleep(0.05)
held = 0
for s in socks:
    s.setblocking(False)
    try:
        if s.recv(1):
            held += 1
    except BlockingIOError:
        held += 1
    except OSError:
        pass
print(json.dumps({"connected": len(socks), "held": held}))
"#;

/// Thousands of connections that never speak: one sandbox holds at most
/// `limits.max_connections_per_sandbox` (the rest reset, counted and
/// audited as `connection_limit`), each costing the daemon one descriptor
/// and a few KiB, and another sandbox is served meanwhile.
#[test]
fn idle_connections_beyond_the_sandbox_cap_are_refused() {
    const CAP: usize = 1_000;
    const FLOOD: usize = 3_000;
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["good.test"], &ca);
    let port = upstream.port();
    let policy = intercepting_policy(
        &["good.test".to_owned(), format!("127.0.0.0/8:{port}")],
        json!({}),
    );
    let (world, sb2) = world_with_good_sandbox(&ca, &["good.test"], policy, |builder| {
        // Held in the sniff for as long as the test runs.
        builder
            .sniff_timeout_ms(120_000)
            .limit("max_connections_per_sandbox", json!(CAP));
    });
    let probe = Probe {
        cgroup: &sb2,
        port,
        name: "good.test",
        cafile: &world.sluice_ca,
    };
    let pid = world.daemon.pid();
    let (rss_before, fds_before) = (world.daemon.rss_kib(), open_fds(pid));
    let args = [port.to_string(), FLOOD.to_string()];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let script = format!("{PRELUDE}{IDLE}");
    let mut during = (0, 0);
    let (p99, flood) = p99_during("idle connections", &probe, || {
        let flood = Flood::start(&world.sb1, world.daemon.dir(), &script, &args);
        eventually("the sandbox's connections held", WAIT, || {
            let active = world.metric("sluice_active_connections");
            match active >= CAP as f64 {
                true => Ok(()),
                false => Err(format!("{active} active")),
            }
        });
        during = (world.daemon.rss_kib(), open_fds(pid));
        flood
    });
    let refused =
        world.metric(r#"sluice_connections_total{verdict="deny",reason="connection_limit"}"#);
    let seen = flood.stop();
    p99.assert_served();
    let held = seen["held"].as_u64().expect("held") as usize;
    let per_conn_kib = during.0.saturating_sub(rss_before) as f64 / CAP as f64;
    eprintln!(
        "idle connections: {seen}, {refused} refused; daemon RSS {rss_before} → {} KiB ({per_conn_kib:.1} KiB a connection), fds {fds_before} → {}",
        during.0, during.1
    );
    assert!(held <= CAP, "{seen}");
    assert!(
        refused >= (FLOOD - CAP) as f64 * 0.9,
        "{refused} refused; {seen}"
    );
    assert!(
        during.1 <= fds_before + CAP + 64,
        "fds {fds_before} → {}",
        during.1
    );
    world
        .daemon
        .wait_audit("a connection_limit refusal", 1, |e| {
            e["reason"] == "connection_limit"
                && e["sandbox"] == "sb1"
                && e["rule"] == "config:limits.max_connections_per_sandbox"
        });
}

/// `PORT NAME CAFILE N BODY`: keeps N HTTP/1.1 connections over TLS
/// dripping one header line (BODY 0) or one body byte of a long
/// announced body (BODY 1) every half second, opening a new one for each
/// that ends, until stopped; then waits up to 30 s for the rest to end.
/// Prints each ended connection's lifetime, the most held at once, how
/// many could not be opened and how many were still open at the end.
const SLOW: &str = r#"
port, name, cafile, n, body = int(ARGS[0]), ARGS[1], ARGS[2], int(ARGS[3]), ARGS[4] == "1"
if body:
    head = b"POST /echo HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000000\r\n\r\n" % name.encode()
    drip = b"a"
else:
    head = b"GET /echo HTTP/1.1\r\nHost: %s\r\n" % name.encode()
    drip = b"x-drip: 1\r\n"
live, lived, failed, most = [], [], 0, 0
def open_one():
    global failed
    try:
        s = tls(port, name, cafile, "http/1.1")
        s.sendall(head)
        live.append((s, time.monotonic()))
    except OSError:
        failed += 1
deadline = None
while True:
    now = time.monotonic()
    if deadline is None and stopped():
        deadline = now + 30
    if deadline is None:
        for _ in range(n - len(live)):
            open_one()
        if not os.path.exists(READY) and len(live) + failed >= n:
            ready()
    elif not live or now > deadline:
        break
    most = max(most, len(live))
    for c in list(live):
        s, opened = c
        ended = False
        try:
            s.sendall(drip)
            s.setblocking(False)
            try:
                ended = True if s.recv(4096) is not None else False
            except (BlockingIOError, ssl.SSLWantReadError):
                pass
            s.setblocking(True)
        except OSError:
            ended = True
        if ended:
            lived.append(now - opened)
            live.remove(c)
            s.close()
    time.sleep(0.5)
print(json.dumps({"lived": lived, "most": most, "failed": failed, "open": len(live)}))
"#;

/// A head dripped a line at a time: every such connection is cut once
/// `limits.header_read_timeout_ms` has passed (twice over at most: once
/// for Sluice's own read of the first head, once for hyper's), so a
/// sandbox that keeps opening them holds only what that rate allows;
/// another sandbox is served meanwhile.
#[test]
fn slowloris_heads_are_cut_at_the_header_read_timeout() {
    const HEADER_READ_MS: u64 = 2_000;
    const SLOW_CONNS: usize = 100;
    let slow = slowloris(
        "header_read_timeout_ms",
        HEADER_READ_MS,
        SLOW_CONNS,
        false,
        |_| (),
    );
    let seen = slow.seen;
    let lived: Vec<f64> = serde_json::from_value(seen["lived"].clone()).expect("lived");
    let longest = lived.iter().copied().fold(0.0, f64::max);
    eprintln!(
        "slowloris heads: {} cut, longest {longest:.1} s, {} open at the end",
        lived.len(),
        seen["open"]
    );
    assert_eq!(seen["open"], 0, "{seen}");
    assert!(lived.len() >= SLOW_CONNS, "{seen}");
    let bound = 2.0 * HEADER_READ_MS as f64 / 1000.0 + 2.0;
    assert!(longest < bound, "a slow head lived {longest:.1} s: {seen}");
    assert_eq!(slow.forwarded, 0, "a slow head reached the upstream");
}

/// A body announced long and dripped a byte at a time: a request in
/// flight is not idle, so nothing cuts it by time; what holds the sandbox
/// is `limits.max_connections_per_sandbox` (connections past it reset,
/// counted as `connection_limit`). Another sandbox is served meanwhile.
#[test]
fn slowloris_bodies_are_held_to_the_sandbox_cap() {
    const CAP: usize = 50;
    const SLOW_CONNS: usize = 80;
    let slow = slowloris(
        "max_connections_per_sandbox",
        CAP as u64,
        SLOW_CONNS,
        true,
        |world| {
            world.metric(r#"sluice_connections_total{verdict="deny",reason="connection_limit"}"#)
        },
    );
    let (seen, refused) = (slow.seen, slow.during);
    eprintln!("slowloris bodies: {seen}, {refused} refused");
    assert!(seen["most"].as_u64() <= Some(CAP as u64), "{seen}");
    assert!(refused > 0.0, "{seen}");
}

/// What a slowloris flood left: the flood's report, what `during` saw
/// while it ran, and the requests that reached the flooded upstream.
struct Slowloris<T> {
    seen: serde_json::Value,
    during: T,
    forwarded: usize,
}

/// sb1 runs `SLOW` against api.test: `conns` connections dripping their
/// heads, or (`bodies`) bodies announced long, with the daemon's
/// `limits.<limit>` at `value`, while sb2's p99 is taken and asserted
/// served; `during` looks at the world while the flood still runs.
fn slowloris<T>(
    limit: &str,
    value: u64,
    conns: usize,
    bodies: bool,
    during: impl FnOnce(&World) -> T,
) -> Slowloris<T> {
    let ca = TestCa::upstream();
    let (upstream, good, policy) = two_upstreams(&ca);
    let names = ["api.test", "good.test"];
    let (world, sb2) = world_with_good_sandbox(&ca, &names, policy, |builder| {
        builder.limit(limit, json!(value));
    });
    let probe = Probe {
        cgroup: &sb2,
        port: good.port(),
        name: "good.test",
        cafile: &world.sluice_ca,
    };
    let args = [
        upstream.port().to_string(),
        "api.test".to_owned(),
        world.sluice_ca.clone(),
        conns.to_string(),
        u8::from(bodies).to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let script = format!("{PRELUDE}{SLOW}");
    let what = if bodies {
        "slowloris (bodies)"
    } else {
        "slowloris (heads)"
    };
    let (p99, flood) = p99_during(what, &probe, || {
        Flood::start(&world.sb1, world.daemon.dir(), &script, &args)
    });
    let during = during(&world);
    let seen = flood.stop();
    p99.assert_served();
    Slowloris {
        seen,
        during,
        forwarded: upstream.request_count(),
    }
}

/// `N`: UDP queries for `good.test` A to the sandbox's resolver, as fast
/// as they go, until stopped; prints how many were sent and each answer's
/// rcode count.
const DNS_FLOOD: &str = r#"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setblocking(False)
q = b"".join(bytes([len(l)]) + l.encode() for l in "good.test".split(".")) + b"\0"
sent, rcodes = 0, {}
def drain():
    while True:
        try:
            data = s.recv(4096)
        except BlockingIOError:
            return
        rc = str(struct.unpack(">H", data[2:4])[0] & 0xF)
        rcodes[rc] = rcodes.get(rc, 0) + 1
while not stopped():
    for _ in range(50):
        try:
            s.sendto(struct.pack(">HHHHHH", sent & 0xFFFF, 0x0100, 1, 0, 0, 0) + q + struct.pack(">HH", 1, 1), ("127.0.0.53", 53))
            sent += 1
        except (BlockingIOError, OSError):
            pass
    drain()
    if sent >= 2000 and not os.path.exists(READY):
        ready()
    time.sleep(0.001)
drain()
print(json.dumps({"sent": sent, "rcodes": rcodes}))
"#;

/// A DNS query flood: the sandbox's queries past the policy's
/// `dns.max_queries_per_second` (a bucket of twice that) are refused,
/// counted as `dns_rate`; another sandbox is served meanwhile.
#[test]
fn a_dns_query_flood_is_held_to_the_query_rate() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["good.test"], &ca);
    let port = upstream.port();
    let policy = intercepting_policy(
        &["good.test".to_owned(), format!("127.0.0.0/8:{port}")],
        json!({}),
    );
    let (world, sb2) = world_with_good_sandbox(&ca, &["good.test"], policy, |_| {});
    let probe = Probe {
        cgroup: &sb2,
        port,
        name: "good.test",
        cafile: &world.sluice_ca,
    };
    let script = format!("{PRELUDE}{DNS_FLOOD}");
    let started = Instant::now();
    let (p99, flood) = p99_during("DNS query flood", &probe, || {
        Flood::start(&world.sb1, world.daemon.dir(), &script, &[])
    });
    let seen = flood.stop();
    let secs = started.elapsed().as_secs_f64();
    p99.assert_served();
    let rated = world.metric(r#"sluice_dns_refusals_total{reason="dns_rate"}"#);
    eprintln!("DNS flood: {seen} in {secs:.1} s, {rated} refused for rate");
    let answered = seen["rcodes"]["0"].as_f64().unwrap_or(0.0);
    // The default 50 a second, a bucket of 100.
    assert!(answered <= 100.0 + 50.0 * secs + 10.0, "{seen}");
    assert!(rated > 0.0, "{seen}");
}
