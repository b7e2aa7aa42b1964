//! Python programs the tests run inside sandboxes. Each prints one JSON
//! object on its last stdout line (see `Output::json`) and exits non-zero
//! when what it tried did not work.

/// `HOST PORT [PAYLOAD_HEX|-]`: connect; with a payload, send it, half-close,
/// read until EOF and expect the payload echoed. Errors report the errno name
/// (`EPERM`, `ECONNREFUSED`, `ECONNRESET`, ...) and the stage that failed.
pub const TCP_PROBE: &str = r#"
import errno, json, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
payload = bytes.fromhex(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] != "-" else None
def fail(stage, e):
    name = errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__
    print(json.dumps({"ok": False, "stage": stage, "errno": name, "error": str(e)}))
    sys.exit(1)
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.settimeout(10)
try:
    s.connect((host, port))
except OSError as e:
    fail("connect", e)
if payload is None:
    s.close()
    print(json.dumps({"ok": True, "stage": "connect"}))
    sys.exit(0)
got = b""
try:
    s.sendall(payload)
    s.shutdown(socket.SHUT_WR)
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
except OSError as e:
    fail("exchange", e)
print(json.dumps({"ok": got == payload, "stage": "done", "received": got.hex()}))
sys.exit(0 if got == payload else 1)
"#;

/// `HOST PORT IN_FILE OUT_FILE`: send IN_FILE (from a second thread, so
/// large payloads cannot deadlock), half-close, read until EOF into OUT_FILE.
pub const SEND_FILE: &str = r#"
import json, socket, sys, threading
host, port, src, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
data = open(src, "rb").read()
s = socket.create_connection((host, port), timeout=15)
errors = []
def send():
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
    except OSError as e:
        errors.append("send: " + repr(e))
t = threading.Thread(target=send)
t.start()
chunks = []
try:
    while True:
        c = s.recv(1 << 16)
        if not c:
            break
        chunks.append(c)
except OSError as e:
    errors.append("recv: " + repr(e))
t.join()
got = b"".join(chunks)
open(dst, "wb").write(got)
ok = not errors and got == data
print(json.dumps({"ok": ok, "sent": len(data), "received": len(got), "errors": errors}))
sys.exit(0 if ok else 1)
"#;

