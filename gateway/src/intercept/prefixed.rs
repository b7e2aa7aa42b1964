//! A stream that replays bytes already read from it before reading on.
//!
//! The daemon reads a connection's first bytes to sniff the TLS SNI or the
//! HTTP Host, then hands the whole connection to a TLS acceptor or an HTTP
//! server. Those expect to see the stream from its first byte, so the sniffed
//! prefix is served again ahead of the socket. Writes never touch the prefix.

#![forbid(unsafe_code)]

use std::{
    fmt, io,
    pin::Pin,
    task::{Context, Poll},
};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `inner`, read as if `prefix` had not yet been taken off its front.
pub struct Prefixed<S> {
    prefix: Vec<u8>,
    /// How much of `prefix` has been read back already. An index rather than
    /// draining the `Vec` keeps each read O(bytes copied).
    pos: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    pub fn new(prefix: Vec<u8>, inner: S) -> Prefixed<S> {
        Prefixed {
            prefix,
            pos: 0,
            inner,
        }
    }

    /// The part of the prefix not read yet, without taking it.
    pub fn prefix(&self) -> &[u8] {
        self.prefix.get(self.pos..).unwrap_or_default()
    }

    /// Puts `bytes` back in front of whatever is still to be read: bytes
    /// read from the stream and not used yet (what a parked HTTP/1
    /// connection's hyper had read, or the first bytes that woke it).
    pub fn unread(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let rest = self.prefix.get(self.pos..).unwrap_or_default();
        let mut prefix = Vec::with_capacity(bytes.len() + rest.len());
        prefix.extend_from_slice(bytes);
        prefix.extend_from_slice(rest);
        self.prefix = prefix;
        self.pos = 0;
    }

    /// The part of the prefix not read yet, and the inner stream.
    pub fn into_inner(self) -> (Vec<u8>, S) {
        let Prefixed {
            mut prefix,
            pos,
            inner,
        } = self;
        prefix.drain(..pos.min(prefix.len()));
        (prefix, inner)
    }
}

impl<S> fmt::Debug for Prefixed<S> {
    // The prefix is sandbox data (it may hold credentials); show its size only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prefixed")
            .field("unread_prefix", &self.prefix.len().saturating_sub(self.pos))
            .finish_non_exhaustive()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(rest) = this.prefix.get(this.pos..).filter(|rest| !rest.is_empty()) {
            // Serve only prefix bytes this call, even if the buffer has room
            // for more: reading the socket too could block after the caller
            // already has data it can act on.
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            this.pos += n;
            if this.pos == this.prefix.len() {
                // Release the sniff buffer; connections can live for hours.
                this.prefix = Vec::new();
                this.pos = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, duplex};

    use super::*;

    /// Reads `stream` to EOF through a buffer of `chunk` bytes.
    async fn read_all<R: AsyncRead + Unpin>(stream: &mut R, chunk: usize) -> io::Result<Vec<u8>> {
        let (mut out, mut buf) = (Vec::new(), vec![0; chunk]);
        loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    #[tokio::test]
    async fn reads_prefix_then_inner() -> io::Result<()> {
        // (prefix, bytes still on the socket, read buffer size)
        let cases: &[(&[u8], &[u8], usize)] = &[
            (b"GET / HTTP/1.1\r\n", b"Host: a\r\n\r\n", 4096),
            (b"hello ", b"world", 1),
            (b"hello ", b"world", 3),
            (b"", b"only inner", 4),
            (b"only prefix", b"", 5),
            (b"", b"", 8),
        ];
        for &(prefix, inner, chunk) in cases {
            let (mut client, server) = duplex(64);
            client.write_all(inner).await?;
            client.shutdown().await?;
            let mut stream = Prefixed::new(prefix.to_vec(), server);
            let got = read_all(&mut stream, chunk).await?;
            assert_eq!(
                got,
                [prefix, inner].concat(),
                "prefix {prefix:?}, chunk {chunk}"
            );
        }
        Ok(())
    }

    #[tokio::test]
    async fn a_read_serves_prefix_alone() -> io::Result<()> {
        // The socket has data too, but the first read must not mix it in.
        let (mut client, server) = duplex(64);
        client.write_all(b"later").await?;
        let mut stream = Prefixed::new(b"first".to_vec(), server);
        let mut buf = [0; 64];
        let n = stream.read(&mut buf).await?;
        assert_eq!(&buf[..n], b"first");
        let n = stream.read(&mut buf).await?;
        assert_eq!(&buf[..n], b"later");
        Ok(())
    }

    #[tokio::test]
    async fn into_inner_returns_unread_prefix() -> io::Result<()> {
        // (prefix, bytes read before into_inner, expected unread rest)
        let cases: &[(&[u8], usize, &[u8])] = &[
            (b"abcdef", 0, b"abcdef"),
            (b"abcdef", 2, b"cdef"),
            (b"abcdef", 6, b""),
            (b"", 0, b""),
        ];
        for &(prefix, read, rest) in cases {
            let (_client, server) = duplex(64);
            let mut stream = Prefixed::new(prefix.to_vec(), server);
            let mut buf = vec![0; read];
            stream.read_exact(&mut buf).await?;
            let (unread, _inner) = stream.into_inner();
            assert_eq!(unread, rest, "prefix {prefix:?}, read {read}");
        }
        Ok(())
    }

    #[tokio::test]
    async fn unread_bytes_come_first() -> io::Result<()> {
        // (prefix, bytes read from it first, put back, expected next reads)
        type Case = (&'static [u8], usize, &'static [u8], &'static [u8]);
        let cases: &[Case] = &[
            (b"", 0, b"GET /", b"GET /socket"),
            (b"abcdef", 6, b"xy", b"xysocket"),
            (b"abcdef", 2, b"xy", b"xycdefsocket"),
            (b"abc", 1, b"", b"bcsocket"),
        ];
        for &(prefix, read, back, want) in cases {
            let (mut client, server) = duplex(64);
            client.write_all(b"socket").await?;
            client.shutdown().await?;
            let mut stream = Prefixed::new(prefix.to_vec(), server);
            let mut buf = vec![0; read];
            stream.read_exact(&mut buf).await?;
            stream.unread(back);
            assert_eq!(
                read_all(&mut stream, 3).await?,
                want,
                "{prefix:?} {read} {back:?}"
            );
        }
        Ok(())
    }

    #[tokio::test]
    async fn writes_pass_through() -> io::Result<()> {
        let (mut client, server) = duplex(64);
        let mut stream = Prefixed::new(b"unread".to_vec(), server);
        stream.write_all(b"pong").await?;
        // A vectored write may take only a leading part of the slices.
        let bufs = [io::IoSlice::new(b"ve"), io::IoSlice::new(b"c")];
        let n = stream.write_vectored(&bufs).await?;
        assert!(n > 0, "vectored write wrote nothing");
        stream.flush().await?;
        let mut got = vec![0; 4 + n];
        client.read_exact(&mut got).await?;
        assert_eq!(got, [&b"pong"[..], &b"vec"[..n]].concat());
        // The prefix is read-side only: writing must not have consumed it.
        let (unread, _) = stream.into_inner();
        assert_eq!(unread, b"unread");
        Ok(())
    }

    #[tokio::test]
    async fn shutdown_passes_through() -> io::Result<()> {
        let (mut client, server) = duplex(64);
        let mut stream = Prefixed::new(b"x".to_vec(), server);
        stream.write_all(b"bye").await?;
        stream.shutdown().await?;
        assert_eq!(read_all(&mut client, 16).await?, b"bye");
        Ok(())
    }
}
