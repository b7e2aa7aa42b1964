//! In-process tests of the admin API: an in-memory [`Backend`], the real
//! server on a socket in a temporary directory, and the real client.

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use super::api::{AdminError, Backend, SandboxInfo, SandboxSpec, SessionInfo, SessionSpec, Status};
use super::client::{Client, ClientError};
use super::peer::{PeerGuard, parse_cgroup2};
use super::server::{MAX_BODY, bind, serve};

/// Registrations in a map; cgroup ids are handed out in order.
#[derive(Default)]
struct FakeBackend {
    state: Mutex<FakeState>,
}

#[derive(Default)]
struct FakeState {
    sandboxes: BTreeMap<String, SandboxInfo>,
    next_cgroup_id: u64,
}

impl FakeState {
    fn cgroup_id(&mut self) -> u64 {
        self.next_cgroup_id += 1;
        self.next_cgroup_id
    }
}

impl FakeBackend {
    fn state(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Backend for FakeBackend {
    fn status(&self) -> Status {
        Status {
            ready: true,
            version: "test".into(),
            cgroup_root: PathBuf::from("/sluice"),
            metrics_addr: None,
            tcp_port: 15001,
            sandboxes: self.state().sandboxes.len(),
            programs: vec!["connect4".into()],
            ..Status::default()
        }
    }

    fn list(&self) -> Vec<SandboxInfo> {
        self.state().sandboxes.values().cloned().collect()
    }

    fn env(&self, sandbox: &str) -> Result<std::collections::BTreeMap<String, String>, AdminError> {
        if self.state().sandboxes.contains_key(sandbox) {
            Ok(std::collections::BTreeMap::from([(
                "TOKEN".to_owned(),
                format!("ph-{sandbox}"),
            )]))
        } else {
            Err(AdminError::NotFound(format!("no sandbox `{sandbox}`")))
        }
    }

    async fn add_sandbox(&self, spec: SandboxSpec) -> Result<SandboxInfo, AdminError> {
        let mut state = self.state();
        if state.sandboxes.contains_key(&spec.id) {
            return Err(AdminError::Conflict(format!(
                "sandbox `{}` is already registered",
                spec.id
            )));
        }
        let info = SandboxInfo {
            id: spec.id.clone(),
            cgroup: spec.cgroup,
            cgroup_id: state.cgroup_id(),
            netns: spec.netns,
            policy: spec.policy.unwrap_or_else(|| "default".into()),
            source: "api".into(),
            sessions: Vec::new(),
            owner: spec.owner,
        };
        state.sandboxes.insert(spec.id, info.clone());
        Ok(info)
    }

    async fn remove_sandbox(&self, id: &str) -> Result<(), AdminError> {
        match self.state().sandboxes.remove(id) {
            Some(_) => Ok(()),
            None => Err(AdminError::NotFound(format!("sandbox `{id}`"))),
        }
    }

    async fn add_session(
        &self,
        sandbox: &str,
        spec: SessionSpec,
    ) -> Result<SessionInfo, AdminError> {
        let mut state = self.state();
        let cgroup_id = state.cgroup_id();
        let Some(info) = state.sandboxes.get_mut(sandbox) else {
            return Err(AdminError::NotFound(format!("sandbox `{sandbox}`")));
        };
        if info.sessions.iter().any(|s| s.id == spec.id) {
            return Err(AdminError::Conflict(format!("session `{}`", spec.id)));
        }
        let session = SessionInfo {
            id: spec.id,
            cgroup: spec.cgroup,
            cgroup_id,
            task: spec.task,
        };
        info.sessions.push(session.clone());
        Ok(session)
    }

    async fn remove_session(&self, sandbox: &str, session: &str) -> Result<(), AdminError> {
        let mut state = self.state();
        let Some(info) = state.sandboxes.get_mut(sandbox) else {
            return Err(AdminError::NotFound(format!("sandbox `{sandbox}`")));
        };
        let before = info.sessions.len();
        info.sessions.retain(|s| s.id != session);
        if info.sessions.len() == before {
            return Err(AdminError::NotFound(format!("session `{session}`")));
        }
        Ok(())
    }
}

/// A running server; dropping it stops the accept loop and the temp dir.
struct Harness {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Harness {
    fn client(&self) -> Client {
        Client::new(&self.socket)
    }
}

fn my_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// A guard that admits this test process: its uid, and a sandbox root no
/// test process lives under.
fn open_guard() -> PeerGuard {
    PeerGuard::new(PathBuf::from("/sluice-admin-test-no-such-root")).with_required_uid(my_uid())
}

fn start(guard: PeerGuard) -> Harness {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("run/admin.sock");
    let listener = bind(&socket).expect("bind");
    let task = tokio::spawn(serve(listener, Arc::new(FakeBackend::default()), guard));
    Harness {
        _dir: dir,
        socket,
        task,
    }
}

/// Sends raw HTTP (for requests the client cannot make) and returns the
/// status code and body.
async fn raw(socket: &Path, request: &[u8]) -> (u16, String) {
    let mut stream = UnixStream::connect(socket).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.expect("read");
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn sandbox(id: &str) -> SandboxSpec {
    SandboxSpec {
        ca_bundle: None,
        id: id.into(),
        cgroup: PathBuf::from(format!("/sluice/{id}")),
        netns: None,
        policy: None,
        owner: None,
    }
}

fn session(id: &str) -> SessionSpec {
    SessionSpec {
        id: id.into(),
        cgroup: PathBuf::from(format!("/sluice/sb1/{id}")),
        task: None,
    }
}

#[track_caller]
fn assert_api(err: ClientError, want_status: u16, want_kind: &str) -> String {
    match err {
        ClientError::Api {
            status,
            kind,
            message,
        } => {
            assert_eq!(
                (status, kind.as_str()),
                (want_status, want_kind),
                "{message}"
            );
            message
        }
        other => panic!("expected an API error {want_status}, got {other:?}"),
    }
}

#[tokio::test]
async fn round_trip_add_list_sessions_remove() {
    let harness = start(open_guard());
    let client = harness.client();

    let status = client.status().await.expect("status");
    assert!(status.ready);
    assert_eq!(status.sandboxes, 0);

    let mut spec = sandbox("sb1");
    spec.netns = Some(PathBuf::from("/run/netns/sb1"));
    spec.policy = Some("strict".into());
    let info = client.add_sandbox(&spec).await.expect("add sandbox");
    assert_eq!(info.id, "sb1");
    assert_eq!(info.netns, spec.netns);
    assert_eq!(info.policy, "strict");
    assert_eq!(info.source, "api");
    client.add_sandbox(&sandbox("sb2")).await.expect("add sb2");

    let session_info = client
        .add_session("sb1", &session("s1"))
        .await
        .expect("add session");
    assert_eq!(session_info.id, "s1");
    assert_eq!(session_info.cgroup, Path::new("/sluice/sb1/s1"));

    let list = client.list().await.expect("list");
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["sb1", "sb2"]);
    assert_eq!(list[0].sessions, vec![session_info]);
    assert_eq!(client.status().await.expect("status").sandboxes, 2);

    client
        .remove_session("sb1", "s1")
        .await
        .expect("remove session");
    client.remove_sandbox("sb1").await.expect("remove sb1");
    let list = client.list().await.expect("list");
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["sb2"]);
}

#[tokio::test]
async fn conflict_and_not_found_map_to_api_errors() {
    let harness = start(open_guard());
    let client = harness.client();
    client.add_sandbox(&sandbox("sb1")).await.expect("add");

    let err = client.add_sandbox(&sandbox("sb1")).await.expect_err("dup");
    let message = assert_api(err, 409, "conflict");
    assert!(message.contains("sb1"), "{message}");

    let err = client.remove_sandbox("nope").await.expect_err("missing");
    assert_api(err, 404, "not_found");
    let err = client
        .add_session("nope", &session("s1"))
        .await
        .expect_err("missing sandbox");
    assert_api(err, 404, "not_found");
    client
        .add_session("sb1", &session("s1"))
        .await
        .expect("session");
    let err = client
        .add_session("sb1", &session("s1"))
        .await
        .expect_err("dup session");
    assert_api(err, 409, "conflict");
    let err = client
        .remove_session("sb1", "s2")
        .await
        .expect_err("missing session");
    assert_api(err, 404, "not_found");
}

#[tokio::test]
async fn invalid_ids_are_400_on_the_server_and_refused_by_the_client() {
    let harness = start(open_guard());
    let client = harness.client();

    // In a body: the server validates.
    let err = client
        .add_sandbox(&sandbox("has space"))
        .await
        .expect_err("bad id");
    let message = assert_api(err, 400, "invalid");
    assert!(message.contains("sandbox id"), "{message}");

    // In a path: the client refuses before sending...
    let err = client.remove_sandbox("a/b").await.expect_err("bad id");
    assert!(matches!(err, ClientError::Invalid(_)), "{err:?}");
    let err = client
        .remove_session("sb1", "..")
        .await
        .expect_err("bad id");
    assert!(matches!(err, ClientError::Invalid(_)), "{err:?}");

    // ...and the server refuses what another client might send.
    for path in ["/v1/sandboxes/a%2Fb", "/v1/sandboxes/.."] {
        let request =
            format!("DELETE {path} HTTP/1.1\r\nHost: sluice\r\nConnection: close\r\n\r\n");
        let (status, body) = raw(&harness.socket, request.as_bytes()).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body.contains(r#""kind":"invalid""#), "{body}");
    }
}

#[tokio::test]
async fn malformed_json_is_400_with_serde_message() {
    let harness = start(open_guard());
    let cases = [
        (r#"{"id":"sb1"}"#, "cgroup"),
        (r#"{"id":"sb1","cgroup":"/x","polcy":"p"}"#, "polcy"),
        (r#"{"id":"sb1","cgroup":7}"#, "invalid type"),
        (r#"{"id":"sb1","#, "EOF"),
    ];
    for (body, needle) in cases {
        let request = format!(
            "POST /v1/sandboxes HTTP/1.1\r\nHost: sluice\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let (status, response) = raw(&harness.socket, request.as_bytes()).await;
        assert_eq!(status, 400, "{body}: {response}");
        let error: super::api::ErrorBody = serde_json::from_str(&response).expect("error body");
        assert_eq!(error.kind, "invalid");
        assert!(error.error.contains(needle), "{needle:?} not in {error:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_body_that_never_comes_is_408() {
    let harness = start(open_guard());
    // A head promising a body, then nothing: paused time runs ahead to
    // the read timeout once every task waits.
    let (status, body) = raw(
        &harness.socket,
        b"POST /v1/sandboxes HTTP/1.1\r\nHost: sluice\r\nContent-Length: 10\r\nConnection: close\r\n\r\n{",
    )
    .await;
    assert_eq!(status, 408, "{body}");
}

#[tokio::test]
async fn unknown_route_404_wrong_method_405_big_body_413() {
    let harness = start(open_guard());
    let (status, body) = raw(
        &harness.socket,
        b"GET /v1/nope HTTP/1.1\r\nHost: sluice\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains(r#""kind":"not_found""#), "{body}");

    let mut stream = UnixStream::connect(&harness.socket).await.expect("connect");
    stream
        .write_all(b"PUT /v1/status HTTP/1.1\r\nHost: sluice\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    assert!(response.starts_with("HTTP/1.1 405"), "{response}");
    assert!(
        response.to_ascii_lowercase().contains("allow: get\r\n"),
        "{response}"
    );

    let big = "x".repeat(MAX_BODY + 1);
    let request = format!(
        "POST /v1/sandboxes HTTP/1.1\r\nHost: sluice\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{big}",
        big.len()
    );
    let (status, body) = raw(&harness.socket, request.as_bytes()).await;
    assert_eq!(status, 413, "{body}");
}

#[tokio::test]
async fn connect_error_names_socket_and_hints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("absent.sock");
    let err = Client::new(&socket).status().await.expect_err("no daemon");
    assert!(matches!(err, ClientError::Connect { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("absent.sock"), "{message}");
    assert!(message.contains("is `sluice run` running?"), "{message}");
}

#[tokio::test]
async fn bind_replaces_stale_socket_and_protects_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("nested/dir/admin.sock");

    let listener = bind(&socket).expect("first bind creates the parent");
    let meta = std::fs::symlink_metadata(&socket).expect("socket exists");
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let parent_mode = std::fs::metadata(socket.parent().expect("parent"))
        .expect("parent exists")
        .permissions()
        .mode();
    assert_eq!(parent_mode & 0o022, 0, "parent is not group/world-writable");

    // Someone is listening: refuse to steal the path.
    let err = bind(&socket).expect_err("live socket");
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");

    // Listener gone, file left behind: stale, replaced.
    drop(listener);
    assert!(socket.exists());
    let _listener = bind(&socket).expect("stale socket replaced");

    // Not a socket: left alone.
    let file = dir.path().join("regular");
    std::fs::write(&file, b"keep me").expect("write");
    let err = bind(&file).expect_err("regular file");
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists, "{err}");
    assert_eq!(std::fs::read(&file).expect("still there"), b"keep me");
}

#[tokio::test]
async fn guard_refuses_wrong_uid_live() {
    let guard = PeerGuard::new(PathBuf::from("/sluice-admin-test-no-such-root"))
        .with_required_uid(my_uid().wrapping_add(1));
    let harness = start(guard);
    let err = harness.client().status().await.expect_err("refused");
    let message = assert_api(err, 403, "forbidden");
    assert!(message.contains("forbidden"), "{message}");
}

#[tokio::test]
async fn guard_refuses_peer_inside_sandbox_root_live() {
    let contents = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let Some(own) = parse_cgroup2(&contents) else {
        eprintln!(
            "SKIPPED guard_refuses_peer_inside_sandbox_root_live: /proc/self/cgroup has no `0::` line (no cgroup2)"
        );
        return;
    };
    // Our own cgroup as the sandbox root: we are "inside a sandbox".
    let guard = PeerGuard::new(PathBuf::from(own)).with_required_uid(my_uid());
    let harness = start(guard);
    let err = harness.client().list().await.expect_err("refused");
    assert_api(err, 403, "forbidden");
}
