//! Reading a connection's first bytes until [`sniff`] can judge them: the
//! one read loop of the steered and the explicit-proxy listeners.

use std::{future::poll_fn, io, pin::Pin, task::Poll, time::Instant};

use tokio::io::{AsyncRead, AsyncReadExt as _, ReadBuf};

use super::{MAX_SNIFF_BYTES, Sniffed, Unreadable, sniff};

/// The most a first read takes, on the stack: a connection that has sent
/// nothing yet holds no buffer (a flood of silent connections costs their
/// tasks only), and one that has holds what it sent.
const FIRST_READ: usize = 4096;

/// Reads from `client` until its first bytes are a whole ClientHello or
/// request head, or cannot be ([`Sniffed::Unreadable`], with why: the
/// bytes say so, the buffer is full, the client ended its side, or
/// `deadline` passed). Never [`Sniffed::NeedMore`]. `None` when the client
/// closed (or failed) before sending anything. The bytes read are
/// appended to `buf`, which may hold some already; an empty one is only
/// allocated once bytes come.
pub async fn first_bytes<S: AsyncRead + Unpin>(
    client: &mut S,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> Option<Sniffed> {
    loop {
        match sniff(buf) {
            Sniffed::NeedMore => {}
            judged => return Some(judged),
        }
        let room = MAX_SNIFF_BYTES.saturating_sub(buf.len()) as u64;
        let read = if buf.is_empty() {
            tokio::time::timeout_at(deadline.into(), first_read(client, buf)).await
        } else {
            tokio::time::timeout_at(deadline.into(), (&mut *client).take(room).read_buf(buf)).await
        };
        match read {
            Ok(Ok(0) | Err(_)) if buf.is_empty() => return None,
            Ok(Ok(n)) if n > 0 => {}
            // The client's end mid-way, a failed read, or the timeout: what
            // came is all there is.
            _ => return Some(Sniffed::Unreadable(Unreadable::cut_short(buf))),
        }
    }
}

/// Reads into a buffer on the stack, then what came into `buf` (empty).
async fn first_read<S: AsyncRead + Unpin>(client: &mut S, buf: &mut Vec<u8>) -> io::Result<usize> {
    poll_fn(|cx| {
        let mut stack = [0u8; FIRST_READ];
        let mut read = ReadBuf::new(&mut stack);
        match Pin::new(&mut *client).poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) => {
                buf.extend_from_slice(read.filled());
                Poll::Ready(Ok(read.filled().len()))
            }
            Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncWriteExt as _;

    use super::*;

    /// A client that trickles its head (or goes quiet, or ends) is judged
    /// on what it sent once the deadline passes or its side ends: never
    /// waited for past it, never taken for readable.
    #[tokio::test]
    async fn trickled_quiet_and_cut_clients_are_judged() {
        let head = b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n";
        // Sent a byte at a time, then completed: readable.
        let (mut client, mut server) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            for byte in head {
                client.write_all(&[*byte]).await.expect("write");
                tokio::task::yield_now().await;
            }
            client
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut buf = Vec::new();
        let got = first_bytes(&mut server, &mut buf, deadline).await;
        assert_eq!(
            got,
            Some(Sniffed::Http {
                host: Some("a.test".into())
            })
        );
        assert_eq!(buf, head);
        drop(writer.await);

        // Part of a head, then silence past the deadline.
        let (mut client, mut server) = tokio::io::duplex(64);
        client.write_all(&head[..10]).await.expect("write");
        let deadline = Instant::now() + Duration::from_millis(50);
        let mut buf = Vec::new();
        let got = first_bytes(&mut server, &mut buf, deadline).await;
        assert_eq!(got, Some(Sniffed::Unreadable(Unreadable::HttpIncomplete)));

        // Part of a hello, then the client's end.
        let (mut client, mut server) = tokio::io::duplex(64);
        client
            .write_all(&[0x16, 0x03, 0x01, 0x02])
            .await
            .expect("write");
        drop(client);
        let mut buf = Vec::new();
        let got = first_bytes(
            &mut server,
            &mut buf,
            Instant::now() + Duration::from_secs(30),
        )
        .await;
        assert_eq!(got, Some(Sniffed::Unreadable(Unreadable::TlsIncomplete)));

        // Silence: judged, and no buffer was held for it.
        let (_client, mut server) = tokio::io::duplex(64);
        let deadline = Instant::now() + Duration::from_millis(50);
        let mut buf = Vec::new();
        let got = first_bytes(&mut server, &mut buf, deadline).await;
        assert_eq!(got, Some(Sniffed::Unreadable(Unreadable::Silent)));
        assert_eq!(buf.capacity(), 0);

        // Gone before a byte.
        let (client, mut server) = tokio::io::duplex(64);
        drop(client);
        let deadline = Instant::now() + Duration::from_secs(30);
        assert_eq!(
            first_bytes(&mut server, &mut Vec::new(), deadline).await,
            None
        );
    }
}
