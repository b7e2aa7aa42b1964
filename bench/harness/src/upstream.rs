//! The upstream every target ends at: HTTP/1.1 with keep-alive, over plain
//! TCP and over TLS (a certificate for [`NAME`] and 127.0.0.1 from the
//! bench's upstream CA), answering `GET /bytes/N` with N bytes of
//! JSON-like text. Bodies are slices of one shared buffer, so serving costs
//! the upstream as little as possible. Runs on its own tokio runtime.

use std::{
    convert::Infallible,
    net::{Ipv4Addr, SocketAddr},
    pin::Pin,
    sync::{Arc, LazyLock},
    task::{Context, Poll},
};

use anyhow::Context as _;
use bytes::Bytes;
use hyper::{
    Request, Response, StatusCode,
    body::{Body, Frame, Incoming, SizeHint},
    service::service_fn,
};
use hyper_util::rt::TokioIo;
use sluice_e2e::pki::Issued;
use tokio::{net::TcpListener, runtime::Runtime};
use tokio_rustls::TlsAcceptor;

/// The name the upstream's certificate carries and clients ask for.
pub const NAME: &str = "bench.test";

/// Bodies are served in slices of this buffer.
const CHUNK: usize = 1 << 20;

static TEXT: LazyLock<Bytes> = LazyLock::new(|| {
    let line = b"{\"id\":1024,\"role\":\"assistant\",\"content\":\"The quick brown fox jumps over the lazy dog.\"}\n";
    Bytes::from(
        line.iter()
            .copied()
            .cycle()
            .take(CHUNK)
            .collect::<Vec<u8>>(),
    )
});

pub struct Upstream {
    pub plain: SocketAddr,
    pub tls: SocketAddr,
    runtime: Runtime,
}

impl Upstream {
    pub fn start(issued: Issued) -> anyhow::Result<Upstream> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("upstream")
            .enable_all()
            .build()?;
        let mut config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(issued.chain, issued.key)
            .context("upstream certificate")?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let (plain, tls) = runtime.block_on(async {
            let plain = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
            let tls = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
            anyhow::Ok((plain, tls))
        })?;
        let addrs = (plain.local_addr()?, tls.local_addr()?);
        runtime.spawn(serve(plain, None));
        runtime.spawn(serve(tls, Some(acceptor)));
        Ok(Upstream {
            plain: addrs.0,
            tls: addrs.1,
            runtime,
        })
    }

    /// Serves plain HTTP on `listener` too (the web app the ingress
    /// publishes: a listener made inside its network namespace); returns
    /// its address there.
    pub fn serve_plain(&self, listener: std::net::TcpListener) -> anyhow::Result<SocketAddr> {
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let listener = {
            let _runtime = self.runtime.enter();
            TcpListener::from_std(listener)?
        };
        self.runtime.spawn(serve(listener, None));
        Ok(addr)
    }
}

async fn serve(listener: TcpListener, tls: Option<TlsAcceptor>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let tls = tls.clone();
        tokio::spawn(async move {
            let http = hyper::server::conn::http1::Builder::new();
            let service = service_fn(handle);
            let _ = match tls {
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(stream) => http.serve_connection(TokioIo::new(stream), service).await,
                    Err(_) => return,
                },
                None => http.serve_connection(TokioIo::new(stream), service).await,
            };
        });
    }
}

async fn handle(request: Request<Incoming>) -> Result<Response<Repeat>, Infallible> {
    let size = request
        .uri()
        .path()
        .strip_prefix("/bytes/")
        .and_then(|n| n.parse::<u64>().ok());
    Ok(match size {
        Some(size) => Response::builder()
            .header("content-type", "application/json")
            .body(Repeat { left: size })
            .expect("static response"),
        None => Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Repeat { left: 0 })
            .expect("static response"),
    })
}

/// `left` more bytes of [`TEXT`], a buffer-sized slice at a time.
pub struct Repeat {
    left: u64,
}

impl Body for Repeat {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let n = self.left.min(CHUNK as u64);
        self.left -= n;
        Poll::Ready(Some(Ok(Frame::data(TEXT.slice(..n as usize)))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}
