//! Opening a connection the way a target needs it (plain, TLS, through an
//! explicit proxy's `CONNECT`), and one GET on an HTTP/1.1 connection.

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::Arc,
};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper::{Request, client::conn::http1::SendRequest};
use hyper_util::rt::TokioIo;
use nix::sys::socket::{setsockopt, sockopt};
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject as _};
use tokio::{
    io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _},
    net::{TcpSocket, TcpStream},
};
use tokio_rustls::TlsConnector;

use crate::spec::Dial;

pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A dial spec with its TLS configuration built once.
pub struct Dialer {
    pub dial: Dial,
    tls: Option<(TlsConnector, ServerName<'static>)>,
}

impl Dialer {
    pub fn new(dial: Dial) -> anyhow::Result<Dialer> {
        let tls = match &dial.tls {
            None => None,
            Some(tls) => {
                let mut roots = rustls::RootCertStore::empty();
                for cert in CertificateDer::pem_file_iter(&tls.ca_file)
                    .with_context(|| format!("reading {}", tls.ca_file.display()))?
                {
                    roots.add(cert?)?;
                }
                let mut config = rustls::ClientConfig::builder()
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                config.alpn_protocols = vec![b"http/1.1".to_vec()];
                // Every handshake is a full one: that is what is measured.
                config.resumption = rustls::client::Resumption::disabled();
                let name = ServerName::try_from(tls.sni.clone())?;
                Some((TlsConnector::from(Arc::new(config)), name))
            }
        };
        Ok(Dialer { dial, tls })
    }

    /// TCP, then `CONNECT` when through a proxy, then TLS when asked.
    pub async fn open(&self) -> anyhow::Result<Box<dyn Io>> {
        self.open_from(None).await
    }

    /// [`Dialer::open`] from `source` (any port) when given.
    pub async fn open_from(&self, source: Option<Ipv4Addr>) -> anyhow::Result<Box<dyn Io>> {
        let connect = async {
            match source {
                None => TcpStream::connect(self.dial.addr).await,
                Some(ip) => {
                    let socket = TcpSocket::new_v4()?;
                    // The port is chosen at connect, per 4-tuple: a bind
                    // would reserve one per source address out of the same
                    // range, and could land on the port of Sluice's
                    // listener, whose bind hook refuses it (EPERM).
                    setsockopt(&socket, sockopt::IpBindAddressNoPort, &true)
                        .map_err(std::io::Error::from)?;
                    socket.bind(SocketAddr::from((ip, 0)))?;
                    socket.connect(self.dial.addr).await
                }
            }
        };
        let mut tcp = connect
            .await
            .with_context(|| format!("connect {} from {source:?}", self.dial.addr))?;
        tcp.set_nodelay(true)?;
        if let Some(authority) = &self.dial.connect {
            connect_through(&mut tcp, authority).await?;
        }
        match &self.tls {
            None => Ok(Box::new(tcp)),
            Some((connector, name)) => {
                let tls = connector
                    .connect(name.clone(), tcp)
                    .await
                    .context("TLS handshake")?;
                Ok(Box::new(tls))
            }
        }
    }

    /// A new connection with an HTTP/1.1 client on it.
    pub async fn http(&self) -> anyhow::Result<SendRequest<Empty<Bytes>>> {
        self.http_from(None).await
    }

    /// [`Dialer::http`] from `source` when given.
    pub async fn http_from(
        &self,
        source: Option<Ipv4Addr>,
    ) -> anyhow::Result<SendRequest<Empty<Bytes>>> {
        let io = self.open_from(source).await?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
        tokio::spawn(conn);
        Ok(sender)
    }

    /// `GET /bytes/size`; returns the body bytes read.
    pub async fn get(
        &self,
        sender: &mut SendRequest<Empty<Bytes>>,
        size: u64,
    ) -> anyhow::Result<u64> {
        let mut request = Request::get(format!("/bytes/{size}")).header("host", &self.dial.host);
        for (name, value) in &self.dial.headers {
            request = request.header(name, value);
        }
        sender.ready().await?;
        let response = sender.send_request(request.body(Empty::new())?).await?;
        let status = response.status();
        let mut body = response.into_body();
        let mut read = 0u64;
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                read += data.len() as u64;
            }
        }
        if !status.is_success() {
            bail!("status {status}");
        }
        if read != size {
            bail!("body of {read} bytes, expected {size}");
        }
        Ok(read)
    }
}

/// Loopback source addresses the idle client spreads its connections
/// over: towards one destination, one source address has only the
/// ephemeral port range (`net.ipv4.ip_local_port_range`, about 28,000
/// ports by default), and the memory figure holds up to 100,000.
pub const SOURCES: usize = 8;

/// The source address of idle connection `i` when the target is on
/// loopback (127.0.0.1 to 127.0.0.8 in turn); none otherwise.
pub fn idle_source(target: SocketAddr, i: usize) -> Option<Ipv4Addr> {
    match target.ip() {
        IpAddr::V4(ip) if ip.is_loopback() => {
            Some(Ipv4Addr::new(127, 0, 0, 1 + (i % SOURCES) as u8))
        }
        _ => None,
    }
}

/// Sends `CONNECT authority` and reads the proxy's answer up to the end of
/// its head (nothing follows until the client speaks).
async fn connect_through(tcp: &mut TcpStream, authority: &str) -> anyhow::Result<()> {
    tcp.write_all(format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes())
        .await?;
    let mut head = Vec::with_capacity(256);
    let mut buf = [0u8; 512];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tcp.read(&mut buf).await?;
        if n == 0 || head.len() > 16 * 1024 {
            bail!("the proxy closed during CONNECT");
        }
        head.extend_from_slice(&buf[..n]);
    }
    let status = String::from_utf8_lossy(&head);
    let line = status.lines().next().unwrap_or_default();
    if line.split_whitespace().nth(1) != Some("200") {
        bail!("CONNECT refused: {line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_connections_spread_over_loopback_sources() {
        let loopback: SocketAddr = "127.0.0.1:443".parse().expect("addr");
        let sources: Vec<Option<Ipv4Addr>> = (0..10).map(|i| idle_source(loopback, i)).collect();
        assert_eq!(sources[0], Some(Ipv4Addr::new(127, 0, 0, 1)));
        assert_eq!(sources[7], Some(Ipv4Addr::new(127, 0, 0, 8)));
        assert_eq!(sources[8], sources[0]);
        let elsewhere: SocketAddr = "192.0.2.1:443".parse().expect("addr");
        assert_eq!(idle_source(elsewhere, 3), None);
    }
}
