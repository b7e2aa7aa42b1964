//! Python programs for the interception tests, run inside sandboxes. Each
//! takes one argument, a JSON spec (inline, or the path of a file holding
//! it, for specs too large for argv), prints one JSON object on its last
//! stdout line and exits non-zero when what it tried did not work.
//!
//! Every TLS client trusts exactly the `cafile` of its spec
//! (`ssl.create_default_context(cafile=...)` loads nothing else). `host`
//! is the name (SNI, Host); an optional `connect` is the address to dial
//! instead of resolving it, as curl's `--resolve`.

/// Helpers every script starts with.
macro_rules! prelude {
    () => {
        r#"
import base64, errno, hashlib, http.client, json, os, socket, ssl, sys, threading, time
arg = sys.argv[1]
spec = json.loads(arg if arg.lstrip().startswith("{") else open(arg).read())
def context(cafile, alpn=None):
    ctx = ssl.create_default_context(cafile=cafile)
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx
def dn(pairs):
    return {k: v for rdn in pairs for (k, v) in rdn}
def peer(sock):
    c = sock.getpeercert() or {}
    return {"subject": dn(c.get("subject", ())), "issuer": dn(c.get("issuer", ())),
            "san": [v for (_, v) in c.get("subjectAltName", ())]}
def ca_subject(path):
    return dn(ssl._ssl._test_decode_cert(path)["subject"])
def err(e):
    if isinstance(e, ssl.SSLCertVerificationError):
        return "certificate: " + str(e.verify_message)
    if isinstance(e, OSError) and e.errno:
        return errno.errorcode.get(e.errno, str(e.errno)) + ": " + str(e)
    return type(e).__name__ + ": " + str(e)
def finish(result, ok):
    result["ok"] = bool(ok)
    print(json.dumps(result))
    sys.exit(0 if ok else 1)
def ws_upgrade(spec, extra=""):
    """A WebSocket upgrade to spec's path, `extra` header lines added: the
    socket, the key sent, the response head's lines and the bytes after it."""
    s = socket.create_connection((spec.get("connect", spec["host"]), spec["port"]), timeout=15)
    s = context(spec["cafile"], ["http/1.1"]).wrap_socket(s, server_hostname=spec["host"])
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {spec['path']} HTTP/1.1\r\nHost: {spec['host']}:{spec['port']}\r\n"
               f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               f"Sec-WebSocket-Version: 13\r\n{extra}\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        c = s.recv(4096)
        if not c:
            raise ConnectionError("closed before the handshake response")
        buf += c
    head, _, rest = buf.partition(b"\r\n\r\n")
    return s, key, head.decode("latin-1").split("\r\n"), rest
def frame(opcode, payload):
    """A client's (masked) WebSocket frame."""
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, 0x80 | n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
def ready_then_go(spec):
    """Creates the file spec's `ready`, then waits for its `go` (the
    test's change made meanwhile)."""
    open(spec["ready"], "w").close()
    deadline = time.time() + 30
    while not os.path.exists(spec["go"]) and time.time() < deadline:
        time.sleep(0.02)
def h2_open(spec):
    """TLS to spec's host offering only h2, the client preface and an
    empty SETTINGS sent: the socket and the protocol agreed."""
    s = socket.create_connection((spec.get("connect", spec["host"]), spec["port"]), timeout=15)
    s = context(spec["cafile"], ["h2"]).wrap_socket(s, server_hostname=spec["host"])
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
    return s, s.selected_alpn_protocol()
def h2_until_closed(s, wait, buf=b""):
    """Reads HTTP/2 frames as a client would (SETTINGS and PINGs
    acknowledged: a graceful close waits for a PING's answer) until the
    server closes or `wait` seconds pass with nothing: (closed, goaway)."""
    s.settimeout(wait)
    goaway = False
    try:
        while True:
            c = s.recv(65536)
            if c == b"":
                return True, goaway
            buf += c
            while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
                n, kind, flags = int.from_bytes(buf[:3], "big"), buf[3], buf[4]
                payload, buf = buf[9:9 + n], buf[9 + n:]
                if kind == 4 and not flags & 1:
                    s.sendall(bytes([0, 0, 0, 4, 1, 0, 0, 0, 0]))
                elif kind == 6 and not flags & 1:
                    s.sendall(bytes([0, 0, 8, 6, 1, 0, 0, 0, 0]) + payload)
                elif kind == 7:
                    goaway = True
    except socket.timeout:
        return False, goaway
    except (ssl.SSLError, OSError):
        return True, goaway
class Conn(http.client.HTTPSConnection):
    """HTTPS to spec's host (or `connect`, an address) with SNI = host."""
    def __init__(self, host, port, cafile, connect=None, timeout=30):
        super().__init__(host, port, timeout=timeout)
        self.addr = connect or host
        self.ctx = context(cafile, ["http/1.1"])
    def connect(self):
        s = socket.create_connection((self.addr, self.port), timeout=self.timeout)
        self.sock = self.ctx.wrap_socket(s, server_hostname=self.host)
def read_response(s):
    """One HTTP/1.1 response from socket `s`: status, headers, body."""
    buf, error = b"", None
    def more():
        nonlocal buf, error
        try:
            c = s.recv(65536)
        except Exception as e:
            error = err(e)
            return False
        buf += c
        return bool(c)
    while b"\r\n\r\n" not in buf and more():
        pass
    if b"\r\n\r\n" not in buf:
        return {"status": None, "head": buf[:300].decode("latin-1"), "error": error}
    head, _, _ = buf.partition(b"\r\n\r\n")
    start = len(head) + 4
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(buf) - start < n and more():
            pass
        body = buf[start:start + n]
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        while not buf.endswith(b"0\r\n\r\n") and more():
            pass
        rest, body = buf[start:], b""
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0:
                break
            body, rest = body + rest[:size], rest[size + 2:]
    elif status in (101, 204, 304) or 100 <= status < 200:
        body = b""
    else:
        while more():
            pass
        body = buf[start:]
    return {"status": status, "status_line": lines[0], "headers": headers,
            "body": body.decode("utf-8", "replace"), "error": error}
"#
    };
}

