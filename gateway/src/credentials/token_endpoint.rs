//! The daemon's own HTTPS client for OAuth token endpoints: the one place
//! the credential code does network I/O.
//!
//! The daemon calls the endpoint itself (it is not a sandbox's request and
//! is not steered): the name is resolved with the daemon's resolver (static
//! `resolver.hosts` first), the connection is verified with the daemon's
//! upstream trust (`tls.upstream_ca_files` / system roots), one HTTP/1.1
//! `POST` per connection, bounded in time and in response size.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::{
    Method, Request,
    body::Bytes,
    client::conn::http1,
    header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue, USER_AGENT},
};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use zeroize::Zeroizing;

use super::oauth::{MAX_RESPONSE, OAuth2Scheme, Token, TokenError, TokenUrl, parse_response};
use super::secret::Secret;
use crate::resolve::Resolver;

/// How long one whole exchange (resolve, connect, TLS, answer) may take.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// Talks to token endpoints.
#[derive(Clone)]
pub struct TokenEndpoint {
    resolver: Arc<Resolver>,
    /// ALPN `http/1.1`, the daemon's upstream roots.
    tls: Arc<rustls::ClientConfig>,
    timeout: Duration,
}

impl TokenEndpoint {
    pub fn new(resolver: Arc<Resolver>, tls: Arc<rustls::ClientConfig>) -> TokenEndpoint {
        TokenEndpoint {
            resolver,
            tls,
            timeout: EXCHANGE_TIMEOUT,
        }
    }

    /// Asks `scheme`'s endpoint for a token with the credential's secrets.
    pub async fn fetch(
        &self,
        scheme: &OAuth2Scheme,
        source: &Secret,
        client_secret: Option<&Secret>,
    ) -> Result<Token, TokenError> {
        let (body, authorization) = scheme.token_request(source, client_secret);
        let url = &scheme.token_url;
        let exchange = self.exchange(url, body, authorization);
        let (status, bytes) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| {
                TokenError::Unreachable(format!("no answer within {:?}", self.timeout))
            })??;
        parse_response(status, &Zeroizing::new(bytes.to_vec()))
    }

    async fn exchange(
        &self,
        url: &TokenUrl,
        body: Zeroizing<Vec<u8>>,
        authorization: Option<HeaderValue>,
    ) -> Result<(u16, Bytes), TokenError> {
        // The URL is the caller's to show (without its query).
        let unreachable = TokenError::Unreachable;
        let addrs = self
            .resolver
            .lookup_ip(&url.host)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let mut last = String::from("no address");
        let mut tcp = None;
        for ip in addrs {
            match TcpStream::connect(SocketAddr::new(ip, url.port)).await {
                Ok(stream) => {
                    tcp = Some(stream);
                    break;
                }
                Err(e) => last = format!("cannot connect to {ip}: {e}"),
            }
        }
        let tcp = tcp.ok_or_else(|| unreachable(last))?;
        let name = ServerName::try_from(url.host.clone())
            .map_err(|_| unreachable("not a valid TLS server name".to_owned()))?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| unreachable(crate::tls::upstream::describe(&e, &url.host).1))?;
        let (mut sender, connection) = http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| unreachable(format!("HTTP handshake failed: {e}")))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let host = if url.port == 443 {
            url.host.clone()
        } else {
            format!("{}:{}", url.host, url.port)
        };
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(url.path.as_str())
            .header(HOST, host)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, "sluice")
            // The http types own this copy; it cannot be zeroized.
            .body(Full::new(Bytes::from(body.to_vec())))
            .map_err(|_| unreachable("cannot build the request".to_owned()))?;
        if let Some(value) = authorization {
            request.headers_mut().insert(AUTHORIZATION, value);
        }
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| unreachable(format!("the exchange failed: {e}")))?;
        let status = response.status().as_u16();
        let bytes = Limited::new(response.into_body(), MAX_RESPONSE)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    TokenError::TooLarge
                } else {
                    unreachable("the answer was cut short".to_owned())
                }
            })?
            .to_bytes();
        Ok((status, bytes))
    }
}
