//! The bytes after a 101 when a credential went into the upgrade: the
//! sandbox's frames go up as they are; the upstream's come down with the
//! secret redacted ([`FrameRedactor`]). A frame that cannot be read ends
//! the connection rather than pass unread.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

use crate::redact::{FrameRedactor, Needles};

/// Splices `down` (the sandbox) and `up` (the upstream) until the upstream
/// is done, redacting what comes down.
pub(super) async fn redacted<D, U>(down: D, up: U, needles: Arc<Needles>)
where
    D: AsyncRead + AsyncWrite,
    U: AsyncRead + AsyncWrite,
{
    let (mut down_read, mut down_write) = tokio::io::split(down);
    let (mut up_read, mut up_write) = tokio::io::split(up);
    let upward = async {
        let _ = tokio::io::copy(&mut down_read, &mut up_write).await;
        let _ = up_write.shutdown().await;
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
        () = &mut upward => downward.await,
    }
}
