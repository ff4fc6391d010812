//! Network pieces every channel server shares, written once: binding with an error that
//! names the channel and address, an HTTP (WebSocket) server with a connection cap and a
//! handshake deadline that stops gracefully on cancellation, and the writer task that
//! owns a WebSocket's sending half (and pings, so a silent peer can be told from a live
//! one). The caps, the descriptor budget and the accept loop are `crate::netutil`'s,
//! shared with the control socket.

use crate::actor::Tasks;
use crate::channels::contract::StartError;
use crate::netutil::{self, ConnLimit, ConnPermit};
use futures_util::{Sink, SinkExt};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::debug;

/// Bind a TCP listener for `channel`; a clash says which channel and which address.
pub async fn bind(
    channel: &'static str,
    addr: &str,
) -> Result<(TcpListener, SocketAddr), StartError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| StartError::new(channel, addr, e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| StartError::new(channel, addr, e))?;
    Ok((listener, bound))
}

/// A listener's cap, inside the process-wide descriptor budget.
pub fn listener_limit(label: &'static str, cap: usize) -> ConnLimit {
    ConnLimit::within(label, cap, netutil::fd_budget())
}

/// How an HTTP listener bounds its peers.
#[derive(Clone)]
pub struct HttpLimits {
    /// Connections open at once, upgraded WebSockets included (the permit rides inside
    /// the stream, so it lives as long as the socket).
    pub conns: ConnLimit,
    /// The request's headers must be complete, and the connection upgraded to a
    /// WebSocket, within this, counted from the accept.
    pub handshake: Duration,
}

/// Serve `app` on `listener` as a kernel service until `cancel` fires; in-flight
/// requests (WebSocket upgrades included) finish on their own. A connection not upgraded
/// to a WebSocket within `limits.handshake` of its accept (headers incomplete, or a
/// reply it does not read) is closed, and one over the cap is answered 503 and closed at
/// once, never held.
pub fn serve_http(
    tasks: &Tasks,
    channel: &'static str,
    listener: TcpListener,
    app: axum::Router,
    cancel: CancellationToken,
    limits: HttpLimits,
) {
    tasks.spawn_in(crate::actor::Group::Service, async move {
        let conns = TaskTracker::new();
        let handshake = limits.handshake;
        netutil::accept_loop(
            channel,
            listener,
            limits.conns,
            cancel.clone(),
            |stream, permit| {
                let app = app.clone();
                let cancel = cancel.clone();
                conns.spawn(serve_conn(channel, stream, permit, app, handshake, cancel));
            },
            refuse_http,
        )
        .await;
        conns.close();
        conns.wait().await;
    });
}

/// Over the cap: say so if the socket takes the bytes now (never waits), then close.
fn refuse_http(stream: TcpStream) {
    let _ = stream.try_write(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n",
    );
}

async fn serve_conn(
    channel: &'static str,
    stream: TcpStream,
    permit: ConnPermit,
    app: axum::Router,
    handshake: Duration,
    cancel: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(Held {
        _permit: permit,
        inner: stream,
    });
    // hyper's own header deadline starts when it waits for a request head (right after
    // the accept, and again while a kept-alive connection idles), so a peer that sends
    // nothing, or half a request, is closed after `handshake`
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(handshake)
        .serve_connection(io, TowerToHyperService::new(app))
        .with_upgrades();
    tokio::pin!(conn);
    // and the whole of it, from the accept to the upgrade, gets the same deadline: these
    // servers serve only a WebSocket handshake, so a peer that keeps a connection
    // without being upgraded (complete requests whose replies it never reads, a body it
    // never sends, an idle keep-alive) is closed too. An upgraded socket has left `conn`
    // (it completes at the upgrade) and is bounded by its channel's own reader.
    let deadline = tokio::time::sleep(handshake);
    tokio::pin!(deadline);
    let mut stopping = false;
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    debug!(channel, error = %e, "http connection closed");
                }
                return;
            }
            _ = deadline.as_mut() => {
                debug!(channel, "http connection closed: no WebSocket upgrade within the handshake deadline");
                return;
            }
            _ = cancel.cancelled(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// A stream that holds its connection's place until it is dropped (through a
/// WebSocket upgrade too: hyper keeps the stream inside the upgraded socket).
struct Held<S> {
    // fields drop in order: the place is free before the socket closes, so a peer that
    // sees its connection closed can connect again at once
    _permit: ConnPermit,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Held<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Held<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The longest one frame may take to go out before the peer counts as gone.
const SEND_DEADLINE: Duration = Duration::from_secs(30);

/// Own the sending half of a WebSocket: frames queued on the returned sender (bounded by
/// `cap`) go out in order; with `ping = Some((every, frame))` a ping frame also goes out
/// every `every`, so a peer that answers nothing can be told apart and closed by its
/// reader. The task ends, closing the socket, when every sender is gone, the socket
/// fails, or `cancel` fires (frames already queued then still go out). The task is one of
/// the kernel's tracked background tasks (`tasks`), so a shutdown sees it end.
pub fn spawn_ws_writer<S, M>(
    tasks: &crate::actor::Tasks,
    mut sink: S,
    cap: usize,
    cancel: CancellationToken,
    frame: fn(String) -> M,
    ping: Option<(Duration, fn() -> M)>,
) -> mpsc::Sender<String>
where
    S: Sink<M> + Unpin + Send + 'static,
    M: Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<String>(cap.max(1));
    tasks.spawn(async move {
        let every = ping.map(|p| p.0).unwrap_or(Duration::from_secs(3600));
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => None,
                f = rx.recv() => f.map(frame),
                _ = ticks.tick(), if ping.is_some() => ping.map(|p| (p.1)()),
            };
            let Some(msg) = next else { break };
            // a peer that stops reading (a zero TCP window) must not hold the task, the
            // connection and its permit forever
            match tokio::time::timeout(SEND_DEADLINE, sink.send(msg)).await {
                Ok(Ok(())) => {}
                _ => return,
            }
        }
        while let Ok(text) = rx.try_recv() {
            match tokio::time::timeout(SEND_DEADLINE, sink.send(frame(text))).await {
                Ok(Ok(())) => {}
                _ => return,
            }
        }
        let _ = tokio::time::timeout(SEND_DEADLINE, sink.close()).await;
    });
    tx
}