/// Spec `{host, port, cafile, path, method?, headers?, body?, connect?,
/// ca_subject_of?}`: one HTTP/1.1 request over TLS. Prints the status,
/// headers, body, the certificate the client saw (`peer`: subject, issuer,
/// SANs) and, with `ca_subject_of`, that CA file's subject.
pub const HTTPS_REQUEST: &str = concat!(
    prelude!(),
    r#"
c = Conn(spec["host"], spec["port"], spec["cafile"], spec.get("connect"))
result = {}
if spec.get("ca_subject_of"):
    result["ca_subject"] = ca_subject(spec["ca_subject_of"])
try:
    c.connect()
    result["peer"] = peer(c.sock)
    result["tls_version"] = c.sock.version()
    body = spec.get("body")
    c.request(spec.get("method", "GET"), spec["path"],
              body=body.encode() if body is not None else None,
              headers=spec.get("headers", {}))
    r = c.getresponse()
    data = r.read()
except Exception as e:
    result["error"] = err(e)
    finish(result, False)
result.update({"status": r.status, "version": r.version,
               "headers": {k.lower(): v for k, v in r.getheaders()},
               "body": data.decode("utf-8", "replace")})
finish(result, True)
"#
);

/// Spec `{host, port, cafile}`: `GET /sse`; after event `one`, `GET /ack`
/// on a second connection; then reads the rest. Succeeds when the events
/// are exactly `one`, `two` (an upstream that timed out waiting for the
/// ack sends `timeout` in between).
pub const SSE_WITH_ACK: &str = concat!(
    prelude!(),
    r#"
def get(path):
    c = Conn(spec["host"], spec["port"], spec["cafile"], spec.get("connect"))
    c.request("GET", path, headers={"Accept": "text/event-stream"})
    return c, c.getresponse()
result = {"events": []}
try:
    c1, r1 = get("/sse")
    result["status"] = r1.status
    result["content_type"] = r1.getheader("content-type")
    while True:
        line = r1.readline()
        if not line:
            break
        line = line.decode().rstrip("\r\n")
        if not line.startswith("data: "):
            continue
        event = line[len("data: "):]
        result["events"].append(event)
        if event == "one" and "ack_status" not in result:
            c2, r2 = get("/ack")
            r2.read()
            result["ack_status"] = r2.status
            c2.close()
except Exception as e:
    result["error"] = err(e)
    finish(result, False)
finish(result, result.get("status") == 200 and result["events"] == ["one", "two"])
"#
);

