//! The ingress listener: accepts viewers' connections (TLS with the
//! operator's certificate, or plain HTTP from the listed proxies only),
//! serves HTTP/1.1 and HTTP/2 with upgrades, and for each request acts
//! on `admit`: forwards, redirects, or answers a page that says why, each
//! outcome counted and every refusal audited.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use http_body_util::{BodyExt as _, Full};
use hyper::{
    Request, Response, StatusCode,
    body::{Bytes, Incoming},
    client::conn::http1::SendRequest,
    header::{self, HeaderValue},
    service::service_fn,
};
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject as _};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::{
    admit::{Admission, Lookup, Refusal, Settings, Target, admit},
    config::IngressConfig,
    forward::{self, Body},
    metrics::IngressMetrics,
    pool::AppConns,
    session::Sessions,
    token::Verifier,
};
use crate::audit::{Audit, Event, Fold};

/// How long a viewer has to send a request's head, and to finish a TLS
/// handshake.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// The running ingress.
pub struct Ingress {
    pub config: IngressConfig,
    settings: Settings,
    csp: HeaderValue,
    verifier: Verifier,
    pub sessions: Sessions,
    lookup: Arc<dyn Lookup>,
    metrics: IngressMetrics,
    audit: Audit,
    tls: Option<TlsAcceptor>,
    viewer_header: Option<super::viewer_header::Signer>,
    /// Connections from peers that are not trusted proxies, audited at
    /// most once a second.
    untrusted: Mutex<Fold>,
    /// Kept-alive connections to the apps.
    conns: AppConns,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Config(#[from] super::config::ConfigError),
    #[error("{0}")]
    Keys(#[from] super::token::KeyError),
    #[error("ingress.tls: {0}")]
    Tls(String),
    #[error("ingress.viewer_header: {0}")]
    ViewerHeader(String),
}

impl Ingress {
    /// Checks the section, reads its keys and certificate.
    pub fn new(
        config: IngressConfig,
        lookup: Arc<dyn Lookup>,
        metrics: IngressMetrics,
        audit: Audit,
    ) -> Result<Ingress, StartError> {
        config.check()?;
        let verifier = Verifier::load(&config.viewer_tokens)?;
        let csp = config
            .csp
            .header()
            .map_err(super::config::ConfigError::from)?;
        let tls = config.tls.as_ref().map(tls_acceptor).transpose()?;
        let viewer_header = config
            .viewer_header
            .as_ref()
            .map(super::viewer_header::Signer::load)
            .transpose()
            .map_err(StartError::ViewerHeader)?;
        Ok(Ingress {
            settings: Settings {
                apps_domain: config.apps_domain.clone(),
                route_by: config.route_by,
                same_site: config.cookie_same_site,
            },
            csp,
            verifier,
            sessions: Sessions::default(),
            lookup,
            metrics,
            audit,
            tls,
            viewer_header,
            untrusted: Mutex::new(Fold::default()),
            conns: AppConns::default(),
            config,
        })
    }

    /// Binds every `listen` address.
    pub async fn bind(&self) -> std::io::Result<Vec<TcpListener>> {
        let mut listeners = Vec::new();
        for addr in &self.config.listen {
            listeners.push(TcpListener::bind(addr).await?);
        }
        Ok(listeners)
    }

    /// Accepts viewers on `listener` until the task is dropped.
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!(%err, "ingress: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            if !self.config.peer_trusted(peer.ip()) {
                self.untrusted_peer(peer);
                continue;
            }
            let this = self.clone();
            tokio::spawn(async move { this.connection(stream, peer).await });
        }
    }

    fn untrusted_peer(&self, peer: SocketAddr) {
        self.metrics
            .requests
            .with_label_values(&["-", "deny", "untrusted_peer"])
            .inc();
        let folded = self
            .untrusted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .admit(Instant::now());
        if let Some(folded) = folded {
            self.audit.record(&Event {
                event: "ingress",
                verdict: "deny",
                reason: "untrusted_peer",
                rule: Some("config:ingress.trusted_proxies"),
                dst: Some(peer.to_string()),
                detail: (folded > 0).then(|| format!("{folded} more since the last event")),
                ..Event::default()
            });
        }
    }

