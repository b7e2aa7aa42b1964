//! The admin API client the CLI (`sluice sandbox|session|status`) and tests
//! use: one HTTP/1.1 connection over the Unix socket per call.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use tokio::net::UnixStream;

use super::api::{
    ErrorBody, SandboxInfo, SandboxSpec, SessionInfo, SessionSpec, Status, validate_id,
};

/// How long one call may take, connect to last byte. The daemon answers from
/// memory (or after attaching a program), so this only trips on a wedged daemon.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest response body read; a listing of thousands of sandboxes fits.
const MAX_RESPONSE: usize = 16 * 1024 * 1024;

/// Longest slice of an unparseable error body quoted back to the user.
const MAX_QUOTED: usize = 512;

mod apps;

/// Why an admin call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "cannot connect to the admin socket {}: {source} (is `sluice run` running? is the path right? are you root?)",
        socket.display()
    )]
    Connect { socket: PathBuf, source: io::Error },
    /// The daemon answered with an error; `message` is its own words.
    #[error("{message}")]
    Api {
        status: u16,
        kind: String,
        message: String,
    },
    #[error("admin API protocol error: {0}")]
    Protocol(String),
    /// Refused before sending, e.g. an id that cannot be a path segment.
    #[error("invalid request: {0}")]
    Invalid(String),
}

/// A handle on the admin socket; cheap, holds no connection.
#[derive(Debug, Clone)]
pub struct Client {
    socket: PathBuf,
    timeout: Duration,
}

