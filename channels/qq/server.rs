//! The reverse WebSocket server: the implementation connects to homebot.
//!
//! The handshake is checked before the upgrade: `X-Self-ID` (digits), `X-Client-Role`,
//! the access token (header or `?access_token=`, compared in constant time, never
//! logged). Then the account's slot is **reserved in the handler**, atomically with the
//! duplicate check, so a second connection of the same account is refused with 403 even
//! while the first is still upgrading. The reservation moves into the upgrade callback:
//! if the upgrade never completes (the peer hangs up halfway), axum drops the callback
//! and with it the reservation, so a dead handshake never holds the account.

use super::actor::NotReserved;
use super::conn::{Ended, Slot, WRITER_QUEUE};
use super::conns::Role;
use super::handle::Qq;
use crate::channels::auth::{presented_token, same_secret};
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use std::collections::HashMap;
use tracing::{debug, info, warn};

/// Largest frame accepted from the implementation.
const MAX_FRAME: usize = 4 << 20;
/// QQ numbers have at most 20 digits; anything longer is not a self id.
const MAX_SELF_ID_DIGITS: usize = 20;

pub(super) async fn ws_handler(
    State(ch): State<Qq>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    let Some(self_id) = headers
        .get("x-self-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|s| {
            !s.is_empty() && s.len() <= MAX_SELF_ID_DIGITS && s.chars().all(|c| c.is_ascii_digit())
        })
        .map(str::to_string)
    else {
        warn!("qq: connection without a valid X-Self-ID refused");
        return (StatusCode::UNAUTHORIZED, "X-Self-ID header required").into_response();
    };
    let Some(role) = Role::parse(headers.get("x-client-role").and_then(|v| v.to_str().ok())) else {
        return (
            StatusCode::BAD_REQUEST,
            "X-Client-Role must be Universal, API or Event",
        )
            .into_response();
    };
    if let Some(expected) = &ch.cfg.access_token {
        match presented_token(&headers, &query, "access_token") {
            None => {
                warn!(self_id = %self_id, "qq: connection without an access token refused");
                return (StatusCode::UNAUTHORIZED, "access token required").into_response();
            }
            Some(t) if !same_secret(&t, expected.expose()) => {
                warn!(self_id = %self_id, "qq: connection with a wrong access token refused");
                return (StatusCode::FORBIDDEN, "wrong access token").into_response();
            }
            Some(_) => {}
        }
    }
    let slot = match ch.reserve(&self_id, role).await {
        Ok(slot) => slot,
        Err(e @ NotReserved::Duplicate(_)) => {
            warn!(self_id = %self_id, "qq: duplicate connection refused");
            return (StatusCode::FORBIDDEN, e.to_string()).into_response();
        }
        Err(e) => {
            warn!(self_id = %self_id, error = %e, "qq: connection refused");
            return (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response();
        }
    };
    let shown = self_id.clone();
    ws.max_message_size(MAX_FRAME)
        .on_failed_upgrade(move |e| {
            // the callback below, and the slot in it, are dropped right after this
            debug!(self_id = %shown, error = %e, "qq: WebSocket upgrade failed; account released");
        })
        .on_upgrade(move |socket| async move { serve_socket(ch, socket, slot, role).await })
        .into_response()
}

async fn serve_socket(qq: Qq, socket: WebSocket, slot: Slot, role: Role) {
    let (sink, stream) = socket.split();
    let tx = crate::channels::net::spawn_ws_writer(
        qq.ctx.tasks(),
        sink,
        WRITER_QUEUE,
        qq.cancel.clone(),
        WsMessage::Text,
        None,
    );
    slot.activate(tx).await;
    info!(self_id = %slot.self_id, role = ?role, "qq: implementation connected");
    let incoming = stream
        .filter_map(|m| async move {
            match m {
                Ok(WsMessage::Text(t)) => Some(Ok(t)),
                Ok(WsMessage::Close(_)) => Some(Err(Ended::Closed)),
                Ok(_) => None,
                Err(e) => Some(Err(Ended::Transport(e.into()))),
            }
        })
        .boxed();
    qq.run_conn(slot, role, incoming).await;
}
