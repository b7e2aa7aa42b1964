//! Upstream connections for intercepted requests: dialled to exactly the
//! address the network decision checked (never a fresh lookup), verified
//! against the name with rustls, and pooled per (sandbox, name, address,
//! scheme) so keep-alive works across the sandbox's connections without one
//! sandbox ever riding on another's. Idle connections go when their key has
//! not been used for the idle timeout ([`Upstreams::sweep`]) and when their
//! sandbox is removed, so neither a hostile upstream that keeps them open
//! nor a sandbox that names many hosts makes the pool grow for good.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use hyper::{
    Request, Response,
    body::Incoming,
    client::conn::{http1, http2},
};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::respond::Body;
use crate::{resolve::Resolver, tls::upstream::describe};

/// Idle HTTP/1 connections kept per key.
const MAX_IDLE_H1: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub sandbox: Arc<str>,
    /// The name the upstream's certificate must be valid for (or an address).
    pub name: String,
    /// The checked address; nothing else is ever dialled.
    pub addr: SocketAddr,
    pub tls: bool,
}

impl Key {
    pub fn authority(&self) -> String {
        match self.name.parse::<std::net::Ipv6Addr>() {
            Ok(_) => format!("[{}]:{}", self.name, self.addr.port()),
            Err(_) => format!("{}:{}", self.name, self.addr.port()),
        }
    }
}

/// Why no upstream connection could be had: a stable label and a sentence.
#[derive(Debug, Clone)]
pub struct Failure {
    pub reason: &'static str,
    pub detail: String,
}

pub enum Sender {
    H1(http1::SendRequest<Body>),
    H2(http2::SendRequest<Body>),
}

impl Sender {
    pub fn is_h2(&self) -> bool {
        matches!(self, Sender::H2(_))
    }

    pub async fn send(
        &mut self,
        request: Request<Body>,
    ) -> Result<Response<Incoming>, hyper::Error> {
        match self {
            Sender::H1(sender) => {
                sender.ready().await?;
                sender.send_request(request).await
            }
            Sender::H2(sender) => {
                sender.ready().await?;
                sender.send_request(request).await
            }
        }
    }
}

struct Idle {
    h2: Option<http2::SendRequest<Body>>,
    h1: Vec<http1::SendRequest<Body>>,
    /// When a sender last came back.
    used: Instant,
}

impl Default for Idle {
    fn default() -> Idle {
        Idle {
            h2: None,
            h1: Vec::new(),
            used: Instant::now(),
        }
    }
}

pub struct Upstreams {
    /// ALPN h2 and http/1.1.
    tls: Arc<rustls::ClientConfig>,
    /// ALPN http/1.1 only: an upgrade (WebSocket) needs HTTP/1.1 end to end.
    tls_h1: Arc<rustls::ClientConfig>,
    connect_timeout: Duration,
    idle: Mutex<HashMap<Key, Idle>>,
    /// The daemon's resolver, for the names of redirects Sluice follows
    /// (a sandbox's own connections come with their checked address).
    /// `None`: no redirect is followed.
    resolver: Option<Arc<Resolver>>,
}

impl Upstreams {
    pub fn new(
        tls: Arc<rustls::ClientConfig>,
        tls_h1: Arc<rustls::ClientConfig>,
        connect_timeout: Duration,
    ) -> Upstreams {
        Upstreams {
            tls,
            tls_h1,
            connect_timeout,
            idle: Mutex::new(HashMap::new()),
            resolver: None,
        }
    }

    /// Looks names up with `resolver` (the daemon's) for followed redirects.
    pub fn with_resolver(mut self, resolver: Arc<Resolver>) -> Upstreams {
        self.resolver = Some(resolver);
        self
    }

    /// The addresses of `name` by the daemon's resolver; empty when it
    /// does not resolve, or there is no resolver.
    pub async fn lookup(&self, name: &str) -> Vec<std::net::IpAddr> {
        match &self.resolver {
            Some(resolver) => resolver.lookup_ip(name).await.unwrap_or_default(),
            None => Vec::new(),
        }
    }

    /// A sender for `key`: an idle pooled one when there is one, else a new
    /// connection. `upgrade` always gets a fresh HTTP/1.1 connection, which
    /// the upgrade then consumes.
    pub async fn sender(&self, key: &Key, upgrade: bool) -> Result<Sender, Failure> {
        if !upgrade && let Some(sender) = self.take_idle(key) {
            return Ok(sender);
        }
        self.connect(key, upgrade).await
    }