/// Spec `{host, port, cafile, path}`: a WebSocket handshake over TLS
/// (HTTP/1.1), checks `101` and `Sec-WebSocket-Accept`, then sends a text
/// frame and a 70 KB binary frame (masked, as a client must) and expects
/// each echoed byte for byte.
pub const WEBSOCKET_ECHO: &str = concat!(
    prelude!(),
    r#"
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
result = {}
try:
    s, key, lines, rest = ws_upgrade(spec)
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    expected = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    result.update({"status_line": lines[0], "upgrade": headers.get("upgrade"),
                   "accept_ok": headers.get("sec-websocket-accept") == expected})
    if not lines[0].startswith("HTTP/1.1 101"):
        result["body"] = rest.decode("utf-8", "replace")
        finish(result, False)
    echoed = []
    for msg in [frame(0x1, b"hello through sluice"), frame(0x2, os.urandom(70000))]:
        s.sendall(msg)
        while len(rest) < len(msg):
            c = s.recv(65536)
            if not c:
                break
            rest += c
        echoed.append(rest[:len(msg)] == msg)
        rest = rest[len(msg):]
    result["echoed"] = echoed
    s.close()
except Exception as e:
    result["error"] = err(e)
    finish(result, False)
finish(result, result["accept_ok"] and echoed == [True, True]
       and (result["upgrade"] or "").lower() == "websocket")
"#
);

/// Spec `{host, port, cafile, path, header}`: a WebSocket upgrade with
/// `header` (and an offer of compressed frames), then every frame the
/// server sends until its close: `{status_line, messages, pings, close_code,
/// close_reason}`, messages reassembled from their fragments.
pub const WEBSOCKET_READ: &str = concat!(
    prelude!(),
    r#"
result = {}
try:
    s, _, lines, buf = ws_upgrade(
        spec, f"Sec-WebSocket-Extensions: permessage-deflate\r\n{spec['header']}\r\n")
    result["status_line"] = lines[0]
    if not result["status_line"].startswith("HTTP/1.1 101"):
        result["body"] = buf.decode("utf-8", "replace")
        finish(result, False)
    def take(n):
        global buf
        while len(buf) < n:
            c = s.recv(65536)
            if not c:
                raise ConnectionError("closed mid-frame")
            buf += c
        out, buf = buf[:n], buf[n:]
        return out
    messages, pings, message = [], [], None
    while True:
        b0, b1 = take(2)
        fin, opcode, n = b0 & 0x80, b0 & 0x0F, b1 & 0x7F
        if b1 & 0x80:
            raise ValueError("a masked frame from the server")
        if n >= 126:
            n = int.from_bytes(take(2 if n == 126 else 8), "big")
        payload = take(n)
        if opcode == 0x9:
            pings.append(payload.decode())
        elif opcode == 0x8:
            result["close_code"] = int.from_bytes(payload[:2], "big")
            result["close_reason"] = payload[2:].decode()
            break
        else:
            message = (message or b"") + payload
            if fin:
                messages.append(message.decode())
                message = None
    result.update({"messages": messages, "pings": pings})
    s.close()
except Exception as e:
    result["error"] = err(e)
    finish(result, False)
finish(result, True)
"#
);

