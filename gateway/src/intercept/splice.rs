//! The bytes after a 101: copied both ways until either side is done or
//! the connection is revoked. A WebSocket's frames from the upstream are
//! followed as they go down ([`Edges`]), so a revocation between two of
//! them ends the sandbox's side with a close frame that says why
//! ([`ws_close`](super::ws_close)). When a credential went into the
//! upgrade, the sandbox's frames go up as they are and the upstream's come
//! down with the secret redacted ([`FrameRedactor`]); a frame that cannot
//! be read ends the connection rather than pass unread.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

use super::ws_close::{self, Edges};
use crate::redact::{FrameRedactor, Needles};

/// How long a revoked WebSocket's close frame may take to go: a sandbox
/// that does not read must not hold the connection open.
const CLOSE_WAIT: Duration = Duration::from_millis(500);

/// Splices the sandbox's side of an upgrade with the upstream's until the
/// streams end or `revoked` resolves. A WebSocket's frames are followed,
/// and redacted on the way down when `needles` are given (only WebSocket
/// upgrades carry credentials); any other protocol is copied unread.
pub(super) async fn upgraded(
    downstream: OnUpgrade,
    upstream: OnUpgrade,
    websocket: bool,
    needles: Option<Arc<Needles>>,
    revoked: impl Future<Output = ()>,
) {
    let (Ok(down), Ok(up)) = (downstream.await, upstream.await) else {
        return;
    };
    let (mut down, mut up) = (TokioIo::new(down), TokioIo::new(up));
    if websocket || needles.is_some() {
        return frames(down, up, needles, revoked).await;
    }
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut down, &mut up) => {
            let _ = down.shutdown().await;
        }
        // Both ends are dropped, so closed, at once: a graceful close could
        // wait on a peer that does not read.
        () = revoked => {}
    }
}

