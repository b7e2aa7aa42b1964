//! The admin server: owns the Unix socket (binding, permissions), the accept
//! loop, the per-connection peer check, routing and the HTTP/JSON mapping onto
//! a [`Backend`].

use std::convert::Infallible;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::net::{UnixListener, UnixStream};

use super::api::{AdminError, Backend, ErrorBody, KIND_FORBIDDEN, SandboxSpec, SessionSpec};
pub use super::peer::PeerGuard;

/// Largest request body accepted; specs are a few hundred bytes.
pub const MAX_BODY: usize = 64 * 1024;

/// How long a client may take to send its request head. Bounds how long an
/// idle or refused peer can hold a connection.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client may take to send its request body, for the same
/// reason: a head followed by a body that never comes held the
/// connection (and its task) for as long as the client liked.
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections served at once; past it, accepting waits. The socket is
/// root's alone, but a stuck client loop should not take every file
/// descriptor the data path shares.
const MAX_CONNECTIONS: usize = 256;

/// Pause after running out of file descriptors, so the accept loop does not
/// spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Why a request got an error response (other than a peer refusal).
#[derive(Debug, thiserror::Error)]
enum RequestError {
    #[error(transparent)]
    Admin(#[from] AdminError),
    #[error("request body is larger than {MAX_BODY} bytes")]
    TooLarge,
    #[error("request body not received within {BODY_READ_TIMEOUT:?}")]
    SlowBody,
    #[error("no such endpoint: {0}")]
    NoRoute(String),
    #[error("method {method} is not allowed on {path} (allowed: {allow})")]
    Method {
        method: Method,
        path: String,
        allow: &'static str,
    },
}

impl RequestError {
    fn status(&self) -> StatusCode {
        match self {
            RequestError::Admin(err) => {
                StatusCode::from_u16(err.status_code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
            RequestError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            RequestError::SlowBody => StatusCode::REQUEST_TIMEOUT,
            RequestError::NoRoute(_) => StatusCode::NOT_FOUND,
            RequestError::Method { .. } => StatusCode::METHOD_NOT_ALLOWED,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            RequestError::Admin(err) => err.kind(),
            RequestError::TooLarge | RequestError::SlowBody | RequestError::Method { .. } => {
                "invalid"
            }
            RequestError::NoRoute(_) => "not_found",
        }
    }
}

/// What a request asks for, decided from method and path alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    Status,
    ListSandboxes,
    AddSandbox,
    RemoveSandbox(&'a str),
    AddSession(&'a str),
    RemoveSession(&'a str, &'a str),
    /// The placeholder environment of a sandbox.
    Env(&'a str),
    ListApprovals,
    DecideApproval(&'a str),
    ListOverlays,
    ChangeOverlay(&'a str),
    ListApps,
    Publish,
    Unpublish(&'a str),
    SetScope(&'a str),
    NotFound,
    /// The path exists but not for this method; carries the `Allow` header.
    MethodNotAllowed(&'static str),
}

/// Maps a request to a [`Route`]. Ids are returned raw; the handlers validate
/// them, so a bad id is a 400 rather than a confusing 404.
pub(crate) fn route<'a>(method: &Method, path: &'a str) -> Route<'a> {
    let Some(rest) = path.strip_prefix('/') else {
        return Route::NotFound;
    };
    // Seven pieces at most: anything longer is no route, whatever it holds.
    let segments: Vec<&str> = rest.splitn(7, '/').collect();
    if segments.iter().any(|segment| segment.is_empty()) {
        return Route::NotFound;
    }
    let only = |allowed: &Method, allow: &'static str, route: Route<'a>| {
        if method == allowed {
            route
        } else {
            Route::MethodNotAllowed(allow)
        }
    };
    match segments.as_slice() {
        ["v1", "status"] => only(&Method::GET, "GET", Route::Status),
        ["v1", "sandboxes"] => match *method {
            Method::GET => Route::ListSandboxes,
            Method::POST => Route::AddSandbox,
            _ => Route::MethodNotAllowed("GET, POST"),
        },
        ["v1", "sandboxes", id] => only(&Method::DELETE, "DELETE", Route::RemoveSandbox(id)),
        ["v1", "sandboxes", id, "sessions"] => only(&Method::POST, "POST", Route::AddSession(id)),
        ["v1", "sandboxes", id, "env"] => only(&Method::GET, "GET", Route::Env(id)),
        ["v1", "approvals"] => only(&Method::GET, "GET", Route::ListApprovals),
        ["v1", "overlays"] => only(&Method::GET, "GET", Route::ListOverlays),
        ["v1", "sandboxes", id, "overlay"] => only(&Method::POST, "POST", Route::ChangeOverlay(id)),
        ["v1", "approvals", id] => only(&Method::POST, "POST", Route::DecideApproval(id)),
        ["v1", "sandboxes", id, "sessions", session] => {
            only(&Method::DELETE, "DELETE", Route::RemoveSession(id, session))
        }
        ["v1", "apps"] => match *method {
            Method::GET => Route::ListApps,
            Method::POST => Route::Publish,
            _ => Route::MethodNotAllowed("GET, POST"),
        },
        ["v1", "apps", name] => only(&Method::DELETE, "DELETE", Route::Unpublish(name)),
        ["v1", "apps", name, "scope"] => only(&Method::PUT, "PUT", Route::SetScope(name)),
        _ => Route::NotFound,
    }
}

/// Creates the parent directory (0755) if missing, removes a stale socket file
/// (only if it is a socket nobody listens on), binds, chmods the socket to 0600.
/// Must be called within a Tokio runtime.
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    let context = |err: io::Error, what: &str| {
        io::Error::new(
            err.kind(),
            format!("admin socket {}: {what}: {err}", path.display()),
        )
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.exists()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(|err| context(err, "creating the parent directory"))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if socket_is_live(path) {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "admin socket {} is in use (is another `sluice run` running?)",
                        path.display()
                    ),
                ));
            }
            std::fs::remove_file(path).map_err(|err| context(err, "removing the stale socket"))?;
        }
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "admin socket {} exists and is not a socket; refusing to remove it",
                    path.display()
                ),
            ));
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(context(err, "inspecting the existing path")),
    }
    let listener = UnixListener::bind(path).map_err(|err| context(err, "binding"))?;
    // Between bind and chmod the socket carries the umask's mode; the peer
    // guard's uid check covers that window.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|err| context(err, "setting mode 0600"))?;
    Ok(listener)
}

