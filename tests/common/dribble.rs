//! A slow peer's transport: the first write (a request head, a Wyoming event) goes out in
//! a few pieces spread over a span, everything after it at once. Wrapped round a socket
//! under a real client (tungstenite's handshake, an HTTP request), it shows that a
//! deadline lets a client that is slow, but within it, through.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

pub struct Dribble<S> {
    inner: S,
    pieces: usize,
    gap: Duration,
    /// Bytes of the first write still to send, and the size of a piece; `None` before
    /// the first write.
    plan: Option<(usize, usize)>,
    pause: Option<Pin<Box<Sleep>>>,
}

impl<S> Dribble<S> {
    /// The first write's bytes go out in `pieces` pieces (at least 2), the last one
    /// `span` after the first.
    pub fn new(inner: S, pieces: usize, span: Duration) -> Self {
        let pieces = pieces.max(2);
        let gaps = u32::try_from(pieces - 1).expect("a few pieces");
        Self {
            inner,
            pieces,
            gap: span / gaps,
            plan: None,
            pause: None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Dribble<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Dribble<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if buf.is_empty() {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        }
        let pieces = this.pieces;
        let (left, piece) = *this
            .plan
            .get_or_insert_with(|| (buf.len(), buf.len().div_ceil(pieces)));
        if left == 0 {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        }
        if let Some(pause) = this.pause.as_mut() {
            ready!(pause.as_mut().poll(cx));
            this.pause = None;
        }
        let n = ready!(
            Pin::new(&mut this.inner).poll_write(cx, &buf[..buf.len().min(piece).min(left)])
        )?;
        let left = left - n;
        this.plan = Some((left, piece));
        if left > 0 {
            this.pause = Some(Box::pin(tokio::time::sleep(this.gap)));
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
