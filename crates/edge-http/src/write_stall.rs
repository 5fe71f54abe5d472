//! Cutting off clients that stop reading (docs/security.md "Budgets"): every connection an edge
//! serves is wrapped in [`WriteStall`], which fails a write that could make no progress for
//! STREAM_STALL_TIMEOUT_MS (default 10,000). hyper then closes the connection and drops the
//! response body, which ends the gRPC stream behind a streamed list or export, so the core's
//! cursor and its database connection are given back. A client that reads slowly but steadily
//! is never cut off: the clock restarts with every byte it takes.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// A connection whose writes fail with `TimedOut` once one has waited `limit` for the peer.
pub struct WriteStall<S> {
    inner: S,
    limit: Duration,
    /// Armed while a write waits for the peer.
    waiting: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteStall<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, limit: Duration) -> Self {
        Self { inner, limit, waiting: None }
    }

    /// What a write that made progress (`Ready`) or none (`Pending`) answers: the timer is reset
    /// by progress, armed by the first wait, and fails the write when it fires.
    fn judge<T>(&mut self, cx: &mut Context<'_>, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.waiting = None;
            return polled;
        }
        let limit = self.limit;
        let timer = self.waiting.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client took no bytes for STREAM_STALL_TIMEOUT_MS"))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteStall<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteStall<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.judge(cx, polled)
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.judge(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.judge(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A peer that reads nothing: the write fails after the limit, not before. A peer that reads
    /// keeps the connection.
    #[tokio::test]
    async fn a_peer_that_stops_reading_is_cut_off() {
        let (near, mut far) = tokio::io::duplex(1024);
        let mut w = WriteStall::new(near, Duration::from_millis(200));
        let started = std::time::Instant::now();
        let chunk = vec![b'x'; 4096];
        let err = loop {
            if let Err(e) = w.write_all(&chunk).await {
                break e;
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(200));

        let (near, mut far2) = tokio::io::duplex(1024);
        let mut w = WriteStall::new(near, Duration::from_millis(200));
        let reader = tokio::spawn(async move {
            let mut got = 0usize;
            let mut buf = [0u8; 512];
            while got < 16 * 1024 {
                tokio::time::sleep(Duration::from_millis(20)).await;
                got += far2.read(&mut buf).await.unwrap_or(0);
            }
            got
        });
        for _ in 0..4 {
            w.write_all(&chunk).await.expect("a slow but steady reader is served");
        }
        assert!(reader.await.expect("reader") >= 16 * 1024);
        drop(far.read(&mut [0u8; 1]).await);
    }
}
