//! `POST /api/ha/conversation`: Home Assistant's conversation agent endpoint, which the
//! `homebot` custom integration calls for each turn (docs/home-assistant.md). The Home
//! Assistant channel provides it ([`routes`]) to the one HTTP server (`[http] listen`),
//! which serves it beside the dashboard.
//!
//! - **Token**: its own, `Authorization: Bearer <agent token>` (`[http]
//!   ha_agent_token_env`, default `HOMEBOT_HA_AGENT_TOKEN`), checked in constant time
//!   and never logged. It opens this endpoint only; the owner's token does not open it
//!   (the dashboard's rules do not apply here). Wrong tokens count against the address
//!   with wrong logins: the HTTP server hands its routes its one
//!   [`crate::channels::login_limit::SharedLimit`].
//! - **Body**: JSON ([`AgentAsk`]), at most [`MAX_BODY`] bytes (the dashboard's 4 KiB
//!   is for forms), its words and ids bounded by [`AgentAsk::checked`].
//! - **`GET /api/ha/info`** (the same token): `{"name","version","household"}` — what the
//!   integration's config flow checks and its entity polls every 60 s while homebot is
//!   down, and shows as the device's version.
//! - **Answer**: `200` with newline-delimited JSON, streamed as the model writes:
//!   `{"type":"partial","session_id","text"}` frames, then one
//!   `{"type":"reply","session_id","text","dialogue_state","error","rest"?,"cancelled"?}`.
//!   While the turn has nothing to say (the model thinks, a tool runs), a
//!   `{"type":"waiting"}` frame every [`WAITING_EVERY`]: the integration takes 10 s of
//!   silence for a hung homebot and gives up.
//!   No short request deadline: the turn's own limits (`agent.turn_timeout_secs`, the
//!   reply cap) bound it. When the client goes away the turn is cancelled.

use super::agent::{Agent, AgentAsk};
use crate::channels::auth::same_secret;
use crate::channels::login_limit::{SharedLimit, Verdict};
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use std::net::{IpAddr, SocketAddr};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// The endpoint's path.
pub const PATH: &str = "/api/ha/conversation";
/// The check's path.
pub const INFO_PATH: &str = "/api/ha/info";
/// Largest request body: the words, a few ids and names, an automation's note and a few
/// chat-log entries (each bounded by [`AgentAsk::checked`]).
pub const MAX_BODY: usize = 64 * 1024;
/// Frames buffered for a slow reader before the turn's sender waits.
const FRAMES: usize = 64;
/// Longest token looked at.
const MAX_TOKEN: usize = 512;
/// How long the answer may be silent before a `waiting` frame says the turn still runs
/// (well inside the 10 s of silence the integration allows).
pub const WAITING_EVERY: std::time::Duration = std::time::Duration::from_secs(4);

/// The endpoint, its token check in front and its own body cap, for the HTTP server
/// (which layers in its [`SharedLimit`] as an extension).
pub fn routes(agent: Agent) -> Router {
    Router::new()
        .route(
            PATH,
            // its own body cap (the layer nearest the handler wins over the server's)
            post(conversation).layer(axum::extract::DefaultBodyLimit::max(MAX_BODY)),
        )
        .route(INFO_PATH, get(info))
        .route_layer(middleware::from_fn_with_state(agent.clone(), guard))
        .with_state(agent)
}

/// Only the agent token passes.
async fn guard(
    State(agent): State<Agent>,
    limit: Option<Extension<SharedLimit>>,
    req: Request,
    next: Next,
) -> Response {
    let limit = limit.map(|Extension(l)| l).unwrap_or_default();
    match refusal(&agent, &limit, &req) {
        None => next.run(req).await,
        Some(refused) => refused,
    }
}

/// The refusal to send when the request does not carry the agent token; `None`: it does.
fn refusal(agent: &Agent, limit: &SharedLimit, req: &Request) -> Option<Response> {
    let token = agent.token.expose();
    let addr = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0.ip());
    let now = std::time::Instant::now();
    if let Verdict::Refused { retry_after, first } = limit.lock().check(addr, now) {
        let secs = retry_after.as_secs().max(1);
        if first {
            warn!(addr = %addr, retry_after_secs = secs, "Home Assistant agent: too many wrong tokens from this address; refused for a while");
        }
        let mut r = plain(StatusCode::TOO_MANY_REQUESTS, "too many wrong tokens\n");
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        return Some(r);
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| t.len() <= MAX_TOKEN);
    match given {
        Some(t) if same_secret(t, token) => None,
        _ => {
            limit.lock().wrong(addr, now);
            Some(plain(
                StatusCode::UNAUTHORIZED,
                "wrong or missing agent token\n",
            ))
        }
    }
}

/// Who answers here (behind [`guard`]).
async fn info(State(agent): State<Agent>) -> Response {
    let Some(ctx) = agent.ctx() else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let household = ctx.config().household.name.trim().to_string();
    let body = Info {
        name: "homebot",
        version: env!("CARGO_PKG_VERSION"),
        household: (!household.is_empty()).then_some(household),
    };
    axum::Json(body).into_response()
}

/// The answer of `GET /api/ha/info`.
#[derive(serde::Serialize)]
struct Info {
    name: &'static str,
    version: &'static str,
    household: Option<String>,
}

/// The handler (behind [`guard`]).
async fn conversation(State(agent): State<Agent>, body: Bytes) -> Response {
    let Some(ctx) = agent.ctx() else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let ask = match serde_json::from_slice::<AgentAsk>(&body) {
        Ok(a) => a,
        Err(e) => return plain(StatusCode::BAD_REQUEST, &format!("bad request: {e}\n")),
    };
    let ask = match ask.checked() {
        Ok(a) => a,
        Err(e) => return plain(StatusCode::BAD_REQUEST, &format!("bad request: {e}\n")),
    };
    let cancel = CancellationToken::new();
    let (tx, rx) = mpsc::channel::<String>(FRAMES);
    let turn_cancel = cancel.clone();
    // counted with the turns: a graceful shutdown waits for it
    let c = ctx.clone();
    ctx.tasks().spawn_in(crate::actor::Group::Turn, async move {
        agent.turn(&c, ask, turn_cancel, tx).await
    });
    drop(ctx);
    // the body owns the guard: when the client goes away, the turn is cancelled
    let guard = cancel.drop_guard();
    let stream = futures_util::stream::unfold((rx, guard), |(mut rx, guard)| async move {
        let mut line = match tokio::time::timeout(WAITING_EVERY, rx.recv()).await {
            Ok(line) => line?,
            Err(_) => r#"{"type":"waiting"}"#.to_string(),
        };
        line.push('\n');
        Some((
            Ok::<_, std::convert::Infallible>(Bytes::from(line)),
            (rx, guard),
        ))
    });
    let mut r = Response::new(Body::from_stream(stream));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    r
}

fn plain(status: StatusCode, text: &str) -> Response {
    (status, text.to_string()).into_response()
}