/// Spec `{mode: "download"|"upload", host, port, cafile, n}`. Download:
/// `GET /bytes?n=N`, read into a reused 1 MiB buffer, SHA-256 on the way.
/// Upload: `POST /upload` with `Content-Length: N`, the body made of
/// slices of one random block, hashed as sent; the upstream's `{len,
/// sha256}` must match. Nothing holds the whole body.
pub const BULK_TRANSFER: &str = concat!(
    prelude!(),
    r#"
n, mode = int(spec["n"]), spec["mode"]
CHUNK = 1 << 20
PERIOD = 1000003
h = hashlib.sha256()
result = {"mode": mode}
start = time.monotonic()
try:
    c = Conn(spec["host"], spec["port"], spec["cafile"], spec.get("connect"), timeout=60)
    if mode == "download":
        c.request("GET", f"/bytes?n={n}")
        r = c.getresponse()
        result["status"] = r.status
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        got = 0
        while True:
            k = r.readinto(buf)
            if not k:
                break
            h.update(view[:k])
            got += k
        result.update({"len": got, "sha256": h.hexdigest()})
        ok = r.status == 200 and got == n
    else:
        block = os.urandom(PERIOD + CHUNK)
        view = memoryview(block)
        c.putrequest("POST", "/upload")
        c.putheader("Content-Type", "application/octet-stream")
        c.putheader("Content-Length", str(n))
        c.endheaders()
        sent = 0
        try:
            while sent < n:
                k = min(CHUNK, n - sent)
                off = sent % PERIOD
                piece = view[off:off + k]
                c.sock.sendall(piece)
                h.update(piece)
                sent += k
        except OSError as e:
            result["send_error"] = err(e)
        r = c.getresponse()
        body = r.read()
        result.update({"status": r.status, "sent": sent, "sha256": h.hexdigest(),
                       "response": body.decode("utf-8", "replace")})
        try:
            echo = json.loads(body)
        except ValueError:
            echo = {}
        ok = (r.status == 200 and sent == n and echo.get("len") == n
              and echo.get("sha256") == result["sha256"])
except Exception as e:
    result["error"] = err(e)
    finish(result, False)
result["seconds"] = round(time.monotonic() - start, 2)
finish(result, ok)
"#
);

/// Spec `{host, port, sni, cafile, cases: [{name, hex}]}`: for each case a
/// fresh TLS connection (SNI `sni`) that writes the raw bytes and reads one
/// response (or until the connection ends). Prints `{results: {name:
/// {status, headers, body, error}}}`; succeeds when every case got a
/// response.
pub const RAW_TLS_REQUESTS: &str = concat!(
    prelude!(),
    r#"
ctx = context(spec["cafile"], ["http/1.1"])
results = {}
for case in spec["cases"]:
    out = {}
    try:
        s = socket.create_connection((spec["host"], spec["port"]), timeout=10)
        s = ctx.wrap_socket(s, server_hostname=spec["sni"])
    except Exception as e:
        results[case["name"]] = {"status": None, "error": "connect: " + err(e)}
        continue
    try:
        s.sendall(bytes.fromhex(case["hex"]))
    except Exception as e:
        out["send_error"] = err(e)
    out.update(read_response(s))
    try:
        s.close()
    except Exception:
        pass
    results[case["name"]] = out
finish({"results": results}, all(r.get("status") for r in results.values()))
"#
);