impl Client {
    pub fn new(socket: impl Into<PathBuf>) -> Client {
        Client {
            socket: socket.into(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Replaces [`DEFAULT_TIMEOUT`].
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    pub async fn status(&self) -> Result<Status, ClientError> {
        let (status, body) = self.call(Method::GET, "/v1/status".into(), None).await?;
        decode(status, &body)
    }

    pub async fn list(&self) -> Result<Vec<SandboxInfo>, ClientError> {
        let (status, body) = self.call(Method::GET, "/v1/sandboxes".into(), None).await?;
        decode(status, &body)
    }

    pub async fn env(
        &self,
        sandbox: &str,
    ) -> Result<std::collections::BTreeMap<String, String>, ClientError> {
        let path = format!("/v1/sandboxes/{sandbox}/env");
        let (status, body) = self.call(Method::GET, path, None).await?;
        decode(status, &body)
    }

    pub async fn add_sandbox(&self, spec: &SandboxSpec) -> Result<SandboxInfo, ClientError> {
        let body = encode(spec)?;
        let (status, body) = self
            .call(Method::POST, "/v1/sandboxes".into(), Some(body))
            .await?;
        decode(status, &body)
    }

    pub async fn remove_sandbox(&self, id: &str) -> Result<(), ClientError> {
        path_id("sandbox id", id)?;
        let (status, body) = self
            .call(Method::DELETE, format!("/v1/sandboxes/{id}"), None)
            .await?;
        expect_success(status, &body)
    }

    pub async fn add_session(
        &self,
        sandbox: &str,
        spec: &SessionSpec,
    ) -> Result<SessionInfo, ClientError> {
        path_id("sandbox id", sandbox)?;
        let body = encode(spec)?;
        let (status, body) = self
            .call(
                Method::POST,
                format!("/v1/sandboxes/{sandbox}/sessions"),
                Some(body),
            )
            .await?;
        decode(status, &body)
    }

    pub async fn remove_session(&self, sandbox: &str, session: &str) -> Result<(), ClientError> {
        path_id("sandbox id", sandbox)?;
        path_id("session id", session)?;
        let (status, body) = self
            .call(
                Method::DELETE,
                format!("/v1/sandboxes/{sandbox}/sessions/{session}"),
                None,
            )
            .await?;
        expect_success(status, &body)
    }

    /// The requests parked for an approval.
    pub async fn approvals(&self) -> Result<Vec<crate::approvals::ApprovalCard>, ClientError> {
        let (status, body) = self.call(Method::GET, "/v1/approvals".into(), None).await?;
        decode(status, &body)
    }

    /// Decides a parked request.
    pub async fn decide(
        &self,
        id: &str,
        spec: &crate::approvals::DecisionSpec,
    ) -> Result<crate::approvals::ApprovalCard, ClientError> {
        path_id("approval id", id)?;
        let body = encode(spec)?;
        let (status, body) = self
            .call(Method::POST, format!("/v1/approvals/{id}"), Some(body))
            .await?;
        decode(status, &body)
    }

    /// Every sandbox's overlay entries.
    pub async fn overlays(
        &self,
    ) -> Result<std::collections::BTreeMap<String, Vec<crate::policy::overlay::Entry>>, ClientError>
    {
        let (status, body) = self.call(Method::GET, "/v1/overlays".into(), None).await?;
        decode(status, &body)
    }

    /// Adds an entry to a sandbox's overlay or removes one; returns its
    /// entries after the change.
    pub async fn change_overlay(
        &self,
        sandbox: &str,
        change: &super::api::OverlayChange,
    ) -> Result<Vec<crate::policy::overlay::Entry>, ClientError> {
        path_id("sandbox id", sandbox)?;
        let body = encode(change)?;
        let path = format!("/v1/sandboxes/{sandbox}/overlay");
        let (status, body) = self.call(Method::POST, path, Some(body)).await?;
        decode(status, &body)
    }

    async fn call(
        &self,
        method: Method,
        path: String,
        body: Option<Vec<u8>>,
    ) -> Result<(StatusCode, Bytes), ClientError> {
        match tokio::time::timeout(self.timeout, self.exchange(method, path, body)).await {
            Ok(result) => result,
            Err(_) => Err(ClientError::Protocol(format!(
                "no answer from {} within {:?}",
                self.socket.display(),
                self.timeout
            ))),
        }
    }

    async fn exchange(
        &self,
        method: Method,
        path: String,
        body: Option<Vec<u8>>,
    ) -> Result<(StatusCode, Bytes), ClientError> {
        let uri: Uri = path
            .parse()
            .map_err(|err| ClientError::Invalid(format!("path {path:?}: {err}")))?;
        let has_body = body.is_some();
        let mut request = Request::new(Full::new(Bytes::from(body.unwrap_or_default())));
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        headers.insert(HOST, HeaderValue::from_static("sluice"));
        if has_body {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }

        let stream =
            UnixStream::connect(&self.socket)
                .await
                .map_err(|source| ClientError::Connect {
                    socket: self.socket.clone(),
                    source,
                })?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|err| protocol("handshake", err))?;
        // The connection future does the I/O; drive it alongside the request
        // instead of spawning it, so nothing outlives this call. It finishes
        // once the request future drops `sender`.
        let exchange = async move {
            let response = sender
                .send_request(request)
                .await
                .map_err(|err| protocol("sending the request", err))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_RESPONSE)
                .collect()
                .await
                .map_err(|err| ClientError::Protocol(format!("reading the response: {err}")))?
                .to_bytes();
            Ok((status, body))
        };
        let (connection, exchange) = tokio::join!(connection, exchange);
        // The request's own error says more than the connection's.
        let result = exchange?;
        connection.map_err(|err| protocol("connection", err))?;
        Ok(result)
    }
}

fn protocol(what: &str, err: hyper::Error) -> ClientError {
    ClientError::Protocol(format!("{what}: {err}"))
}

/// Ids go into the URL path unescaped, so refuse what the server would.
fn path_id(what: &str, id: &str) -> Result<(), ClientError> {
    validate_id(what, id).map_err(|err| ClientError::Invalid(err.to_string()))
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, ClientError> {
    serde_json::to_vec(value)
        .map_err(|err| ClientError::Invalid(format!("cannot encode the request: {err}")))
}

fn decode<T: DeserializeOwned>(status: StatusCode, body: &[u8]) -> Result<T, ClientError> {
    if !status.is_success() {
        return Err(api_error(status, body));
    }
    serde_json::from_slice(body).map_err(|err| {
        ClientError::Protocol(format!(
            "unexpected {status} response body ({err}): {}",
            quote(body)
        ))
    })
}

fn expect_success(status: StatusCode, body: &[u8]) -> Result<(), ClientError> {
    if status.is_success() {
        Ok(())
    } else {
        Err(api_error(status, body))
    }
}

/// Turns an error response into [`ClientError::Api`]; a body that is not the
/// usual JSON (a proxy, an older daemon) is quoted as the message.
fn api_error(status: StatusCode, body: &[u8]) -> ClientError {
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(ErrorBody { error, kind }) => ClientError::Api {
            status: status.as_u16(),
            kind,
            message: error,
        },
        Err(_) => ClientError::Api {
            status: status.as_u16(),
            kind: "unknown".to_owned(),
            message: format!("HTTP {status}: {}", quote(body)),
        },
    }
}

fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(MAX_QUOTED)]);
    text.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_error_from_json_and_from_garbage() {
        let err = api_error(
            StatusCode::CONFLICT,
            br#"{"error":"conflict: sandbox `a` exists","kind":"conflict"}"#,
        );
        match err {
            ClientError::Api {
                status,
                kind,
                message,
            } => {
                assert_eq!(status, 409);
                assert_eq!(kind, "conflict");
                assert_eq!(message, "conflict: sandbox `a` exists");
            }
            other => panic!("unexpected {other:?}"),
        }
        let err = api_error(StatusCode::BAD_GATEWAY, b"<html>oops</html>");
        assert!(
            matches!(&err, ClientError::Api { status: 502, kind, .. } if kind == "unknown"),
            "{err:?}"
        );
        assert!(err.to_string().contains("oops"), "{err}");
    }

    #[test]
    fn decode_rejects_unexpected_body() {
        let err = decode::<Status>(StatusCode::OK, b"[]").expect_err("not a Status");
        assert!(matches!(err, ClientError::Protocol(_)), "{err:?}");
    }
}
