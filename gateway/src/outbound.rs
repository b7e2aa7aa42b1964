//! The daemon's own outbound HTTP client: the one way Sluice itself, not a
//! sandbox, calls out (the approval webhook, OAuth token endpoints).
//!
//! It owns every step of one call: the name resolved with Sluice's
//! [`Resolver`] (static `resolver.hosts` first), a TCP connection to exactly
//! an address that lookup returned, TLS verified with the daemon's upstream
//! trust (`tls.upstream_ca_files` / system roots), one HTTP/1.1 request over
//! that connection, a deadline over all of it, and a bound on how much of
//! the answer is read. Callers say what to send and how to read the answer.
//!
//! Its destinations come from the daemon's config, written by the operator,
//! never from a sandbox; so the sandbox's SSRF guard does not apply (a
//! control plane or a token endpoint on a private network is normal). What
//! it refuses itself is plain HTTP to any address but loopback, so neither
//! an approval card nor a client secret crosses a network in the clear.

use std::{
    io,
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper::{
    Request, StatusCode, Uri,
    body::Bytes,
    client::conn::http1,
    header::{HOST, HeaderValue},
};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use crate::resolve::{ResolveError, Resolver};

/// Why a call got no answer. Messages name addresses, never a URL's path
/// or query: callers show the URL their own way.
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    #[error("not an http:// or https:// URL with a host and no user:password@")]
    BadUrl,
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error("plain http is only sent to a loopback address, not {0}; use https")]
    PlainHttp(IpAddr),
    #[error("cannot connect to {addr}: {source}")]
    Connect { addr: SocketAddr, source: io::Error },
    #[error("not a valid TLS server name")]
    ServerName,
    /// [`crate::tls::describe`]'s sentence for the failed handshake.
    #[error("{0}")]
    Tls(String),
    #[error("HTTP handshake failed: {0}")]
    Handshake(hyper::Error),
    #[error("the exchange failed: {0}")]
    Exchange(hyper::Error),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

/// Why an answer's body was not read whole; its status still stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("the answer is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the answer was cut short")]
    CutShort,
}

/// How long one call may take, and how much of its answer is read.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Resolve, connect, TLS, request and answer, all of it.
    pub deadline: Duration,
    /// Beyond this many bytes the body is [`BodyError::TooLarge`] and the
    /// connection is dropped: the deadline bounds the time, not what a
    /// misbehaving endpoint can make the daemon buffer.
    pub max_answer: usize,
}

/// An answer: its status, and its body when it was read whole.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Result<Bytes, BodyError>,
}

/// The client. Cheap to clone; the daemon builds one and hands it to each
/// caller.
#[derive(Clone)]
pub struct Client {
    resolver: Arc<Resolver>,
    /// Offers ALPN `http/1.1` only: this client speaks HTTP/1.1.
    tls: Arc<rustls::ClientConfig>,
}

/// Where a request's URI says to go.
struct Target {
    host: String,
    port: u16,
    tls: bool,
}

impl Target {
    fn of(uri: &Uri) -> Result<Target, OutboundError> {
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(OutboundError::BadUrl),
        };
        let authority = uri.authority().ok_or(OutboundError::BadUrl)?;
        // It would go nowhere but the `Host` header.
        if authority.as_str().contains('@') {
            return Err(OutboundError::BadUrl);
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if host.is_empty() {
            return Err(OutboundError::BadUrl);
        }
        Ok(Target {
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(if tls { 443 } else { 80 }),
            tls,
        })
    }
}

impl Client {
    /// `tls` must offer ALPN `http/1.1` only (the daemon's `client_h1`).
    pub fn new(resolver: Arc<Resolver>, tls: Arc<rustls::ClientConfig>) -> Client {
        Client { resolver, tls }
    }

    /// Sends `request`, whose URI is absolute (`https://host[:port]/path`,
    /// or `http://` to a loopback address), on a connection of its own.
    /// The request goes out in origin form with `Host` set to the URI's
    /// authority as written; the caller sets every other header.
    pub async fn send(
        &self,
        request: Request<Full<Bytes>>,
        limits: Limits,
    ) -> Result<Answer, OutboundError> {
        tokio::time::timeout(limits.deadline, self.exchange(request, limits.max_answer))
            .await
            .map_err(|_| OutboundError::Timeout(limits.deadline))?
    }

    async fn exchange(
        &self,
        mut request: Request<Full<Bytes>>,
        max_answer: usize,
    ) -> Result<Answer, OutboundError> {
        let target = Target::of(request.uri())?;
        let authority = request.uri().authority().map(|a| a.as_str().to_owned());
        let host = HeaderValue::try_from(authority.unwrap_or_default())
            .map_err(|_| OutboundError::BadUrl)?;
        let path = request.uri().path_and_query().cloned();
        *request.uri_mut() = path.map_or_else(|| Uri::from_static("/"), Uri::from);
        request.headers_mut().insert(HOST, host);
        let tcp = self.dial(&target).await?;
        if !target.tls {
            return send(tcp, request, max_answer).await;
        }
        let name =
            ServerName::try_from(target.host.clone()).map_err(|_| OutboundError::ServerName)?;
        let stream = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| OutboundError::Tls(crate::tls::describe(&e, &target.host).1))?;
        send(stream, request, max_answer).await
    }

    /// Connects to the first address of the name that accepts, never to
    /// anything the lookup did not return (no second lookup between the
    /// check and the dial).
    async fn dial(&self, target: &Target) -> Result<TcpStream, OutboundError> {
        let addrs = self.resolver.lookup_ip(&target.host).await?;
        let mut last = None;
        for ip in addrs {
            if !target.tls && !ip.is_loopback() {
                return Err(OutboundError::PlainHttp(ip));
            }
            let addr = SocketAddr::new(ip, target.port);
            match TcpStream::connect(addr).await {
                Ok(tcp) => return Ok(tcp),
                Err(source) => last = Some(OutboundError::Connect { addr, source }),
            }
        }
        // A lookup answers at least one address or an error.
        Err(last
            .unwrap_or_else(|| OutboundError::Resolve(ResolveError::NotFound(target.host.clone()))))
    }
}

/// One request over `stream`, then the answer, read up to `max_answer`.
async fn send<S>(
    stream: S,
    request: Request<Full<Bytes>>,
    max_answer: usize,
) -> Result<Answer, OutboundError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(OutboundError::Handshake)?;
    let exchange = async move {
        let response = sender
            .send_request(request)
            .await
            .map_err(OutboundError::Exchange)?;
        let status = response.status();
        let body = Limited::new(response.into_body(), max_answer)
            .collect()
            .await
            .map(|collected| collected.to_bytes())
            .map_err(|e| {
                if e.is::<LengthLimitError>() {
                    BodyError::TooLarge(max_answer)
                } else {
                    BodyError::CutShort
                }
            });
        Ok(Answer { status, body })
        // `sender` and the body end here, so the connection closes
        // (and `join!` returns) instead of idling until the deadline.
    };
    let (_, answer) = tokio::join!(connection, exchange);
    answer
}

#[cfg(test)]
#[path = "outbound_tests.rs"]
mod tests;
