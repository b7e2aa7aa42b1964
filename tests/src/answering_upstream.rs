//! An HTTPS upstream whose answers the test writes: a function of each
//! request's head gives the headers and the body, and the body leaves a
//! chunk at a time (each its own frame, flushed, the next after a short
//! pause so it reaches Sluice in a read of its own), so a test decides
//! where an answer is cut. On loopback port 0, with a certificate from the
//! test CA, on its own tokio runtime; HTTP/1.1 only.

use std::{
    convert::Infallible,
    net::{Ipv4Addr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::{Request, Response, body::Incoming, http::request::Parts, service::service_fn};
use hyper_util::rt::TokioIo;
use tokio::{net::TcpListener, sync::mpsc};
use tokio_rustls::TlsAcceptor;

use crate::{pki::TestCa, stream_body::ChannelBody};

/// Between two chunks of a body: long enough that the first has left the
/// upstream's socket before the second is written.
const CHUNK_PAUSE: Duration = Duration::from_millis(20);

/// What to answer (always 200).
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub headers: Vec<(String, String)>,
    /// The body, in the pieces it is sent in.
    pub chunks: Vec<Vec<u8>>,
}

/// How the upstream answers a request, from its head.
pub type Answerer = fn(&Parts) -> Answer;

/// The upstream; dropping it stops the server.
pub struct AnsweringUpstream {
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl AnsweringUpstream {
    /// TLS on 127.0.0.1 with a certificate from `ca` for `names`.
    pub fn v4(names: &[&str], ca: &TestCa, answer: Answerer) -> AnsweringUpstream {
        let issued = ca.issue(names);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(issued.chain, issued.key)
            .expect("server certificate");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("answering-upstream")
            .enable_all()
            .build()
            .expect("tokio runtime");
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap_or_else(|e| panic!("bind upstream: {e}"));
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local_addr");
        let listener = {
            let _guard = runtime.enter();
            TcpListener::from_std(listener).expect("tokio listener")
        };
        runtime.spawn(accept_loop(listener, acceptor, answer));
        AnsweringUpstream {
            addr,
            runtime: Some(runtime),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Drop for AnsweringUpstream {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn accept_loop(listener: TcpListener, acceptor: TlsAcceptor, answer: Answerer) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = service_fn(move |req| respond(req, answer));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

async fn respond(
    req: Request<Incoming>,
    answer: Answerer,
) -> Result<Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>, Infallible> {
    let (parts, body) = req.into_parts();
    // Read to the end, so the connection can carry the next request.
    let _ = body.collect().await;
    let Answer { headers, chunks } = answer(&parts);
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        for (i, chunk) in chunks.into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(CHUNK_PAUSE).await;
            }
            if tx.send(Bytes::from(chunk)).await.is_err() {
                return;
            }
        }
    });
    let mut response = Response::builder().status(200);
    for (name, value) in headers {
        response = response.header(name, value);
    }
    Ok(response
        .body(ChannelBody(rx).boxed())
        .expect("a valid answer"))
}
