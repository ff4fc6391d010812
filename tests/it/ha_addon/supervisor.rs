//! The Supervisor stand-in of the add-on test: on 127.0.0.1:0, it records `POST
//! /discovery`, answers `GET /addons/self/info`, and proxies `/core/websocket` to the real
//! HA as the Supervisor's proxy does; every call must carry the add-on's token.

use crate::real_ha::{RealHa, TOKEN};
use axum::extract::ws::{Message as AxMsg, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tokio_tungstenite::tungstenite::Message as TMsg;

/// The add-on's `SUPERVISOR_TOKEN` in the test.
pub const SUPERVISOR_TOKEN: &str = "supervisor-token-of-the-addon-test-0001";

/// What the stand-in saw.
#[derive(Default)]
pub struct Seen {
    /// The bodies of `POST /discovery`.
    pub discoveries: Vec<Value>,
    /// WebSocket logins with the add-on's token, passed on to HA.
    pub ws_logins: usize,
    /// Requests without the add-on's token.
    pub refused: usize,
}

#[derive(Clone)]
struct Supervisor {
    seen: Arc<Mutex<Seen>>,
    /// HA's own WebSocket (`ws://127.0.0.1:<port>/api/websocket`).
    ha_ws: String,
}

fn authorized(s: &Supervisor, h: &HeaderMap) -> bool {
    let ok = h.get("authorization").and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {SUPERVISOR_TOKEN}"));
    if !ok {
        s.seen.lock().unwrap().refused += 1;
    }
    ok
}

fn refused() -> (StatusCode, Json<Value>) {
    (
        StatusCode::UNAUTHORIZED,
        Json(json!({"result": "error", "message": "Invalid token"})),
    )
}

async fn self_info(State(s): State<Supervisor>, h: HeaderMap) -> (StatusCode, Json<Value>) {
    if !authorized(&s, &h) {
        return refused();
    }
    // the Supervisor names the container (`local-homebot` on a real one); loopback here
    (
        StatusCode::OK,
        Json(
            json!({"result": "ok", "data": {"name": "homebot", "slug": "local_homebot", "hostname": "127.0.0.1"}}),
        ),
    )
}

async fn discovery(
    State(s): State<Supervisor>,
    h: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&s, &h) {
        return refused();
    }
    let mut seen = s.seen.lock().unwrap();
    seen.discoveries.push(body);
    let uuid = format!("discovery-{}", seen.discoveries.len());
    (
        StatusCode::OK,
        Json(json!({"result": "ok", "data": {"uuid": uuid}})),
    )
}

async fn core_ws(State(s): State<Supervisor>, ws: WebSocketUpgrade) -> axum::response::Response {
    ws.on_upgrade(move |client| proxy(client, s))
}

/// As the Supervisor's proxy: HA's `auth_required` to the add-on, the add-on's login
/// checked against its token, HA's own token to HA, then every frame both ways.
async fn proxy(mut client: WebSocket, s: Supervisor) {
    let Ok((mut ha, _)) = tokio_tungstenite::connect_async(s.ha_ws.as_str()).await else {
        return;
    };
    let Some(Ok(TMsg::Text(required))) = ha.next().await else {
        return;
    };
    if client.send(AxMsg::Text(required)).await.is_err() {
        return;
    }
    let Some(Ok(AxMsg::Text(login))) = client.recv().await else {
        return;
    };
    let login: Value = serde_json::from_str(&login).unwrap_or_default();
    if login["type"] != "auth" || login["access_token"] != SUPERVISOR_TOKEN {
        let _ = client
            .send(AxMsg::Text(
                json!({"type": "auth_invalid", "message": "Invalid access"}).to_string(),
            ))
            .await;
        return;
    }
    s.seen.lock().unwrap().ws_logins += 1;
    let auth = json!({"type": "auth", "access_token": TOKEN}).to_string();
    if ha.send(TMsg::Text(auth)).await.is_err() {
        return;
    }
    let (mut ha_tx, mut ha_rx) = ha.split();
    let (mut cl_tx, mut cl_rx) = client.split();
    let up = async {
        while let Some(Ok(m)) = cl_rx.next().await {
            let m = match m {
                AxMsg::Text(t) => TMsg::Text(t),
                AxMsg::Binary(b) => TMsg::Binary(b),
                AxMsg::Close(_) => break,
                _ => continue,
            };
            if ha_tx.send(m).await.is_err() {
                break;
            }
        }
    };
    let down = async {
        while let Some(Ok(m)) = ha_rx.next().await {
            let m = match m {
                TMsg::Text(t) => AxMsg::Text(t),
                TMsg::Binary(b) => AxMsg::Binary(b),
                TMsg::Close(_) => break,
                _ => continue,
            };
            if cl_tx.send(m).await.is_err() {
                break;
            }
        }
    };
    tokio::select! { _ = up => {}, _ = down => {} }
}

/// Start the stand-in on 127.0.0.1:0; its base URL.
pub async fn supervisor(ha: Option<&RealHa>) -> (String, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let state = Supervisor {
        seen: seen.clone(),
        ha_ws: ha
            .map(|h| format!("ws://127.0.0.1:{}/api/websocket", h.port))
            .unwrap_or_default(),
    };
    let app = Router::new()
        .route("/addons/self/info", get(self_info))
        .route("/discovery", post(discovery))
        .route("/core/websocket", get(core_ws))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), seen)
}
