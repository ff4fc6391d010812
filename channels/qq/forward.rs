//! The forward WebSocket client: homebot connects out to the implementation (NapCat's
//! "WebSocket 服务端", `ws://host:6700`) and keeps reconnecting with exponential backoff
//! (1 s doubling to 30 s, reset by a successful connection) until the channel is
//! cancelled. The account is learned from the first event that names a `self_id`; the
//! connection then takes the account's slot like a reverse one and is read by the same
//! loop. The URL may carry the token in its query string, so only its path is logged.

use super::conn::{Ended, WRITER_QUEUE};
use super::conns::Role;
use super::events;
use super::handle::Qq;
use futures_util::StreamExt;
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message as TMsg;
use tracing::{info, warn};

const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub(super) async fn forward_loop(qq: Qq, url: String) {
    // a token may ride in the query string: never log it
    let shown = url.split('?').next().unwrap_or_default().to_string();
    let mut backoff = FIRST_BACKOFF;
    let cancel = qq.cancel.clone();
    loop {
        let mut req = match url.as_str().into_client_request() {
            Ok(r) => r,
            Err(e) => {
                warn!(url = %shown, error = %e, "qq forward WebSocket: bad URL; not connecting");
                return;
            }
        };
        if let Some(t) = &qq.cfg.access_token {
            if let Ok(v) = format!("Bearer {}", t.expose()).parse() {
                req.headers_mut().insert("authorization", v);
            }
        }
        let connected = tokio::select! {
            r = tokio_tungstenite::connect_async(req) => r,
            _ = cancel.cancelled() => return,
        };
        match connected {
            Ok((ws, _)) => {
                backoff = FIRST_BACKOFF;
                info!(url = %shown, "qq forward WebSocket connected");
                tokio::select! {
                    _ = run_forward(&qq, ws) => {}
                    _ = cancel.cancelled() => return,
                }
                info!(url = %shown, "qq forward WebSocket disconnected");
            }
            Err(e) => {
                warn!(url = %shown, error = %e, retry_secs = backoff.as_secs(), "qq forward WebSocket: cannot connect")
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = cancel.cancelled() => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn run_forward(qq: &Qq, ws: Socket) {
    let (sink, mut stream) = ws.split();
    // The qq id is learned from the first event that names it.
    let wait = Duration::from_secs(qq.cfg.heartbeat_timeout_secs);
    let (self_id, first) = loop {
        match tokio::time::timeout(wait, stream.next()).await {
            Ok(Some(Ok(TMsg::Text(t)))) => {
                if let Some(id) = events::self_id_of(&t) {
                    break (id, t);
                }
            }
            Ok(Some(Ok(_))) => {}
            _ => return,
        }
    };
    let slot = match qq.reserve(self_id.as_str(), Role::Universal).await {
        Ok(slot) => slot,
        Err(e) => {
            warn!(error = %e, "qq forward WebSocket refused");
            return;
        }
    };
    let tx = crate::channels::net::spawn_ws_writer(
        qq.ctx.tasks(),
        sink,
        WRITER_QUEUE,
        qq.cancel.clone(),
        TMsg::Text,
        None,
    );
    slot.activate(tx).await;
    let incoming = futures_util::stream::iter([Ok(first)])
        .chain(stream.filter_map(|m| async move {
            match m {
                Ok(TMsg::Text(t)) => Some(Ok(t)),
                Ok(TMsg::Close(_)) => Some(Err(Ended::Closed)),
                Ok(_) => None,
                Err(e) => Some(Err(Ended::Transport(e.into()))),
            }
        }))
        .boxed();
    qq.run_conn(slot, Role::Universal, incoming).await;
}