    /// Returns a sender to the pool once its request is sent; an HTTP/1
    /// sender is only handed out again when it is ready for another request.
    pub fn give_back(&self, key: &Key, sender: Sender) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        // The key is copied only for an entry not there yet.
        if !idle.contains_key(key) {
            idle.insert(key.clone(), Idle::default());
        }
        let Some(entry) = idle.get_mut(key) else {
            return;
        };
        entry.used = Instant::now();
        match sender {
            Sender::H2(sender) if !sender.is_closed() => entry.h2 = Some(sender),
            Sender::H1(sender) if !sender.is_closed() => {
                entry.h1.retain(|s| !s.is_closed());
                if entry.h1.len() < MAX_IDLE_H1 {
                    entry.h1.push(sender);
                }
            }
            _ => {}
        }
    }

    /// Closes the idle connections of every key unused for `older_than`,
    /// and forgets the keys left with none.
    pub fn sweep(&self, older_than: Duration) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.retain(|_, entry| {
            entry.h1.retain(|s| !s.is_closed());
            entry.h2 = entry.h2.take().filter(|s| !s.is_closed());
            entry.used.elapsed() < older_than && (entry.h2.is_some() || !entry.h1.is_empty())
        });
    }

    /// Closes the idle connections of `sandbox` (removed).
    pub fn forget_sandbox(&self, sandbox: &str) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.retain(|key, _| &*key.sandbox != sandbox);
    }

    fn take_idle(&self, key: &Key) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let entry = idle.get_mut(key)?;
        if let Some(h2) = &entry.h2 {
            if !h2.is_closed() {
                return Some(Sender::H2(h2.clone()));
            }
            entry.h2 = None;
        }
        entry.h1.retain(|s| !s.is_closed());
        let ready = entry.h1.iter().position(http1::SendRequest::is_ready)?;
        let sender = entry.h1.swap_remove(ready);
        if entry.h1.is_empty() && entry.h2.is_none() {
            idle.remove(key);
        }
        Some(Sender::H1(sender))
    }

    async fn connect(&self, key: &Key, h1_only: bool) -> Result<Sender, Failure> {
        let tcp =
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(key.addr)).await {
                Ok(Ok(tcp)) => tcp,
                Ok(Err(err)) => {
                    return Err(Failure {
                        reason: "connect_failed",
                        detail: format!("cannot connect to {}: {err}", key.addr),
                    });
                }
                Err(_) => {
                    return Err(Failure {
                        reason: "timeout",
                        detail: format!(
                            "no connection to {} within {:?}",
                            key.addr, self.connect_timeout
                        ),
                    });
                }
            };
        let _ = tcp.set_nodelay(true);
        if !key.tls {
            return h1(TokioIo::new(tcp)).await;
        }
        let server_name = ServerName::try_from(key.name.clone()).map_err(|_| Failure {
            reason: "tls_error",
            detail: format!("`{}` is not a valid TLS server name", key.name),
        })?;
        let config = if h1_only { &self.tls_h1 } else { &self.tls };
        let tls = tokio_rustls::TlsConnector::from(config.clone())
            .connect(server_name, tcp)
            .await
            .map_err(|err| {
                let (reason, detail) = describe(&err, &key.name);
                Failure { reason, detail }
            })?;
        if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
            h2(TokioIo::new(tls)).await
        } else {
            h1(TokioIo::new(tls)).await
        }
    }
}

async fn h1<T>(io: TokioIo<T>) -> Result<Sender, Failure>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = http1::Builder::new()
        .handshake(io)
        .await
        .map_err(handshake_failed)?;
    tokio::spawn(async move {
        let _ = connection.with_upgrades().await;
    });
    Ok(Sender::H1(sender))
}

async fn h2<T>(io: TokioIo<T>) -> Result<Sender, Failure>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .handshake(io)
        .await
        .map_err(handshake_failed)?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(Sender::H2(sender))
}

fn handshake_failed(err: hyper::Error) -> Failure {
    Failure {
        reason: "protocol_error",
        detail: format!("HTTP handshake with the upstream failed: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;
    use tokio::net::TcpListener;

    use super::*;

    fn upstreams() -> Upstreams {
        let tls = crate::tls::trusting_nothing();
        Upstreams::new(tls.clone(), tls, Duration::from_secs(5))
    }

    /// A pooled connection, and the upstream's end of it.
    async fn pooled(upstreams: &Upstreams, sandbox: &str) -> TcpStream {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let key = Key {
            sandbox: Arc::from(sandbox),
            name: "up.test".to_owned(),
            addr: listener.local_addr().expect("addr"),
            tls: false,
        };
        let sender = upstreams.sender(&key, false).await.expect("connects");
        let (server, _) = listener.accept().await.expect("accept");
        upstreams.give_back(&key, sender);
        server
    }

    async fn closed(mut server: TcpStream) -> bool {
        let mut byte = [0; 1];
        matches!(
            tokio::time::timeout(Duration::from_secs(10), server.read(&mut byte)).await,
            Ok(Ok(0) | Err(_))
        )
    }

    /// Idle connections do not stay for good: a sweep closes those of keys
    /// unused for longer than it is given, and a removed sandbox's go.
    #[tokio::test]
    async fn idle_connections_are_swept_and_go_with_their_sandbox() {
        let upstreams = upstreams();
        let kept = pooled(&upstreams, "a").await;
        upstreams.sweep(Duration::from_secs(3600));
        assert_eq!(
            upstreams.idle.lock().expect("lock").len(),
            1,
            "recently used"
        );
        upstreams.sweep(Duration::ZERO);
        assert!(upstreams.idle.lock().expect("lock").is_empty());
        assert!(closed(kept).await, "the swept connection is closed");

        let theirs = pooled(&upstreams, "b").await;
        let _others = pooled(&upstreams, "c").await;
        upstreams.forget_sandbox("b");
        assert_eq!(upstreams.idle.lock().expect("lock").len(), 1);
        assert!(
            closed(theirs).await,
            "the removed sandbox's connection is closed"
        );
    }
}