/// No arguments: tries what a sandbox must not do and prints, per attempt,
/// `ok` or the errno name.
pub const FORBIDDEN_SOCKETS: &str = r#"
import errno, json, socket
def attempt(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__
def udp(fam, addr):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        s.sendto(b"x", addr)
    finally:
        s.close()
def sock(fam, kind, proto):
    socket.socket(fam, kind, proto).close()
def connected(fam, kind, proto, addr):
    s = socket.socket(fam, kind, proto)
    try:
        s.settimeout(2)
        s.connect(addr)
        s.send(b"x")
    finally:
        s.close()
print(json.dumps({
    "udplite4": attempt(lambda: connected(socket.AF_INET, socket.SOCK_DGRAM, 136, ("127.0.0.1", 9))),
    "udplite6": attempt(lambda: connected(socket.AF_INET6, socket.SOCK_DGRAM, 136, ("::1", 9))),
    "sctp4": attempt(lambda: sock(socket.AF_INET, socket.SOCK_STREAM, 132)),
    "udp4_port9": attempt(lambda: udp(socket.AF_INET, ("127.0.0.1", 9))),
    "udp6_port9": attempt(lambda: udp(socket.AF_INET6, ("::1", 9))),
    "raw4_icmp": attempt(lambda: sock(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
    "raw6_icmp": attempt(lambda: sock(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)),
    "raw4_tcp": attempt(lambda: sock(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)),
    "packet": attempt(lambda: sock(socket.AF_PACKET, socket.SOCK_RAW, 0x0300)),
}))
"#;

/// `PORT`: binds a TCP socket to PORT on each loopback and wildcard
/// address and listens; prints, per address, `ok` or the errno name, and
/// under `any_port` what a bind to port 0 gave.
pub const BIND_PORT: &str = r#"
import errno, json, socket, sys
port = int(sys.argv[1])
def attempt(fam, host, port):
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        s.bind((host, port))
        s.listen()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__
    finally:
        s.close()
print(json.dumps({
    "127.0.0.1": attempt(socket.AF_INET, "127.0.0.1", port),
    "0.0.0.0": attempt(socket.AF_INET, "0.0.0.0", port),
    "::1": attempt(socket.AF_INET6, "::1", port),
    "::": attempt(socket.AF_INET6, "::", port),
    "any_port": attempt(socket.AF_INET, "127.0.0.1", 0),
}))
"#;

/// `SERVER PORT NAME`: one DNS A query over unconnected UDP (`sendto` /
/// `recvfrom`); prints the reply's source address and answers.
pub const DNS_QUERY: &str = r#"
import errno, json, random, socket, struct, sys
host, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
qid = random.randrange(65536)
question = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
query = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + question + struct.pack(">HH", 1, 1)
s = socket.socket(fam, socket.SOCK_DGRAM)
s.settimeout(5)
try:
    s.sendto(query, (host, port))
    data, frm = s.recvfrom(4096)
except OSError as e:
    name = errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__
    print(json.dumps({"ok": False, "errno": name, "error": str(e)}))
    sys.exit(1)
rid, flags, qd, an, _, _ = struct.unpack(">HHHHHH", data[:12])
def skip_name(off):
    while True:
        l = data[off]
        if l == 0:
            return off + 1
        if l & 0xC0 == 0xC0:
            return off + 2
        off += 1 + l
off = 12
for _ in range(qd):
    off = skip_name(off) + 4
answers = []
for _ in range(an):
    off = skip_name(off)
    typ, _, _, rdlen = struct.unpack(">HHIH", data[off:off + 10])
    off += 10
    rd = data[off:off + rdlen]
    off += rdlen
    if typ == 1:
        answers.append(socket.inet_ntop(socket.AF_INET, rd))
    elif typ == 28:
        answers.append(socket.inet_ntop(socket.AF_INET6, rd))
print(json.dumps({"ok": True, "id_match": rid == qid, "rcode": flags & 0xF,
                  "from": [frm[0], frm[1]], "answers": answers}))
"#;

/// `HOST PORT LABEL N`: N threads each open a connection; once all N are
/// open (a barrier), each sends `LABEL i\n` and expects it echoed.
pub const MANY_CONNECTIONS: &str = r#"
import json, socket, sys, threading
host, port, label, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
barrier = threading.Barrier(n, timeout=15)
results = [None] * n
def one(i):
    msg = f"{label} {i}\n".encode()
    try:
        s = socket.create_connection((host, port), timeout=15)
    except OSError as e:
        results[i] = "connect: " + repr(e)
        barrier.abort()
        return
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass
    try:
        s.sendall(msg)
        got = b""
        while not got.endswith(b"\n"):
            c = s.recv(4096)
            if not c:
                break
            got += c
        results[i] = "ok" if got == msg else "echo mismatch: " + repr(got)
    except OSError as e:
        results[i] = "exchange: " + repr(e)
    finally:
        s.close()
threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
errors = {str(i): r for i, r in enumerate(results) if r != "ok"}
print(json.dumps({"succeeded": n - len(errors), "errors": errors}))
sys.exit(0 if not errors else 1)
"#;

/// `HOST PORT`: connect, say nothing, and wait for the other side to end
/// the connection (EOF or reset); prints how it ended.
pub const SILENT_CLIENT: &str = r#"
import errno, json, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.settimeout(60)
s.connect((host, port))
print(json.dumps({"connected": True}), flush=True)
try:
    data = s.recv(1)
    end = "eof" if not data else "data"
except OSError as e:
    end = errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__
print(json.dumps({"ended": end}))
"#;

/// Lower-case hex, as `TCP_PROBE` takes its payload.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The request curl sent, rebuilt from `curl -v`'s `> ` lines (curl prints
/// each header line with its CRLF, and the final blank line as `> \r`).
pub fn curl_request_from_verbose(stderr: &str) -> String {
    stderr
        .split('\n')
        .filter_map(|line| line.strip_prefix("> "))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// Sends `count` A queries for distinct names `<i>x<random>.<domain>` to
/// host:port, one after the other, and prints the response codes in order
/// (`null` for a query that got no answer).
pub const DNS_STREAM: &str = r#"
import json, random, socket, struct, sys
host, port, domain, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
codes = []
for i in range(count):
    name = "%dx%08x.%s" % (i, random.getrandbits(32), domain)
    qid = random.randrange(65536)
    q = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
    s.sendto(struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q + struct.pack(">HH", 1, 1), (host, port))
    try:
        data, _ = s.recvfrom(4096)
        codes.append(struct.unpack(">HH", data[:4])[1] & 0xF)
    except OSError:
        codes.append(None)
print(json.dumps(codes))
"#;

/// A TLS ClientHello for SNI `name` to host:port; prints how it ended
/// ("handshake" error text, "reset", "closed").
pub const TLS_HELLO: &str = r#"
import json, socket, ssl, sys
host, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context()
s = socket.create_connection((host, port), timeout=5)
try:
    ctx.wrap_socket(s, server_hostname=name)
    print(json.dumps({"result": "handshake"}))
except ConnectionResetError:
    print(json.dumps({"result": "reset"}))
except (ssl.SSLError, OSError) as e:
    print(json.dumps({"result": "error", "error": str(e)}))
"#;

/// Python for the scripts that open explicit-proxy tunnels:
/// `send_connect(s, target, credentials)` writes a CONNECT request for
/// `target` (`host:port`) with basic `credentials` (`user:password`) on
/// socket `s`. A macro, so `concat!` can put it before each script.
macro_rules! send_connect {
    () => {
        r#"
import base64
def send_connect(s, target, credentials):
    auth = base64.b64encode(credentials.encode()).decode()
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: Basic {auth}\r\n\r\n".encode())
"#
    };
}

/// `ADDR PORT TUNNEL HOST...`: one connection to ADDR:PORT, through a
/// CONNECT tunnel when TUNNEL is `TARGET=USER:PASSWORD` (an explicit proxy
/// at ADDR:PORT, TARGET its `host:port`; `-` for none), and on it a
/// `GET /echo` per HOST (`name:port`, the Host header), each sent once the
/// answer to the one before was read whole (keep-alive). Prints the status
/// of each answer, or `closed` when the connection ended first.
pub const KEEPALIVE_HOSTS: &str = concat!(
    send_connect!(),
    r#"
import json, socket, sys
addr, port, tunnel, hosts = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
s = socket.create_connection((addr, port), timeout=10)
f = s.makefile("rb")
def head():
    line = f.readline()
    length = 0
    while True:
        header = f.readline()
        if header in (b"\r\n", b""):
            break
        name, _, value = header.decode().partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return line, length
if tunnel != "-":
    target, _, user = tunnel.partition("=")
    send_connect(s, target, user)
    line, _ = head()
    if b" 200 " not in line:
        print(json.dumps({"connect": line.decode(errors="replace")}))
        sys.exit(1)
statuses = []
for host in hosts:
    try:
        s.sendall(f"GET /echo HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        line, length = head()
        if not line:
            statuses.append("closed")
            break
        f.read(length)
        statuses.append(int(line.split()[1]))
    except OSError:
        statuses.append("closed")
        break
print(json.dumps({"statuses": statuses}))
"#
);

/// `ADDR PORT PENDING PER_SOURCE TARGET TOKEN_A TOKEN_B LIMIT`, against an
/// explicit proxy whose `max_pending_connections` is PENDING, of which one
/// source address may hold PER_SOURCE, and whose sandboxes may each have
/// LIMIT connections open. From 127.0.0.1 it holds PER_SOURCE connections
/// that send nothing and opens one more (is it closed at once?); from
/// 127.0.0.2 the rest of PENDING, and from 127.0.0.3 one more (closed at
/// once?). Then it lets them go and waits for a tunnel to TARGET with
/// TOKEN_A to open, holds LIMIT tunnels with TOKEN_B (another sandbox) and
/// opens one more (its status).
pub const PROXY_CAPS: &str = concat!(
    send_connect!(),
    r#"
import json, socket, sys, time
addr, port, pending, per_source, target, token_a, token_b, limit = sys.argv[1:9]
port, pending, per_source, limit = int(port), int(pending), int(per_source), int(limit)
def connect(source="127.0.0.1"):
    return socket.create_connection((addr, port), timeout=10, source_address=(source, 0))
def tunnel(token):
    s = connect()
    try:
        send_connect(s, target, f"vm:{token}")
        line = s.makefile("rb").readline()
    except OSError:
        line = b""
    return s, (int(line.split()[1]) if line else "closed")
def closed_at_once(source):
    try:
        s = connect(source)
    except ConnectionResetError:
        return True  # reset before connect() even returned
    # Well before the daemon's 10 s head timeout would close it anyway.
    s.settimeout(3)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    finally:
        s.close()
out = {}
silent = [connect("127.0.0.1") for _ in range(per_source)]
out["past_source_closed"] = closed_at_once("127.0.0.1")
silent += [connect("127.0.0.2") for _ in range(pending - per_source)]
out["past_pending_closed"] = closed_at_once("127.0.0.3")
for s in silent:
    s.close()
deadline = time.monotonic() + 10
while True:
    s, status = tunnel(token_a)
    s.close()
    if status == 200 or time.monotonic() > deadline:
        out["after_pending"] = status
        break
held = [tunnel(token_b) for _ in range(limit)]
out["held"] = [status for _, status in held]
s, out["past_limit"] = tunnel(token_b)
print(json.dumps(out))
"#
);

/// `ADDR PORT TARGET TOKEN HEX`: through the explicit proxy at ADDR:PORT,
/// a CONNECT tunnel to TARGET (`host:port`) with TOKEN (sandbox `vm`'s
/// basic credentials); sends the bytes of HEX, half-closes and reads until
/// EOF. Prints whether the same bytes came back.
pub const TUNNEL_ECHO: &str = concat!(
    send_connect!(),
    r#"
import json, socket, sys
addr, port, target, token, payload = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], bytes.fromhex(sys.argv[5])
s = socket.create_connection((addr, port), timeout=10)
send_connect(s, target, f"vm:{token}")
got = b""
while b"\r\n\r\n" not in got:
    chunk = s.recv(4096)
    if not chunk:
        break
    got += chunk
head, _, got = got.partition(b"\r\n\r\n")
if b" 200 " not in head.split(b"\r\n")[0] + b" ":
    print(json.dumps({"connect": head.decode(errors="replace")}))
    sys.exit(1)
s.sendall(payload)
s.shutdown(socket.SHUT_WR)
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    got += chunk
print(json.dumps({"echoed": got == payload, "received": got.hex()}))
"#
);

/// `HOST PORT NAME ECH`: a minimal TLS 1.3 ClientHello for SNI NAME, with
/// an (outer) encrypted_client_hello extension when ECH is 1, sent raw;
/// prints whether the connection was then `reset`, `closed`, or answered
/// (`data`: an echo upstream sends the hello back).
pub const RAW_HELLO: &str = r#"
import json, os, socket, struct, sys
host, port, name, ech = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), sys.argv[4] == "1"
def vec16(b): return struct.pack(">H", len(b)) + b
def ext(kind, data): return struct.pack(">H", kind) + vec16(data)
exts = ext(0, vec16(b"\x00" + vec16(name)))
exts += ext(43, b"\x02\x03\x04")                      # supported_versions: TLS 1.3
exts += ext(10, vec16(b"\x00\x1d"))                   # supported_groups: x25519
exts += ext(13, vec16(b"\x08\x07"))                   # signature_algorithms: ed25519
exts += ext(51, vec16(b"\x00\x1d" + vec16(os.urandom(32))))  # key_share
if ech:
    # outer, HPKE KDF/AEAD 1/1, config id, encapsulated key, payload
    exts += ext(0xfe0d, b"\x00\x00\x01\x00\x01\x2a" + vec16(os.urandom(32)) + vec16(os.urandom(64)))
body = b"\x03\x03" + os.urandom(32) + b"\x00" + vec16(b"\x13\x01") + b"\x01\x00" + vec16(exts)
hello = b"\x01" + struct.pack(">I", len(body))[1:] + body
s = socket.create_connection((host, port), timeout=5)
s.sendall(b"\x16\x03\x01" + vec16(hello))
try:
    got = s.recv(1)
    print(json.dumps({"result": "data" if got else "closed"}))
except ConnectionResetError:
    print(json.dumps({"result": "reset"}))
"#;

/// `ADDR PORT HOST N`: N+1 WebSocket upgrades of `/ws` on plain HTTP to
/// ADDR:PORT (Host HOST), each kept open once upgraded. Prints each one's
/// status line code, or `closed` when the connection ended first.
pub const WEBSOCKETS_HELD: &str = r#"
import base64, json, os, socket, sys
addr, port, host, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
held, statuses = [], []
for _ in range(n + 1):
    key = base64.b64encode(os.urandom(16)).decode()
    try:
        s = socket.create_connection((addr, port), timeout=10)
        s.sendall(f"GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        statuses.append(int(head.split()[1]) if head else "closed")
        held.append(s)
    except OSError:
        statuses.append("closed")
print(json.dumps({"statuses": statuses}))
"#;

/// `ADDR PORT HEX`: sends the bytes of HEX (a raw HTTP request) and reads
/// the answer's status line; prints its code, or `closed`.
pub const RAW_HTTP: &str = r#"
import json, socket, sys
addr, port, raw = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])
s = socket.create_connection((addr, port), timeout=10)
s.sendall(raw)
line = s.makefile("rb").readline()
print(json.dumps({"status": int(line.split()[1]) if line else "closed"}))
"#;