/// Whether something accepts connections on `path`. Non-blocking, so a live
/// daemon with a full backlog (EAGAIN) counts as live instead of hanging us.
fn socket_is_live(path: &Path) -> bool {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr, connect, socket};
    let Ok(fd) = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    ) else {
        return false;
    };
    let Ok(addr) = UnixAddr::new(path) else {
        return false;
    };
    match connect(fd.as_raw_fd(), &addr) {
        Ok(()) => true,
        Err(errno) => errno == nix::errno::Errno::EAGAIN,
    }
}

/// Accepts connections forever, each served on its own task. Returns only on
/// an accept error that is not about this one connection or a resource
/// shortage; stop it by dropping (aborting) the future.
pub async fn serve<B: Backend>(
    listener: UnixListener,
    backend: Arc<B>,
    guard: PeerGuard,
) -> io::Result<()> {
    let guard = Arc::new(guard);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return Ok(());
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(err) => match err.raw_os_error() {
                Some(libc::ECONNABORTED | libc::EINTR) => continue,
                Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => {
                    tracing::warn!(error = %err, "admin API: accept failed; retrying");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
                _ => return Err(err),
            },
        };
        let (backend, guard) = (backend.clone(), guard.clone());
        tokio::spawn(async move {
            serve_connection(stream, backend, guard).await;
            drop(slot);
        });
    }
}

async fn serve_connection<B: Backend>(stream: UnixStream, backend: Arc<B>, guard: Arc<PeerGuard>) {
    let verdict = guard.check(&stream);
    let io = TokioIo::new(stream);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let result = match verdict {
        Ok(()) => {
            let service = service_fn(move |req| {
                let backend = backend.clone();
                async move { Ok::<_, Infallible>(handle(req, &*backend).await) }
            });
            builder.serve_connection(io, service).await
        }
        Err(refusal) => {
            tracing::warn!(reason = %refusal, "admin API: refused peer");
            // Answer in HTTP rather than just closing so the caller sees why.
            let service = service_fn(|_req| async { Ok::<_, Infallible>(forbidden()) });
            builder
                .keep_alive(false)
                .serve_connection(io, service)
                .await
        }
    };
    if let Err(err) = result {
        tracing::debug!(error = %err, "admin API: connection ended with an error");
    }
}

