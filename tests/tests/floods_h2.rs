//! HTTP/2 and header floods on intercepted connections: rapid reset,
//! CONTINUATION without end, and header bombs (HPACK references that
//! decode to megabytes, and HTTP/1 heads past the size limit). For each:
//! what reached the upstream, that the daemon still serves, and the
//! well-behaved sandbox's p99 before and during (`FLOOD ...` lines).

use sluice_e2e::{
    TestCa,
    flood::{Flood, PRELUDE, Probe, p99_during, two_upstreams, world_with_good_sandbox},
};

/// `PORT NAME CAFILE`: connection after connection, GETs each reset
/// (CANCEL) right after its HEADERS, 100 pairs to a write, until the
/// server sends GOAWAY or closes (or 20,000 streams), until stopped.
const RAPID_RESET: &str = r#"
port, name, cafile = int(ARGS[0]), ARGS[1], ARGS[2]
host = name.encode()
streams = conns = 0
goaways, per_conn = {}, []
while not stopped():
    c = H2(h2(port, name, cafile))
    conns += 1
    sid = 1
    while not stopped() and not c.closed and c.goaway is None and sid < 40000:
        c.send(b"".join(frame(1, 5, i, request(host)) + frame(3, 0, i, struct.pack(">I", 8)) for i in range(sid, sid + 200, 2)))
        sid += 200
        streams += 100
        c.poll()
        if streams >= 2000 and not os.path.exists(READY):
            ready()
    c.poll(0.2)
    per_conn.append(sid // 2)
    goaways[str(c.goaway)] = goaways.get(str(c.goaway), 0) + 1
    c.close()
print(json.dumps({"conns": conns, "streams": streams, "goaways": goaways, "most_on_one": max(per_conn)}))
"#;

/// `PORT NAME CAFILE`: connection after connection, one request's
/// HEADERS without END_HEADERS, then CONTINUATION frames of 16 KiB of
/// headers each until the server closes (or 64 MiB), until stopped.
const CONTINUATION: &str = r#"
port, name, cafile = int(ARGS[0]), ARGS[1], ARGS[2]
host = name.encode()
block = b"".join(literal(b"x-c%03d" % i, b"a" * 100) for i in range(150))
conns, per_conn, goaways = 0, [], {}
while not stopped():
    c = H2(h2(port, name, cafile))
    conns += 1
    c.send(frame(1, 1, 1, request(host)))
    sent = 0
    while not stopped() and not c.closed and c.goaway is None and sent < 64 << 20:
        c.send(frame(9, 0, 1, block))
        sent += len(block)
        c.poll()
    c.poll(0.2)
    per_conn.append(sent)
    goaways[str(c.goaway)] = goaways.get(str(c.goaway), 0) + 1
    c.close()
    if not os.path.exists(READY):
        ready()
print(json.dumps({"conns": conns, "most_sent": max(per_conn), "goaways": goaways}))
"#;

/// `PORT NAME CAFILE`: alternately, an HTTP/2 connection whose requests
/// each carry a 4,000-byte header once and then thousands of one-byte
/// references to it (16 MB decoded from 4 KB sent), and an HTTP/1.1
/// request with a 200 KB header; until stopped. Prints the frames seen
/// by kind and the HTTP/1 statuses.
const HEADER_BOMBS: &str = r#"
port, name, cafile = int(ARGS[0]), ARGS[1], ARGS[2]
host = name.encode()
kinds, statuses, rounds = {}, {}, 0
while not stopped():
    rounds += 1
    c = H2(h2(port, name, cafile))
    c.send(frame(1, 5, 1, request(host) + b"\x40" + hstr(b"x-bomb") + hstr(b"a" * 4000) + b"\xbe" * 3000))
    for sid in range(3, 201, 2):
        if c.closed or c.goaway is not None:
            break
        c.send(frame(1, 5, sid, request(host) + b"\xbe" * 4000))
        c.poll()
    c.poll(0.2)
    for k, n in c.kinds.items():
        kinds[str(k)] = kinds.get(str(k), 0) + n
    c.close()
    try:
        s = tls(port, name, cafile, "http/1.1")
        s.sendall(b"GET /echo HTTP/1.1\r\nHost: " + host + b"\r\nx-big: " + b"a" * 200000 + b"\r\n\r\n")
        status = s.recv(64)[9:12].decode() or "closed"
    except OSError:
        status = "reset"
    statuses[status] = statuses.get(status, 0) + 1
    if rounds == 3:
        ready()
print(json.dumps({"rounds": rounds, "kinds": kinds, "h1": statuses}))
"#;

/// Runs `script` from `sb1` against `api.test` while `sb2` asks
/// `good.test`; returns what the flood printed and the requests that
/// reached `api.test`'s upstream.
fn flood(what: &str, script: &str) -> (serde_json::Value, usize) {
    let ca = TestCa::upstream();
    let (flooded, good, policy) = two_upstreams(&ca);
    let names = ["api.test", "good.test"];
    let (world, sb2) = world_with_good_sandbox(&ca, &names, policy, |_| {});
    let probe = Probe {
        cgroup: &sb2,
        port: good.port(),
        name: "good.test",
        cafile: &world.sluice_ca,
    };
    let args = [
        flooded.port().to_string(),
        "api.test".to_owned(),
        world.sluice_ca.clone(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let script = format!("{PRELUDE}{script}");
    let (p99, flood) = p99_during(what, &probe, || {
        Flood::start(&world.sb1, world.daemon.dir(), &script, &args)
    });
    let seen = flood.stop();
    p99.assert_served();
    // Served after the flood too.
    let after = probe.sample();
    assert!(after.failed.is_empty(), "{:?}", after.failed);
    let reached = flooded.request_count();
    eprintln!("{what}: {seen}; {reached} requests reached the upstream");
    (seen, reached)
}

/// Streams opened and reset at once cost Sluice at most a forward each
/// and every connection is ended (GOAWAY ENHANCE_YOUR_CALM, h2's caps on
/// reset streams) long before the flooder would stop; another sandbox is served meanwhile.
#[test]
fn http2_rapid_reset_is_cut_off() {
    let (seen, reached) = flood("HTTP/2 rapid reset", RAPID_RESET);
    let streams = seen["streams"].as_u64().expect("streams") as usize;
    assert!(
        reached < streams,
        "{reached} of {streams} streams forwarded"
    );
    // Every connection was ended by Sluice before the flooder's own stop.
    let most = seen["most_on_one"].as_u64().expect("most_on_one");
    assert!(most < 20_000, "{most} streams on one connection");
}

/// A header block that never ends: h2 reads at most five CONTINUATION
/// frames past a full header list (16 KiB) and sends GOAWAY
/// (ENHANCE_YOUR_CALM), long before the 64 MiB the flooder would send;
/// what it could write meanwhile is what the sockets' buffers hold.
#[test]
fn http2_continuation_flood_is_cut_off() {
    let (seen, reached) = flood("HTTP/2 CONTINUATION flood", CONTINUATION);
    let most = seen["most_sent"].as_u64().expect("most_sent");
    assert!(
        most < 8 << 20,
        "{most} bytes of CONTINUATION written on one connection"
    );
    assert_eq!(
        reached, 0,
        "a request with an endless header block was forwarded"
    );
}

/// Headers decoding to megabytes (HPACK references) end the HTTP/2
/// connection (GOAWAY; hyper's header list limit is 16 KiB), and
/// HTTP/1 heads past `limits.max_header_bytes` are answered 431; none is
/// forwarded.
#[test]
fn header_bombs_are_refused_unforwarded() {
    let (seen, reached) = flood("header bombs", HEADER_BOMBS);
    assert_eq!(reached, 0, "a header bomb was forwarded: {seen}");
    let h1 = seen["h1"].as_object().expect("h1");
    assert!(
        // 431, or the connection closed (reset when the flooder was
        // still writing its head).
        h1.keys()
            .all(|status| ["431", "closed", "reset"].contains(&status.as_str())),
        "{seen}"
    );
}
