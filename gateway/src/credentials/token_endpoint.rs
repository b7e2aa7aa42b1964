//! Asking OAuth token endpoints for tokens: the one place the credential
//! code does network I/O.
//!
//! The daemon calls the endpoint itself (it is not a sandbox's request and
//! is not steered), through its outbound client ([`crate::outbound`]: the
//! daemon's resolver, static `resolver.hosts` first, and its upstream
//! trust, `tls.upstream_ca_files` / system roots): one HTTP/1.1 `POST` per
//! connection, bounded in time and in response size.

use std::time::Duration;

use http_body_util::Full;
use hyper::{
    Method, Request, Uri,
    body::Bytes,
    header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, USER_AGENT},
};
use zeroize::Zeroizing;

use super::oauth::{MAX_RESPONSE, OAuth2Scheme, Token, TokenError, TokenUrl, parse_response};
use super::secret::Secret;
use crate::outbound::{self, BodyError, Limits};

/// How long one whole exchange (resolve, connect, TLS, answer) may take.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// Talks to token endpoints.
#[derive(Clone)]
pub struct TokenEndpoint {
    client: outbound::Client,
    timeout: Duration,
}

impl TokenEndpoint {
    pub fn new(client: outbound::Client) -> TokenEndpoint {
        TokenEndpoint {
            client,
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
        // The URL is the caller's to show (without its query).
        let unreachable = TokenError::Unreachable;
        let (body, authorization) = scheme.token_request(source, client_secret);
        let request = request(&scheme.token_url, &body, authorization)
            .ok_or_else(|| unreachable("cannot build the request".to_owned()))?;
        let limits = Limits {
            deadline: self.timeout,
            max_answer: MAX_RESPONSE,
        };
        let answer = self
            .client
            .send(request, limits)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let bytes = answer.body.map_err(|e| match e {
            BodyError::TooLarge(_) => TokenError::TooLarge,
            BodyError::CutShort => unreachable(e.to_string()),
        })?;
        parse_response(answer.status.as_u16(), &Zeroizing::new(bytes.to_vec()))
    }
}

/// The token request toward `url`; `Host` names the port unless it is 443.
fn request(
    url: &TokenUrl,
    body: &[u8],
    authorization: Option<HeaderValue>,
) -> Option<Request<Full<Bytes>>> {
    let host = if url.host.contains(':') {
        format!("[{}]", url.host)
    } else {
        url.host.clone()
    };
    let authority = if url.port == 443 {
        host
    } else {
        format!("{host}:{}", url.port)
    };
    let uri: Uri = format!("https://{authority}{}", url.path).parse().ok()?;
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(ACCEPT, "application/json")
        .header(USER_AGENT, "sluice")
        // The http types own this copy; it cannot be zeroized.
        .body(Full::new(Bytes::copy_from_slice(body)))
        .ok()?;
    if let Some(value) = authorization {
        request.headers_mut().insert(AUTHORIZATION, value);
    }
    Some(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_names_the_port_unless_it_is_443() {
        // (host, port, path, URI sent to the client)
        let cases = [
            ("auth.test", 443, "/token", "https://auth.test/token"),
            ("auth.test", 8443, "/t?a=b", "https://auth.test:8443/t?a=b"),
            ("::1", 443, "/token", "https://[::1]/token"),
            ("::1", 8443, "/token", "https://[::1]:8443/token"),
        ];
        for (host, port, path, want) in cases {
            let url = TokenUrl {
                host: host.to_owned(),
                port,
                path: path.to_owned(),
            };
            let request = request(&url, b"grant_type=x", None).expect("request");
            assert_eq!(request.uri().to_string(), want);
            assert_eq!(request.method(), Method::POST);
        }
    }
}