async fn handle<B: Backend>(req: Request<Incoming>, backend: &B) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let response = match dispatch(&parts.method, path, body, backend).await {
        Ok(response) => response,
        Err(err) => {
            if matches!(err, RequestError::Admin(AdminError::Internal(_))) {
                tracing::warn!(method = %parts.method, path, error = %err, "admin API: request failed");
            }
            let body = ErrorBody {
                error: err.to_string(),
                kind: err.kind().to_owned(),
            };
            let mut response = json(err.status(), &body);
            if let RequestError::Method { allow, .. } = err {
                response
                    .headers_mut()
                    .insert(ALLOW, HeaderValue::from_static(allow));
            }
            response
        }
    };
    tracing::debug!(method = %parts.method, path, status = response.status().as_u16(), "admin API request");
    response
}

async fn dispatch<B: Backend>(
    method: &Method,
    path: &str,
    body: Incoming,
    backend: &B,
) -> Result<Response<Full<Bytes>>, RequestError> {
    match route(method, path) {
        Route::Status => Ok(json(StatusCode::OK, &backend.status())),
        Route::ListSandboxes => Ok(json(StatusCode::OK, &backend.list())),
        Route::Env(id) => {
            super::api::validate_id("sandbox id", id)?;
            Ok(json(StatusCode::OK, &backend.env(id)?))
        }
        Route::AddSandbox => {
            let spec: SandboxSpec = read_json(body).await?;
            spec.validate()?;
            let info = backend.add_sandbox(spec).await?;
            Ok(json(StatusCode::CREATED, &info))
        }
        Route::RemoveSandbox(id) => {
            super::api::validate_id("sandbox id", id)?;
            backend.remove_sandbox(id).await?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        Route::AddSession(sandbox) => {
            super::api::validate_id("sandbox id", sandbox)?;
            let spec: SessionSpec = read_json(body).await?;
            spec.validate()?;
            let info = backend.add_session(sandbox, spec).await?;
            Ok(json(StatusCode::CREATED, &info))
        }
        Route::RemoveSession(sandbox, session) => {
            super::api::validate_id("sandbox id", sandbox)?;
            super::api::validate_id("session id", session)?;
            backend.remove_session(sandbox, session).await?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        Route::ListApprovals => Ok(json(StatusCode::OK, &backend.approvals())),
        Route::DecideApproval(id) => {
            super::api::validate_id("approval id", id)?;
            let spec: crate::approvals::DecisionSpec = read_json(body).await?;
            Ok(json(StatusCode::OK, &backend.decide(id, spec)?))
        }
        Route::ListOverlays => Ok(json(StatusCode::OK, &backend.overlays())),
        Route::ChangeOverlay(sandbox) => {
            super::api::validate_id("sandbox id", sandbox)?;
            let change: super::api::OverlayChange = read_json(body).await?;
            Ok(json(
                StatusCode::OK,
                &backend.change_overlay(sandbox, change)?,
            ))
        }
        Route::ListApps => Ok(json(StatusCode::OK, &backend.apps())),
        Route::Publish => {
            let req: crate::ingress::publish::PublishRequest = read_json(body).await?;
            super::api::validate_id("sandbox id", &req.sandbox)?;
            Ok(json(StatusCode::CREATED, &backend.publish(req)?))
        }
        Route::Unpublish(name) => {
            backend.unpublish(name)?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        Route::SetScope(name) => {
            let req: crate::ingress::publish::ScopeRequest = read_json(body).await?;
            Ok(json(StatusCode::OK, &backend.set_scope(name, req.scope)?))
        }
        Route::NotFound => Err(RequestError::NoRoute(format!("{method} {path}"))),
        Route::MethodNotAllowed(allow) => Err(RequestError::Method {
            method: method.clone(),
            path: path.to_owned(),
            allow,
        }),
    }
}

/// Reads at most [`MAX_BODY`] bytes and decodes them; serde's message (which
/// names the offending field) becomes the 400's message.
async fn read_json<T: DeserializeOwned>(body: Incoming) -> Result<T, RequestError> {
    let read = tokio::time::timeout(BODY_READ_TIMEOUT, Limited::new(body, MAX_BODY).collect());
    let bytes = match read.await.map_err(|_| RequestError::SlowBody)? {
        Ok(collected) => collected.to_bytes(),
        Err(err) if err.downcast_ref::<LengthLimitError>().is_some() => {
            return Err(RequestError::TooLarge);
        }
        Err(err) => {
            return Err(AdminError::Invalid(format!("cannot read the request body: {err}")).into());
        }
    };
    serde_json::from_slice(&bytes)
        .map_err(|err| AdminError::Invalid(format!("request body: {err}")).into())
}

fn json<T: Serialize>(status: StatusCode, value: &T) -> Response<Full<Bytes>> {
    let (status, bytes) = match serde_json::to_vec(value) {
        Ok(bytes) => (status, bytes),
        // Only a non-UTF-8 path can get here; say so rather than send half a body.
        Err(err) => {
            let err = AdminError::Internal(format!("cannot encode the response: {err}"));
            tracing::warn!(error = %err, "admin API: response encoding failed");
            let body = serde_json::to_vec(&err.body()).unwrap_or_default();
            (StatusCode::INTERNAL_SERVER_ERROR, body)
        }
    };
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn empty(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn forbidden() -> Response<Full<Bytes>> {
    let body = ErrorBody {
        error:
            "forbidden: the admin API refuses this peer (it must be root, outside every sandbox)"
                .to_owned(),
        kind: KIND_FORBIDDEN.to_owned(),
    };
    json(StatusCode::FORBIDDEN, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_table() {
        use Route::*;
        let get = Method::GET;
        let post = Method::POST;
        let delete = Method::DELETE;
        let put = Method::PUT;
        let cases: &[(&Method, &str, Route<'_>)] = &[
            (&get, "/v1/status", Status),
            (&post, "/v1/status", MethodNotAllowed("GET")),
            (&get, "/v1/sandboxes", ListSandboxes),
            (&post, "/v1/sandboxes", AddSandbox),
            (&delete, "/v1/sandboxes", MethodNotAllowed("GET, POST")),
            (&delete, "/v1/sandboxes/sb1", RemoveSandbox("sb1")),
            (&get, "/v1/sandboxes/sb1", MethodNotAllowed("DELETE")),
            (&post, "/v1/sandboxes/sb1/sessions", AddSession("sb1")),
            (&get, "/v1/sandboxes/sb1/sessions", MethodNotAllowed("POST")),
            (
                &delete,
                "/v1/sandboxes/sb1/sessions/s1",
                RemoveSession("sb1", "s1"),
            ),
            (
                &put,
                "/v1/sandboxes/sb1/sessions/s1",
                MethodNotAllowed("DELETE"),
            ),
            // Bad ids route; the handler turns them into a 400.
            (&delete, "/v1/sandboxes/a%2Fb", RemoveSandbox("a%2Fb")),
            (&delete, "/v1/sandboxes/..", RemoveSandbox("..")),
            (&get, "/v1/approvals", ListApprovals),
            (&post, "/v1/approvals", MethodNotAllowed("GET")),
            (&post, "/v1/approvals/ab12", DecideApproval("ab12")),
            (&get, "/v1/approvals/ab12", MethodNotAllowed("POST")),
            (&get, "/", NotFound),
            (&get, "", NotFound),
            (&get, "v1/status", NotFound),
            (&get, "/v1", NotFound),
            (&get, "/v1/status/", NotFound),
            (&get, "/v1//status", NotFound),
            (&get, "/v1/sandboxes/", NotFound),
            (&delete, "/v1/sandboxes//sessions/s1", NotFound),
            (&get, "/v2/status", NotFound),
            (&get, "/v1/statuses", NotFound),
            (&post, "/v1/sandboxes/sb1/session", NotFound),
            (&delete, "/v1/sandboxes/sb1/sessions/s1/x", NotFound),
            (&delete, "/v1/sandboxes/sb1/sessions/s1/x/y/z/w", NotFound),
        ];
        for (method, path, want) in cases {
            assert_eq!(route(method, path), *want, "{method} {path:?}");
        }
    }

    #[test]
    fn request_error_status_and_kind() {
        let cases = [
            (RequestError::TooLarge, 413, "invalid"),
            (RequestError::NoRoute("x".into()), 404, "not_found"),
            (
                RequestError::Method {
                    method: Method::PUT,
                    path: "/v1/status".into(),
                    allow: "GET",
                },
                405,
                "invalid",
            ),
            (AdminError::Conflict("x".into()).into(), 409, "conflict"),
        ];
        for (err, status, kind) in cases {
            assert_eq!(err.status().as_u16(), status, "{err}");
            assert_eq!(err.kind(), kind, "{err}");
        }
    }
}
