//! Network pieces every channel server shares, written once: binding with an error that
//! names the channel and address, an HTTP (WebSocket) server that stops gracefully on
//! cancellation, and the writer task that owns a WebSocket's sending half.

use crate::channels::contract::StartError;
use crate::kernel::Kernel;
use futures_util::{Sink, SinkExt};
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::warn;

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

/// Serve `app` on `listener` as a kernel service until `cancel` fires; in-flight
/// requests (WebSocket upgrades included) finish on their own.
pub fn serve_http(
    kernel: &Kernel,
    channel: &'static str,
    listener: TcpListener,
    app: axum::Router,
    cancel: CancellationToken,
) {
    kernel.spawn_service(async move {
        let serve = axum::serve(listener, app)
            .with_graceful_shutdown(async move { cancel.cancelled_owned().await });
        if let Err(e) = serve.await {
            warn!(channel, error = %e, "server stopped with an error");
        }
    });
}

/// Own the sending half of a WebSocket: frames queued on the returned sender (bounded by
/// `cap`) go out in order; the task ends, closing the socket, when every sender is gone,
/// the socket fails, or `cancel` fires (frames already queued then still go out).
pub fn spawn_ws_writer<S, M>(
    mut sink: S,
    cap: usize,
    cancel: CancellationToken,
    frame: fn(String) -> M,
) -> mpsc::Sender<String>
where
    S: Sink<M> + Unpin + Send + 'static,
    M: Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<String>(cap.max(1));
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => None,
                f = rx.recv() => f,
            };
            let Some(text) = next else { break };
            if sink.send(frame(text)).await.is_err() {
                return;
            }
        }
        while let Ok(text) = rx.try_recv() {
            if sink.send(frame(text)).await.is_err() {
                return;
            }
        }
        let _ = sink.close().await;
    });
    tx
}
