//! Opening a connection the way a target needs it (plain, TLS, through an
//! explicit proxy's `CONNECT`), and one GET on an HTTP/1.1 connection.

use std::sync::Arc;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper::{Request, client::conn::http1::SendRequest};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject as _};
use tokio::{
    io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _},
    net::TcpStream,
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
        let mut tcp = TcpStream::connect(self.dial.addr)
            .await
            .with_context(|| format!("connect {}", self.dial.addr))?;
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
        let io = self.open().await?;
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