    async fn connection(self: Arc<Self>, stream: tokio::net::TcpStream, peer: SocketAddr) {
        match &self.tls {
            None => self.http(TokioIo::new(stream)).await,
            Some(acceptor) => {
                match tokio::time::timeout(HEAD_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => self.http(TokioIo::new(tls)).await,
                    Ok(Err(err)) => {
                        tracing::debug!(%err, %peer, "ingress: TLS handshake failed");
                        self.count("-", "deny", "tls_handshake");
                    }
                    Err(_) => self.count("-", "deny", "tls_handshake_timeout"),
                }
            }
        }
    }

    async fn http<I>(self: Arc<Self>, io: I)
    where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(HEAD_TIMEOUT);
        builder.http2().timer(TokioTimer::new());
        let this = self.clone();
        let service = service_fn(move |request| {
            let this = this.clone();
            async move {
                let started = Instant::now();
                let response = this.handle(request).await;
                this.metrics
                    .duration
                    .observe(started.elapsed().as_secs_f64());
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        if let Err(err) = builder.serve_connection_with_upgrades(io, service).await {
            tracing::debug!(%err, "ingress: viewer connection ended");
        }
    }

    /// One viewer request, answered.
    pub async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        let now = unix_now();
        let (parts, body) = request.into_parts();
        let admission = admit(
            &self.settings,
            &self.verifier,
            &self.sessions,
            &*self.lookup,
            &parts,
            now,
        );
        match admission {
            Admission::Refuse(refusal) => self.refuse(refusal),
            Admission::Redirect {
                location,
                cookie,
                opened,
            } => {
                if let Some((target, viewer)) = &opened {
                    self.count(&target.name, "allow", "session_opened");
                    self.audit.record(&Event {
                        event: "ingress",
                        verdict: "allow",
                        reason: "session_opened",
                        rule: Some(&format!("scope:{}", target.scope)),
                        sandbox: Some(&target.sandbox),
                        host: Some(&target.name),
                        detail: Some(format!("viewer {}", viewer.sub)),
                        ..Event::default()
                    });
                }
                redirect(&location, cookie, &self.csp)
            }
            Admission::Forward {
                target,
                path,
                viewer,
            } => {
                let request = Request::from_parts(parts, body);
                let reason = if viewer.is_some() { "viewer" } else { "public" };
                match self
                    .forward(&target, request, &path, viewer.as_ref(), now)
                    .await
                {
                    Ok(response) => {
                        self.count(&target.name, "allow", reason);
                        response
                    }
                    Err(err) => self.refuse(Refusal {
                        status: StatusCode::BAD_GATEWAY,
                        reason: err.reason(),
                        message: err.to_string(),
                        viewer: viewer.map(|v| v.sub),
                        target: Some(target),
                    }),
                }
            }
        }
    }

    async fn forward(
        &self,
        target: &Target,
        request: Request<Incoming>,
        path: &str,
        viewer: Option<&super::token::Viewer>,
        now: u64,
    ) -> Result<Response<Body>, forward::ForwardError> {
        let signed = self
            .viewer_header
            .as_ref()
            .zip(viewer)
            .and_then(|(signer, viewer)| signer.sign(viewer, &target.name, now));
        let (out, viewer_upgrade) = forward::toward_app_request(request, target.port, path, signed);
        let key = (target.netns.clone(), target.port);
        let kept = self.conns.take(&key);
        let (sender, answer) = match kept {
            Some(mut sender) => match sender.try_send_request(out).await {
                Ok(answer) => (sender, answer),
                // The app closed the kept connection before the request
                // went out: it goes on a new one.
                Err(mut err) => match err.take_message() {
                    Some(out) => self.send_on_new(target, out).await?,
                    None => return Err(forward::ForwardError::Protocol(err.into_error())),
                },
            },
            None => self.send_on_new(target, out).await?,
        };
        let upgraded = answer.status() == hyper::StatusCode::SWITCHING_PROTOCOLS;
        if viewer_upgrade.is_none() && !upgraded {
            self.conns.give(key, sender);
        }
        forward::toward_viewer_answer(answer, viewer_upgrade, &self.csp)
    }

    /// Sends `out` on a new connection to the app.
    async fn send_on_new(
        &self,
        target: &Target,
        out: Request<Incoming>,
    ) -> Result<(SendRequest<Incoming>, Response<Incoming>), forward::ForwardError> {
        let timeout = Duration::from_millis(self.config.connect_timeout_ms);
        let stream = forward::dial(target.netns.as_deref(), target.port, timeout).await?;
        let mut sender = forward::handshake(stream).await?;
        let answer = sender
            .send_request(out)
            .await
            .map_err(forward::ForwardError::Protocol)?;
        Ok((sender, answer))
    }

    fn count(&self, app: &str, verdict: &str, reason: &str) {
        self.metrics
            .requests
            .with_label_values(&[app, verdict, reason])
            .inc();
    }

    /// Counts, audits and answers a refusal.
    fn refuse(&self, refusal: Refusal) -> Response<Body> {
        let app = refusal.target.as_ref().map_or("-", |t| t.name.as_str());
        let verdict = if refusal.status.is_server_error() {
            "error"
        } else {
            "deny"
        };
        self.count(app, verdict, refusal.reason);
        let rule = refusal
            .target
            .as_ref()
            .map(|t| format!("scope:{}", t.scope));
        self.audit.record(&Event {
            event: "ingress",
            verdict,
            reason: refusal.reason,
            rule: rule.as_deref(),
            sandbox: refusal.target.as_ref().map(|t| t.sandbox.as_str()),
            host: refusal.target.as_ref().map(|t| t.name.as_str()),
            detail: refusal.viewer.as_ref().map(|v| format!("viewer {v}")),
            ..Event::default()
        });
        page(&refusal, &self.csp)
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn tls_acceptor(files: &super::config::TlsFiles) -> Result<TlsAcceptor, StartError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert_file)
        .and_then(|i| i.collect())
        .map_err(|e| StartError::Tls(format!("{}: {e}", files.cert_file.display())))?;
    if certs.is_empty() {
        return Err(StartError::Tls(format!(
            "{}: no certificate in it",
            files.cert_file.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key_file)
        .map_err(|e| StartError::Tls(format!("{}: {e}", files.key_file.display())))?;
    let mut config = rustls::ServerConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| StartError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| StartError::Tls(format!("the certificate and key do not match: {e}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

fn redirect(location: &str, cookie: Option<HeaderValue>, csp: &HeaderValue) -> Response<Body> {
    let mut response = Response::new(full(Bytes::new()));
    *response.status_mut() = if cookie.is_some() {
        StatusCode::SEE_OTHER
    } else {
        StatusCode::PERMANENT_REDIRECT
    };
    let h = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(location) {
        h.insert(header::LOCATION, location);
    }
    if let Some(cookie) = cookie {
        h.insert(header::SET_COOKIE, cookie);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // The URL that carried the token is not passed on as a referrer.
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert(header::CONTENT_SECURITY_POLICY, csp.clone());
    response
}

/// The page a refusal answers, saying why.
fn page(refusal: &Refusal, csp: &HeaderValue) -> Response<Body> {
    let title = match refusal.status {
        StatusCode::UNAUTHORIZED => "Sign-in needed",
        StatusCode::FORBIDDEN => "Not shared with you",
        StatusCode::NOT_FOUND => "No such app",
        s if s.is_server_error() => "The app is not answering",
        _ => "Refused",
    };
    let html = format!(
        "<!doctype html>\n<meta charset=\"utf-8\">\n<title>{code} {title}</title>\n\
         <h1>{title}</h1>\n<p>{message}</p>\n<p><small>reason: <code>{reason}</code></small></p>\n",
        code = refusal.status.as_u16(),
        message = escape(&refusal.message),
        reason = refusal.reason,
    );
    let mut response = Response::new(full(html));
    *response.status_mut() = refusal.status;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::CONTENT_SECURITY_POLICY, csp.clone());
    h.insert("x-sluice-refusal", HeaderValue::from_static(refusal.reason));
    if refusal.status == StatusCode::UNAUTHORIZED {
        h.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"sluice-ingress\""),
        );
    }
    response
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