/// Spec `{host, port, cafile, n}`: resolves `host` once, then `n` threads
/// start together (a barrier), each with a fresh TLS handshake (SNI
/// `host`) and one `GET /echo`. Succeeds when all got 200.
pub const CONCURRENT_HTTPS: &str = concat!(
    prelude!(),
    r#"
host, port, n = spec["host"], int(spec["port"]), int(spec["n"])
addr = spec.get("connect") or socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
ctx = context(spec["cafile"], ["http/1.1"])
barrier = threading.Barrier(n, timeout=30)
results = [None] * n
def one(i):
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass
    try:
        s = socket.create_connection((addr, port), timeout=30)
        s = ctx.wrap_socket(s, server_hostname=host)
        s.sendall(f"GET /echo?i={i} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        r = read_response(s)
        s.close()
        results[i] = "ok" if r["status"] == 200 else "status %s %s" % (r["status"], r.get("body", "")[:200])
    except Exception as e:
        results[i] = err(e)
threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
errors = {str(i): r for i, r in enumerate(results) if r != "ok"}
finish({"address": addr, "succeeded": n - len(errors), "errors": errors}, not errors)
"#
);

/// Runs `script` (a `*_ACROSS_A_CHANGE` program) in `cgroup` with `spec`
/// and its `ready`, `go` (files in `dir`) and `wait`: once the script has
/// its connection open, makes `change`, then lets the script see whether
/// the gateway closes the connection.
pub fn across_a_change(
    cgroup: &crate::TestCgroup,
    dir: &std::path::Path,
    script: &str,
    mut spec: serde_json::Value,
    change: impl FnOnce(),
) -> crate::Output {
    let name = crate::unique_name("change");
    let ready = dir.join(format!("{name}.ready"));
    let go = dir.join(format!("{name}.go"));
    spec["ready"] = ready.to_string_lossy().into();
    spec["go"] = go.to_string_lossy().into();
    spec["wait"] = crate::WAIT.as_secs().into();
    let mut running = crate::in_cgroup(cgroup)
        .timeout(crate::WAIT * 4)
        .spawn_python(script, &[&spec_arg(&spec, dir)]);
    crate::wait_until("the connection open before the change", crate::WAIT, || {
        ready.exists() || running.finished()
    });
    if !ready.exists() {
        panic!("the script ended before the change:\n{}", running.wait());
    }
    change();
    std::fs::write(&go, "").unwrap_or_else(|e| panic!("write {}: {e}", go.display()));
    running.wait()
}

/// A sandbox added at run time opens the stream `spec` describes
/// (`STREAM_ACROSS_A_CHANGE`, given the policy's echo upstream), then is
/// removed: the stream must end, counted as revoked. Returns the daemon,
/// for what the caller checks besides.
pub fn removing_the_sandbox_cuts(
    what: &str,
    spec: impl FnOnce(&crate::EchoServer) -> serde_json::Value,
) -> crate::Daemon {
    let upstream = crate::EchoServer::v4();
    let mut builder = crate::DaemonBuilder::new();
    let sbx = builder.cgroup("sbx");
    builder.policy("default", vec![crate::Rule::exact(upstream.addr())]);
    let daemon = builder.start();
    let cgroup = sbx.path_str();
    let add = [
        "sandbox", "add", "sbx", "--cgroup", &cgroup, "--policy", "default",
    ];
    daemon.cli(&add).expect_success("sluice sandbox add");

    let out = across_a_change(
        &sbx,
        daemon.dir(),
        STREAM_ACROSS_A_CHANGE,
        spec(&upstream),
        || {
            daemon
                .cli(&["sandbox", "rm", "sbx"])
                .expect_success("sluice sandbox rm");
        },
    );
    out.expect_success(&format!("{what} across its sandbox's removal"));
    daemon.wait_metric_at_least(
        "sluice_connections_total{verdict=\"closed\",reason=\"revoked\"}",
        1.0,
    );
    daemon
}

/// The argument for a script: `spec` inline, or (when too large for one
/// argv string) written to a file in `dir` and passed by path.
pub fn spec_arg(spec: &serde_json::Value, dir: &std::path::Path) -> String {
    let text = spec.to_string();
    if text.len() < 64 * 1024 {
        return text;
    }
    let path = dir.join(format!("spec-{}.json", crate::unique_name("script")));
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path.to_string_lossy().into_owned()
}

/// Spec `{host, port, cafile, wait}`: an HTTP/2 connection over TLS that
/// sends its preface and SETTINGS, then nothing but acknowledgements:
/// prints whether the gateway closed it (`closed`) within `wait` seconds.
/// Succeeds when it did. (An idle HTTP/1 connection is also ended by
/// hyper's header read timeout; HTTP/2 has no such timer.)
pub const IDLE_TLS: &str = concat!(
    prelude!(),
    r#"
s, alpn = h2_open(spec)
closed, _ = h2_until_closed(s, spec["wait"])
finish({"alpn": alpn, "closed": closed}, closed)
"#
);

/// Spec `{host, port, cafile, ready, go, wait}`: an HTTP/2 connection
/// over TLS (preface and SETTINGS sent, the server's SETTINGS read, so it
/// is open and served), then creates the file `ready` and waits for the
/// file `go` (the test's change made meanwhile), then up to `wait` seconds
/// for the gateway to close it (`closed`, after a GOAWAY: `goaway`).
/// Succeeds when it was closed.
pub const KEEPALIVE_ACROSS_A_CHANGE: &str = concat!(
    prelude!(),
    r#"
s, alpn = h2_open(spec)
first = s.recv(65536)
ready_then_go(spec)
closed, goaway = h2_until_closed(s, spec["wait"], first)
finish({"alpn": alpn, "served": len(first) > 0, "goaway": goaway, "closed": closed},
       len(first) > 0 and closed)
"#
);

/// Spec `{host, port, ready, go, wait}`, and `{path, cafile}` for a
/// WebSocket over TLS, or `{dns: NAME}` for DNS over TCP to `host` port 53
/// (each message a query for NAME, answered by any response), else plain
/// TCP: a stream whose peer echoes every
/// byte. One message echoed (`before`), then `ready` and `go` as in
/// [`KEEPALIVE_ACROSS_A_CHANGE`], then a message every 50 ms for up to
/// `wait` seconds, counting those echoed (`after`), until the stream is
/// closed or reset (`closed`; a WebSocket's close frame gives `close`, its
/// `code` and `reason`). Succeeds when it was echoed before and closed
/// after the change; with `stays_open`, when one message is still echoed
/// after it (`alive`).
pub const STREAM_ACROSS_A_CHANGE: &str = concat!(
    prelude!(),
    r#"
result = {}
if "path" in spec:
    s, _, lines, rest = ws_upgrade(spec)
    result["status_line"] = lines[0]
    if not lines[0].startswith("HTTP/1.1 101"):
        finish(result, False)
    msg = frame(0x2, b"across a change")
elif "dns" in spec:
    s, rest = socket.create_connection((spec["host"], 53), timeout=15), b""
    labels = b"".join(bytes([len(l)]) + l.encode() for l in spec["dns"].split("."))
    query = bytes.fromhex("123401000001000000000000") + labels + bytes.fromhex("0000010001")
    msg = len(query).to_bytes(2, "big") + query
else:
    s, rest = socket.create_connection((spec["host"], spec["port"]), timeout=15), b""
    msg = b"across a change"
def answered():
    """Sends a DNS query and reads one response: False once the stream has ended."""
    global rest
    s.sendall(msg)
    while len(rest) < 2 or len(rest) < 2 + int.from_bytes(rest[:2], "big"):
        c = s.recv(65536)
        if not c:
            return False
        rest += c
    rest = rest[2 + int.from_bytes(rest[:2], "big"):]
    return True
def echoed():
    """Sends `msg` and reads it back: False once the stream has ended (a
    WebSocket's close frame, its status and reason kept, ends it too)."""
    global rest
    if "dns" in spec:
        return answered()
    s.sendall(msg)
    while True:
        if "path" in spec and rest[:1] == b"\x88":
            if len(rest) >= 2 and len(rest) >= 2 + (rest[1] & 0x7F):
                body = rest[2:2 + (rest[1] & 0x7F)]
                result["close"] = {"code": int.from_bytes(body[:2], "big"), "reason": body[2:].decode()}
                return False
        elif len(rest) >= len(msg):
            break
        c = s.recv(65536)
        if not c:
            return False
        rest += c
    if rest[:len(msg)] != msg:
        finish(dict(result, garbled=rest.hex()), False)
    rest = rest[len(msg):]
    return True
result["before"] = echoed()
ready_then_go(spec)
if spec.get("stays_open"):
    # The change was not this connection's: it must still carry bytes.
    try:
        result["alive"] = echoed()
    except (ssl.SSLError, OSError) as e:
        result.update({"alive": False, "error": err(e)})
    finish(result, result["before"] and result["alive"])
result.update({"after": 0, "closed": False})
deadline = time.time() + spec["wait"]
try:
    while time.time() < deadline:
        if not echoed():
            result["closed"] = True
            break
        result["after"] += 1
        time.sleep(0.05)
except socket.timeout:
    pass
except (ssl.SSLError, OSError) as e:
    result.update({"closed": True, "error": err(e)})
finish(result, result["before"] and result["closed"])
"#
);

/// Spec `{host, port, cafile, ready, go, wait}`: `GET /sse`, event `one`
/// read (the upstream then holds the stream open for up to 10 s, waiting
/// for an ack that never comes), then `ready` and `go` as in
/// [`KEEPALIVE_ACROSS_A_CHANGE`], then the rest of the stream until it
/// ends. Succeeds when it ended before the upstream's next event.
pub const SSE_ACROSS_A_CHANGE: &str = concat!(
    prelude!(),
    r#"
result = {"events": []}
c = Conn(spec["host"], spec["port"], spec["cafile"])
c.request("GET", "/sse", headers={"Accept": "text/event-stream"})
r = c.getresponse()
result["status"] = r.status
def events():
    while True:
        line = r.readline()
        if not line:
            return
        line = line.decode().rstrip("\r\n")
        if line.startswith("data: "):
            yield line[len("data: "):]
stream = events()
result["events"].append(next(stream, None))
ready_then_go(spec)
try:
    result["events"].extend(stream)
except Exception as e:
    result["error"] = err(e)
finish(result, result["status"] == 200 and result["events"] == ["one"])
"#
);
