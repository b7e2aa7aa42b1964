# The soak's traffic, run inside one sandbox until the spec's `until`
# (epoch seconds). One JSON line per operation goes to the spec's `log`:
# {"op", "t0", "t1", "ok", "n" (requests it made), "err"?}. Operations
# never raise: an error is what the line reports, and the harness judges
# it against the faults it made meanwhile.
import base64, hashlib, http.client, json, os, random, socket, ssl, struct, subprocess, sys, time
spec = json.loads(sys.argv[1])
HOST, TLS, PLAIN, DENIED = spec["host"], spec["tls_port"], spec["plain_port"], spec["denied_port"]
CTX = ssl.create_default_context(cafile=spec["cafile"])
CTX.set_alpn_protocols(["http/1.1"])
PII = json.dumps({"messages": [{"role": "user", "content":
    "mail ana.lopez@example.com or call about card 4111 1111 1111 1111"}]})
AUTH = {"Authorization": "Bearer " + spec["placeholder"]}
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
log = open(spec["log"], "a", buffering=1)

def err(e):
    if isinstance(e, OSError) and e.errno:
        import errno
        return errno.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__

class Conn(http.client.HTTPSConnection):
    def __init__(self):
        super().__init__(HOST, TLS, timeout=20)
    def connect(self):
        s = socket.create_connection(("127.0.0.1", TLS), timeout=self.timeout)
        self.sock = CTX.wrap_socket(s, server_hostname=HOST)

def expect(r, status, data=b""):
    if r.status != status:
        raise RuntimeError("status_%d" % r.status)

def h1_keepalive():
    """Five requests on one TLS connection: GETs, a JSON body with PII,
    one carrying the credential placeholder (the harness checks the
    upstream saw the secret: the answer has it redacted again)."""
    c = Conn()
    try:
        for i in range(5):
            if i == 2:
                c.request("POST", "/echo", body=PII.encode(), headers={"content-type": "application/json"})
            elif i == 3:
                c.request("GET", "/echo", headers=AUTH)
            else:
                c.request("GET", "/echo")
            r = c.getresponse()
            data = r.read()
            expect(r, 200)
    finally:
        c.close()
    return 5

def h1_new():
    """A plain HTTP request on a new connection."""
    c = http.client.HTTPConnection("127.0.0.1", PLAIN, timeout=20)
    try:
        c.request("GET", "/echo")
        r = c.getresponse()
        r.read()
        expect(r, 200)
    finally:
        c.close()
    return 1

def h2():
    """Three requests multiplexed on one HTTP/2 connection (curl)."""
    url = "https://%s:%d/echo" % (HOST, TLS)
    out = subprocess.run(["curl", "-sS", "--http2", "--max-time", "20", "--cacert", spec["cafile"],
                          "--resolve", "%s:%d:127.0.0.1" % (HOST, TLS), "-w", "\n=%{http_code} %{http_version}\n",
                          url, url, url],
                         capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise RuntimeError("curl_exit_%d" % out.returncode)
    answers = [l[1:] for l in out.stdout.splitlines() if l.startswith("=")]
    if answers != ["200 2"] * 3:
        raise RuntimeError("h2_answers_" + "_".join(answers).replace(" ", "_")[:40])
    return 3

def sse():
    """An event stream: event `one`, an ack on a second connection, `two`."""
    c = Conn()
    try:
        c.request("GET", "/sse", headers={"Accept": "text/event-stream"})
        r = c.getresponse()
        expect(r, 200)
        events = []
        while True:
            line = r.readline()
            if not line:
                break
            line = line.decode().rstrip("\r\n")
            if line.startswith("data: "):
                events.append(line[6:])
                if line == "data: one":
                    a = Conn()
                    a.request("GET", "/ack")
                    a.getresponse().read()
                    a.close()
    finally:
        c.close()
    # Another client's ack may release this stream first; both orders end in `two`.
    if events[:1] != ["one"] or events[-1:] != ["two"]:
        raise RuntimeError("sse_events")
    return 2

def frame(opcode, payload):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode, 0x80 | n]) if n < 126 else bytes([0x80 | opcode, 0xFE]) + n.to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))

def ws():
    """A WebSocket upgrade, two messages echoed byte for byte."""
    s = CTX.wrap_socket(socket.create_connection(("127.0.0.1", TLS), timeout=20), server_hostname=HOST)
    try:
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(("GET /ws HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (HOST, TLS, key)).encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                raise RuntimeError("ws_closed_in_handshake")
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError("ws_" + head.split(b"\r\n")[0].decode("latin-1").replace(" ", "_")[:24])
        for msg in (frame(0x1, b"soak hello"), frame(0x2, os.urandom(3000))):
            s.sendall(msg)
            while len(rest) < len(msg):
                chunk = s.recv(65536)
                if not chunk:
                    raise RuntimeError("ws_closed")
                rest += chunk
            if rest[:len(msg)] != msg:
                raise RuntimeError("ws_mismatch")
            rest = rest[len(msg):]
    finally:
        s.close()
    return 2

def dns_query(name, timeout):
    qid = random.randrange(65536)
    q = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.sendto(struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q + struct.pack(">HH", 1, 1), ("127.0.0.1", 53))
        data, _ = s.recvfrom(4096)
    finally:
        s.close()
    rid, flags, _, an = struct.unpack(">HHHH", data[:8])
    if rid != qid:
        raise RuntimeError("dns_id")
    return flags & 0xF, an

def dns_static():
    """A name from the daemon's static hosts: answered whatever the resolver does."""
    rcode, an = dns_query(HOST, 5)
    if rcode != 0 or an < 1:
        raise RuntimeError("rcode_%d_answers_%d" % (rcode, an))
    return 1

def dns_resolver():
    """A fresh name under the allowed zone: asked of the name server."""
    rcode, an = dns_query("r%08x.up.test" % random.getrandbits(32), 15)
    if rcode != 0 or an < 1:
        raise RuntimeError("rcode_%d" % rcode)
    return 1

def denied():
    """The destination no policy allows: 403, and it must never be reached."""
    c = http.client.HTTPConnection("127.0.0.1", DENIED, timeout=20)
    try:
        c.request("GET", "/echo")
        r = c.getresponse()
        r.read()
        if r.status != 403:
            raise RuntimeError("denied_status_%d" % r.status)
    except (ConnectionResetError, BrokenPipeError):
        pass  # refused before any head was read: also a refusal
    finally:
        c.close()
    return 1

# A policy that reads bodies refuses WebSocket upgrades (no stage reads
# their frames): only a worker whose policy does not sends them.
OPS = [h1_keepalive, h1_new, h2, sse] + ([ws] if spec["ws"] else []) + [dns_static, dns_resolver, denied]
while time.time() < spec["until"]:
    for op in OPS:
        if time.time() >= spec["until"]:
            break
        t0 = time.time()
        line = {"op": op.__name__, "t0": t0}
        try:
            line["n"] = op()
            line["ok"] = True
        except Exception as e:
            line["ok"] = False
            line["n"] = 1
            line["err"] = err(e) if not isinstance(e, RuntimeError) else str(e)
        line["t1"] = time.time()
        log.write(json.dumps(line) + "\n")
print(json.dumps({"ok": True}))
