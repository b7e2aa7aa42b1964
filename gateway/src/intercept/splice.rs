//! The bytes after a 101: copied both ways until either side is done or
//! the connection is revoked. When a credential went into the upgrade, the
//! sandbox's frames go up as they are and the upstream's come down with
//! the secret redacted ([`FrameRedactor`]); a frame that cannot be read
//! ends the connection rather than pass unread.

use std::future::Future;
use std::sync::Arc;

use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

use crate::redact::{FrameRedactor, Needles};

/// Splices the sandbox's side of an upgrade with the upstream's, redacting
/// what comes down when `needles` are given, until the streams end or
/// `revoked` resolves.
pub(super) async fn upgraded(
    downstream: OnUpgrade,
    upstream: OnUpgrade,
    needles: Option<Arc<Needles>>,
    revoked: impl Future<Output = ()>,
) {
    let (Ok(down), Ok(up)) = (downstream.await, upstream.await) else {
        return;
    };
    let (mut down, mut up) = (TokioIo::new(down), TokioIo::new(up));
    let spliced = async {
        match needles {
            None => {
                let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
                let _ = down.shutdown().await;
            }
            Some(needles) => redacted(&mut down, &mut up, needles).await,
        }
    };
    tokio::select! {
        () = spliced => {}
        // Both ends are dropped, so closed, at once: a graceful close could
        // wait on a peer that does not read, and a WebSocket ended without
        // a close frame tells its client it was cut.
        () = revoked => {}
    }
}

/// Splices `down` (the sandbox) and `up` (the upstream) until the upstream
/// is done, redacting what comes down.
pub(super) async fn redacted<D, U>(down: D, up: U, needles: Arc<Needles>)
where
    D: AsyncRead + AsyncWrite,
    U: AsyncRead + AsyncWrite,
{
    let (mut down_read, mut down_write) = tokio::io::split(down);
    let (mut up_read, mut up_write) = tokio::io::split(up);
    // The sandbox's end (its half-close) goes up as an end; its failure
    // (a reset, the idle timeout) ends the connection, as a splice
    // without redaction does.
    let upward = async {
        let sent = tokio::io::copy(&mut down_read, &mut up_write).await;
        let _ = up_write.shutdown().await;
        sent.is_ok()
    };
    let downward = async {
        let mut frames = FrameRedactor::new(needles);
        let (mut buf, mut out) = (vec![0; 16 * 1024], Vec::new());
        loop {
            let n = match up_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            out.clear();
            if let Err(err) = frames.push(&buf[..n], &mut out) {
                tracing::warn!(%err, "closing a WebSocket whose frames cannot be redacted");
                break;
            }
            if down_write.write_all(&out).await.is_err() {
                break;
            }
        }
        let _ = down_write.shutdown().await;
    };
    // The sandbox may stop sending and still read; once the upstream is
    // done (or unreadable), so is the connection.
    tokio::pin!(upward, downward);
    tokio::select! {
        () = &mut downward => {}
        ended = &mut upward => if ended {
            downward.await;
        },
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
        let splice = tokio::spawn(redacted(down, up, needles()));
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
        let ended = tokio::time::timeout(WAIT, redacted(down, up, needles())).await;
        assert!(ended.is_ok(), "the idle timeout ends the splice");
    }
}
