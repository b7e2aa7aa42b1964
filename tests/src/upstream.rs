//! Upstream servers the sandboxes talk to (through Sluice): a recording echo
//! server and a tiny HTTP/1.1 server, on loopback port 0, served from
//! background threads.
//!
//! Both record every byte they receive per connection, so a test can check
//! that the relay is byte-exact and that a refused connection never arrived.

use std::{
    io::{Read, Write},
    net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use crate::eventually;

/// One connection as the upstream saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The peer address (Sluice's side of the relayed connection).
    pub peer: SocketAddr,
    /// Every byte received, in order.
    pub received: Vec<u8>,
    /// The peer closed its side (EOF seen) or the connection failed.
    pub closed: bool,
}

type Log = Arc<Mutex<Vec<Arc<Mutex<Recorded>>>>>;

/// A listener thread that hands each connection to `serve`, recording it.
struct Server {
    addr: SocketAddr,
    log: Log,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(ip: IpAddr, serve: fn(TcpStream, &Mutex<Recorded>)) -> Server {
        let listener = TcpListener::bind(SocketAddr::new(ip, 0))
            .unwrap_or_else(|e| panic!("bind upstream on {ip}: {e}"));
        let addr = listener.local_addr().expect("local_addr");
        let log: Log = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (log2, stop2) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let peer = stream
                    .peer_addr()
                    .unwrap_or_else(|_| SocketAddr::new(ip, 0));
                let record = Arc::new(Mutex::new(Recorded {
                    peer,
                    received: Vec::new(),
                    closed: false,
                }));
                log2.lock().expect("log").push(record.clone());
                std::thread::spawn(move || {
                    serve(stream, &record);
                    record.lock().expect("record").closed = true;
                });
            }
        });
        Server { addr, log, stop }
    }

    fn connections(&self) -> Vec<Recorded> {
        self.log
            .lock()
            .expect("log")
            .iter()
            .map(|r| r.lock().expect("record").clone())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so the thread (and the port) goes away.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

/// Shared accessors of both server kinds.
macro_rules! server_api {
    ($ty:ident) => {
        impl $ty {
            /// On 127.0.0.1, a free port.
            pub fn v4() -> $ty {
                $ty::start(IpAddr::V4(Ipv4Addr::LOCALHOST))
            }

            /// On ::1, a free port.
            pub fn v6() -> $ty {
                $ty::start(IpAddr::V6(Ipv6Addr::LOCALHOST))
            }

            pub fn addr(&self) -> SocketAddr {
                self.server.addr
            }

            pub fn port(&self) -> u16 {
                self.server.addr.port()
            }

            /// The address as Sluice's audit prints it (`127.0.0.1:P`,
            /// `[::1]:P`).
            pub fn addr_string(&self) -> String {
                self.server.addr.to_string()
            }

            /// Every connection accepted so far.
            pub fn connections(&self) -> Vec<Recorded> {
                self.server.connections()
            }

            pub fn connection_count(&self) -> usize {
                self.server.log.lock().expect("log").len()
            }

            /// Waits until `n` connections were accepted and all are closed.
            pub fn wait_closed(&self, n: usize, timeout: Duration) -> Vec<Recorded> {
                eventually(
                    &format!("{n} finished connections at upstream {}", self.addr()),
                    timeout,
                    || {
                        let conns = self.connections();
                        if conns.len() >= n && conns.iter().all(|c| c.closed) {
                            Ok(conns)
                        } else {
                            Err(format!(
                                "{} connections, {} closed",
                                conns.len(),
                                conns.iter().filter(|c| c.closed).count()
                            ))
                        }
                    },
                )
            }
        }
    };
}

/// Echoes every byte back and records it; on EOF it half-closes its side
/// after echoing everything, so half-close is visible end to end.
pub struct EchoServer {
    server: Server,
}

impl EchoServer {
    pub fn start(ip: IpAddr) -> EchoServer {
        EchoServer {
            server: Server::start(ip, echo),
        }
    }
}

server_api!(EchoServer);

fn echo(mut stream: TcpStream, record: &Mutex<Recorded>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => {
                let _ = stream.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                // Record before echoing: once the client has the echo, the
                // record has the bytes.
                record
                    .lock()
                    .expect("record")
                    .received
                    .extend_from_slice(&buf[..n]);
                if stream.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// The body every HTTP response carries.
pub const HTTP_BODY: &str = "hello from the sluice-e2e upstream\n";

/// Reads one HTTP/1.1 request (head and any Content-Length body), records
/// its raw bytes, answers `200` with [`HTTP_BODY`] and closes.
pub struct HttpServer {
    server: Server,
}

impl HttpServer {
    pub fn start(ip: IpAddr) -> HttpServer {
        HttpServer {
            server: Server::start(ip, http),
        }
    }

    /// The raw request bytes of each connection.
    pub fn requests(&self) -> Vec<Vec<u8>> {
        self.connections().into_iter().map(|c| c.received).collect()
    }
}

server_api!(HttpServer);

fn http(mut stream: TcpStream, record: &Mutex<Recorded>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut request = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let complete = loop {
        if let Some(head_end) = find(&request, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..head_end]).to_ascii_lowercase();
            let body_len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if request.len() >= head_end + 4 + body_len {
                break true;
            }
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break false,
            Ok(n) => {
                request.extend_from_slice(&buf[..n]);
                record
                    .lock()
                    .expect("record")
                    .received
                    .extend_from_slice(&buf[..n]);
            }
        }
    };
    if complete {
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{HTTP_BODY}",
            HTTP_BODY.len()
        );
        let _ = stream.write_all(response.as_bytes());
        let _ = stream.shutdown(Shutdown::Write);
        // Drain until the client closes, so our close is not an RST.
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
