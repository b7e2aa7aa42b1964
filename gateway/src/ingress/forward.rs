//! The request's way to the app and the answer's way back: dialling the
//! sandbox's port (inside its network namespace when it has one, so the
//! port is never reachable from anywhere else; on the host's loopback
//! otherwise), the request with the allowlisted headers (sent on a kept
//! connection, `pool`, where one is ready), the answer filtered, and an
//! upgrade (WebSocket, and anything else the app agrees to switch to)
//! spliced both ways.

use std::{
    io,
    net::{Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
    time::Duration,
};

use http_body_util::{BodyExt as _, combinators::BoxBody};
use hyper::{
    Request, Response, StatusCode, Version,
    body::{Bytes, Incoming},
    client::conn::http1::SendRequest,
    header::HeaderValue,
    upgrade::OnUpgrade,
};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::headers::{requested_upgrade, toward_app, toward_viewer};

pub type Body = BoxBody<Bytes, hyper::Error>;

#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("the app is not listening on port {port}: {source}")]
    Dial { port: u16, source: io::Error },
    #[error("the app did not answer within {0:?}")]
    DialTimeout(Duration),
    #[error("the app's answer was not HTTP/1.1: {0}")]
    Protocol(hyper::Error),
    #[error("the app switched protocols on a request that asked for no upgrade")]
    UnaskedUpgrade,
}

impl ForwardError {
    pub fn reason(&self) -> &'static str {
        match self {
            ForwardError::Dial { .. } | ForwardError::DialTimeout(_) => "app_unreachable",
            ForwardError::Protocol(_) | ForwardError::UnaskedUpgrade => "app_protocol_error",
        }
    }
}

/// A connection to `port` on loopback in the namespace at `netns` (the
/// daemon's own when `None`). The daemon is in no sandbox cgroup, so the
/// connect is not steered.
pub async fn dial(
    netns: Option<&Path>,
    port: u16,
    timeout: Duration,
) -> Result<TcpStream, ForwardError> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let dial_err = |source| ForwardError::Dial { port, source };
    let connect = async {
        match netns {
            None => TcpStream::connect(addr).await.map_err(dial_err),
            Some(path) => {
                let path: PathBuf = path.to_owned();
                // The socket keeps the namespace it was made in: connect
                // on a thread inside it (loopback answers at once), then
                // serve it from the runtime.
                let std = tokio::task::spawn_blocking(move || {
                    crate::netns::in_netns(&path, move || Ok(std::net::TcpStream::connect(addr)))
                })
                .await
                .map_err(|e| dial_err(io::Error::other(e)))?
                .map_err(|e| dial_err(io::Error::other(e)))?
                .map_err(dial_err)?;
                std.set_nonblocking(true).map_err(dial_err)?;
                TcpStream::from_std(std).map_err(dial_err)
            }
        }
    };
    tokio::time::timeout(timeout, connect)
        .await
        .map_err(|_| ForwardError::DialTimeout(timeout))?
}

/// An HTTP/1.1 connection to the app on `stream`, upgrades allowed.
pub async fn handshake(stream: TcpStream) -> Result<SendRequest<Incoming>, ForwardError> {
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(ForwardError::Protocol)?;
    tokio::spawn(async move {
        if let Err(err) = conn.with_upgrades().await {
            tracing::debug!(%err, "ingress: app connection ended");
        }
    });
    Ok(sender)
}

/// The viewer's request as the app gets it (as `path`, with the
/// allowlisted headers and, where configured, the signed viewer header),
/// and the viewer's side of an upgrade it asks for.
pub fn toward_app_request(
    mut request: Request<Incoming>,
    port: u16,
    path: &str,
    viewer_header: Option<HeaderValue>,
) -> (Request<Incoming>, Option<OnUpgrade>) {
    let viewer_upgrade = requested_upgrade(request.headers())
        .is_some()
        .then(|| hyper::upgrade::on(&mut request));
    let (parts, body) = request.into_parts();
    let mut out = Request::new(body);
    *out.method_mut() = parts.method;
    *out.version_mut() = Version::HTTP_11;
    *out.uri_mut() = path
        .parse()
        .unwrap_or_else(|_| hyper::Uri::from_static("/"));
    *out.headers_mut() = toward_app(&parts.headers, &format!("127.0.0.1:{port}"));
    if let Some(signed) = viewer_header {
        out.headers_mut().insert(super::viewer_header::NAME, signed);
    }
    (out, viewer_upgrade)
}

/// The app's answer as the viewer gets it; a switch of protocols the
/// viewer asked for is spliced both ways.
pub fn toward_viewer_answer(
    mut answer: Response<Incoming>,
    viewer_upgrade: Option<OnUpgrade>,
    csp: &HeaderValue,
) -> Result<Response<Body>, ForwardError> {
    let upgraded = answer.status() == StatusCode::SWITCHING_PROTOCOLS;
    match (upgraded, viewer_upgrade) {
        (true, Some(viewer)) => {
            let app = hyper::upgrade::on(&mut answer);
            tokio::spawn(async move {
                let (viewer, app) = match tokio::try_join!(viewer, app) {
                    Ok(both) => both,
                    Err(err) => {
                        tracing::debug!(%err, "ingress: upgrade not completed");
                        return;
                    }
                };
                let (mut viewer, mut app) = (TokioIo::new(viewer), TokioIo::new(app));
                let _ = tokio::io::copy_bidirectional(&mut viewer, &mut app).await;
            });
        }
        // A 101 nobody asked for is not passed on: the viewer's side would
        // never switch.
        (true, None) => {
            return Err(ForwardError::UnaskedUpgrade);
        }
        _ => {}
    }
    let (mut parts, body) = answer.into_parts();
    toward_viewer(&mut parts.headers, csp, upgraded);
    Ok(Response::from_parts(parts, body.boxed()))
}
