//! Serving the dashboard: bind, cap the connections inside the descriptor budget, and
//! serve plain HTTP/1.1 until the kernel's services stop. Unlike the channels' servers
//! (which only ever upgrade to a WebSocket, `channels::net::serve_http`), a browser keeps
//! a connection alive between requests: hyper's header deadline closes one that idles
//! or sends half a request, and [`super::auth`] bounds each request's handling.

use super::{app, Dash, LABEL};
use crate::channels::contract::StartError;
use crate::channels::net::{bind, listener_limit};
use crate::kernel::Kernel;
use crate::netutil::{self, ConnPermit};
use axum::extract::ConnectInfo;
use axum::Extension;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info};

/// A request's head must arrive within this (from the accept, and again while a
/// kept-alive connection waits for its next request).
pub const HEADER_DEADLINE: Duration = Duration::from_secs(10);

/// Start serving when `[http] listen` is set, with the routes the channels provide
/// (`channels::start_enabled`'s); `None` when the HTTP server is off.
pub async fn start(
    kernel: &Kernel,
    provided: Option<axum::Router>,
) -> Result<Option<SocketAddr>, StartError> {
    let http = &kernel.config().http;
    let Some(listen) = http.listen.as_deref() else {
        return Ok(None);
    };
    // the configuration refuses this already; a second look costs nothing
    if http.exposed() && http.token.is_none() && http.ha_agent_token.is_none() {
        return Err(StartError::new(
            LABEL,
            listen,
            std::io::Error::other(
                "listening beyond this machine needs http.token (HOMEBOT_HTTP_TOKEN)",
            ),
        ));
    }
    let (listener, addr) = bind(LABEL, listen).await?;
    let limit = listener_limit(LABEL, http.max_connections);
    let router = app(Dash::new(kernel), provided);
    let cancel = kernel.cancel_token().child_token();
    info!(addr = %addr, token = http.token.is_some(), ha_agent = http.ha_agent_token.is_some(), "dashboard listening");
    kernel
        .tasks()
        .spawn_in(crate::actor::Group::Service, async move {
            let conns = TaskTracker::new();
            netutil::accept_loop(
                LABEL,
                listener,
                limit,
                cancel.clone(),
                |stream, permit| {
                    // the peer's address, for the login limit (as axum's `ConnectInfo`)
                    let app = match stream.peer_addr() {
                        Ok(peer) => router.clone().layer(Extension(ConnectInfo(peer))),
                        Err(_) => router.clone(),
                    };
                    conns.spawn(serve_conn(stream, permit, app, cancel.clone()));
                },
                refuse,
            )
            .await;
            conns.close();
            conns.wait().await;
        });
    Ok(Some(addr))
}

/// Over the cap: say so if the socket takes the bytes now (never waits), then close.
fn refuse(stream: TcpStream) {
    let _ = stream.try_write(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n",
    );
}

async fn serve_conn(
    stream: TcpStream,
    permit: ConnPermit,
    app: axum::Router,
    cancel: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(stream);
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_DEADLINE)
        .serve_connection(io, TowerToHyperService::new(app));
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    debug!(error = %e, "dashboard connection closed");
                }
                break;
            }
            _ = cancel.cancelled(), if !stopping => {
                // the request in flight finishes; then the connection closes
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
    drop(permit);
}