/// Splices a WebSocket, `down` (the sandbox) and `up` (the upstream),
/// until the upstream is done or `revoked` resolves, redacting what comes
/// down when `needles` are given. Revoked between two frames going down,
/// the sandbox gets a close frame (status 1008) before both ends close.
pub(super) async fn frames<D, U>(
    down: D,
    up: U,
    needles: Option<Arc<Needles>>,
    revoked: impl Future<Output = ()>,
) where
    D: AsyncRead + AsyncWrite,
    U: AsyncRead + AsyncWrite,
{
    let (mut down_read, mut down_write) = tokio::io::split(down);
    let (mut up_read, mut up_write) = tokio::io::split(up);
    // Where what has gone down stands: a write cut short by the
    // revocation leaves no edge to close at.
    let mut edges = Edges::default();
    let was_revoked = {
        // The sandbox's end (its half-close) goes up as an end; its failure
        // (a reset, the idle timeout) ends the connection, as a splice
        // without frames does.
        let upward = async {
            let sent = tokio::io::copy(&mut down_read, &mut up_write).await;
            let _ = up_write.shutdown().await;
            sent.is_ok()
        };
        let downward = async {
            let mut redactor = needles.map(FrameRedactor::new);
            let (mut buf, mut out) = (vec![0; 16 * 1024], Vec::new());
            loop {
                let n = match up_read.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let bytes = match &mut redactor {
                    None => &buf[..n],
                    Some(redactor) => {
                        out.clear();
                        if let Err(err) = redactor.push(&buf[..n], &mut out) {
                            tracing::warn!(%err, "closing a WebSocket whose frames cannot be redacted");
                            break;
                        }
                        &out
                    }
                };
                edges.writing(bytes);
                if down_write.write_all(bytes).await.is_err() {
                    break;
                }
                edges.written();
            }
            let _ = down_write.shutdown().await;
        };
        // The sandbox may stop sending and still read; once the upstream
        // is done (or unreadable), so is the connection.
        let spliced = async {
            tokio::pin!(upward, downward);
            tokio::select! {
                () = &mut downward => {}
                ended = &mut upward => if ended {
                    downward.await;
                },
            }
        };
        tokio::select! {
            () = spliced => false,
            () = revoked => true,
        }
    };
    if was_revoked && edges.may_close() {
        // Then both ends are dropped, so closed: the sandbox's reply to
        // the close is not waited for.
        let _ = tokio::time::timeout(CLOSE_WAIT, async {
            down_write.write_all(ws_close::REVOKED).await?;
            down_write.shutdown().await
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;
    use crate::intercept::idle::Idle;
    use crate::redact::REPLACEMENT;

    const SECRET: &[u8] = b"sk-live-0123456789abcdef";
    const WAIT: Duration = Duration::from_secs(10);

    fn needles() -> Arc<Needles> {
        Arc::new(Needles::new(&[SECRET], REPLACEMENT))
    }

    #[tokio::test]
    async fn frames_come_down_redacted_and_a_half_close_goes_up() {
        let (down, mut sandbox) = tokio::io::duplex(1024);
        let (up, mut upstream) = tokio::io::duplex(1024);
        let splice = tokio::spawn(frames(down, up, Some(needles()), std::future::pending()));
        // The sandbox sends and stops sending; the upstream reads it all
        // and its end, then answers with the secret in a text frame.
        sandbox.write_all(b"\x81\x80abcd").await.expect("write");
        sandbox.shutdown().await.expect("half-close");
        let mut got = Vec::new();
        upstream.read_to_end(&mut got).await.expect("read");
        assert_eq!(got, b"\x81\x80abcd");
        let mut text = vec![0x81, SECRET.len() as u8];
        text.extend_from_slice(SECRET);
        upstream.write_all(&text).await.expect("write");
        upstream.shutdown().await.expect("close");
        let mut got = Vec::new();
        sandbox.read_to_end(&mut got).await.expect("read");
        let mut want = vec![0x81, REPLACEMENT.len() as u8];
        want.extend_from_slice(REPLACEMENT);
        assert_eq!(got, want);
        tokio::time::timeout(WAIT, splice)
            .await
            .expect("ended")
            .expect("no panic");
    }

    #[tokio::test]
    async fn a_sandbox_that_fails_ends_the_connection_however_quiet_the_upstream() {
        let (down, _sandbox) = tokio::io::duplex(1024);
        let (up, _upstream) = tokio::io::duplex(1024);
        let down = Idle::new(down, Duration::from_millis(50), Default::default());
        let ended = tokio::time::timeout(
            WAIT,
            frames(down, up, Some(needles()), std::future::pending()),
        )
        .await;
        assert!(ended.is_ok(), "the idle timeout ends the splice");
    }

    /// Revoked with `written` gone down from the upstream (and read by the
    /// sandbox), with or without redaction: what the sandbox reads after
    /// it, to its end.
    async fn revoked_after(written: &[u8], redacting: bool) -> Vec<u8> {
        let (down, mut sandbox) = tokio::io::duplex(1024);
        let (up, mut upstream) = tokio::io::duplex(1024);
        let (revoke, revoked) = tokio::sync::oneshot::channel::<()>();
        let needles = redacting.then(needles);
        let splice = tokio::spawn(frames(down, up, needles, async {
            let _ = revoked.await;
        }));
        upstream.write_all(written).await.expect("write");
        let mut got = vec![0; written.len()];
        sandbox
            .read_exact(&mut got)
            .await
            .expect("what was written");
        assert_eq!(got, written);
        revoke.send(()).expect("revoke");
        tokio::time::timeout(WAIT, splice)
            .await
            .expect("ended")
            .expect("no panic");
        let mut rest = Vec::new();
        sandbox.read_to_end(&mut rest).await.expect("read");
        rest
    }

    #[tokio::test]
    async fn a_websocket_revoked_between_frames_is_told_why() {
        for redacting in [false, true] {
            assert_eq!(
                revoked_after(b"\x81\x02hi", redacting).await,
                ws_close::REVOKED,
                "redacting: {redacting}"
            );
        }
    }

    #[tokio::test]
    async fn a_websocket_revoked_inside_a_frame_or_after_a_close_is_cut() {
        // Five bytes of a frame announcing ten: a close now would be read
        // as the rest of its payload.
        assert_eq!(revoked_after(b"\x82\x0a123", false).await, b"");
        // The upstream closed first: nothing may follow its close.
        assert_eq!(revoked_after(b"\x88\x02\x03\xe8", false).await, b"");
    }
}
