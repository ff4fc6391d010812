//! The household dashboard: a small web server in the gateway (`[http] listen`,
//! `HOMEBOT_HTTP_LISTEN`) with server-rendered pages and the JSON API behind them. It
//! reads from disk (`action.json`, the session folders, the audit files) and from cheap
//! handles (the reminders actor, the channels' [`crate::presence`]), never from the mode
//! manager's lock, so looking at it does not slow a turn. The two things the owner can
//! do from it (exit the mode, cancel a reminder) go through the kernel's slash commands
//! as an owner turn, like `homebot reminders cancel` does. docs/dashboard.md describes it.
//!
//! - [`server`] — binding, the connection cap, graceful serving;
//! - [`auth`] — who may read and act: the token, its cookie, the security headers;
//!   [`login_limit`] — how often an address may try a token; [`logins`] — the live logins
//!   the cookie names;
//! - [`api`] — `GET /api/status`, `/api/sessions`, `/api/sessions/{id}`, `/api/live`;
//!   [`live_events`] — `/api/live/events`, the live conversation pushed (server-sent events);
//! - [`data`] — reading sessions, conversations and audit records, bounded;
//! - [`pages`] — the HTML pages; [`html`] — their frame, escaping, refusals;
//!   [`chart`] — the per-turn token chart (SVG); [`money`] — what the calls cost;
//!   [`text`] — the pages' words in Chinese and English;
//! - [`actions`] — exit the mode, cancel a reminder;
//! - [`ha_agent`] — `POST /api/ha/conversation`, Home Assistant's conversation agent
//!   (its own token; the turns are the voice channel's);
//! - [`metrics`] — `GET /metrics` (Prometheus text: [`crate::metrics`] and the channels' links).
//!
//! Layering: the dashboard uses the kernel like a channel does; nothing in `src/` uses it.

pub mod actions;
pub mod api;
pub mod auth;
pub mod chart;
pub mod data;
pub mod ha_agent;
pub mod html;
pub mod live_events;
pub mod login_limit;
pub mod logins;
pub mod metrics;
pub mod money;
pub mod pages;
pub mod server;
pub mod text;

use crate::config::{Language, Secret};
use crate::kernel::{Kernel, KernelInner};
use axum::routing::{get, post};
use axum::Router;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

/// The label of its listener (logs, the connection cap).
pub const LABEL: &str = "dashboard";

/// What every handler shares. Holds the kernel weakly: a request that arrives while the
/// gateway is going away is answered 503, and the dashboard never keeps it alive.
#[derive(Clone)]
pub struct Dash {
    kernel: Weak<KernelInner>,
    inner: Arc<DashInner>,
}

struct DashInner {
    token: Option<Secret>,
    /// Home Assistant's agent token: opens [`ha_agent::PATH`] only.
    ha_agent_token: Option<Secret>,
    /// Bound beyond loopback: every request needs the token.
    exposed: bool,
    started: Instant,
    lang: Language,
    /// Wrong tokens at `/login` per address (a few a minute).
    login_limit: Mutex<login_limit::LoginLimit>,
    /// The logins' ids (the cookie) → their expiry; in memory, so a restart ends them.
    logins: Mutex<logins::Logins>,
    /// The live streams open, per address.
    streams: Arc<live_events::Streams>,
}

impl Dash {
    pub fn new(kernel: &Kernel) -> Self {
        let http = &kernel.config().http;
        Self {
            kernel: kernel.downgrade(),
            inner: Arc::new(DashInner {
                token: http.token.clone(),
                ha_agent_token: http.ha_agent_token.clone(),
                exposed: http.exposed(),
                started: Instant::now(),
                lang: kernel.config().household.language,
                login_limit: Mutex::default(),
                logins: Mutex::default(),
                streams: Arc::default(),
            }),
        }
    }

    /// The kernel, while the gateway runs.
    pub fn kernel(&self) -> Option<Kernel> {
        Kernel::upgrade(&self.kernel)
    }

    pub fn lang(&self) -> Language {
        self.inner.lang
    }

    pub fn uptime_secs(&self) -> u64 {
        self.inner.started.elapsed().as_secs()
    }

    /// The wrong-token table (logins and the agent's endpoint).
    fn login_limit(&self) -> std::sync::MutexGuard<'_, login_limit::LoginLimit> {
        // the table is consistent after every call: a panic elsewhere leaves it usable
        self.inner
            .login_limit
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The dashboard's routes, its state applied. Composable: merge more routes into it
/// (the `/metrics` slot, see [`app`]); [`app`] then puts the access rules around all.
pub fn router(dash: Dash) -> Router {
    Router::new()
        .route("/", get(pages::index))
        .route("/sessions/:id", get(pages::session))
        .route("/login", get(pages::login_form).post(auth::login))
        .route("/logout", post(auth::logout))
        .route("/action/mode/exit", post(actions::exit_mode))
        .route(
            "/action/reminders/:id/cancel",
            post(actions::cancel_reminder),
        )
        .route("/api/status", get(api::status))
        .route("/api/sessions", get(api::sessions))
        .route("/api/sessions/:id", get(api::session))
        .route("/api/live", get(api::live))
        .route("/api/live/events", get(live_events::events))
        .route("/api/mode/exit", post(actions::exit_mode))
        .route("/api/reminders/:id/cancel", post(actions::cancel_reminder))
        .route(
            ha_agent::PATH,
            // its own body cap (the layer nearest the handler wins over the dashboard's)
            post(ha_agent::conversation)
                .layer(axum::extract::DefaultBodyLimit::max(ha_agent::MAX_BODY)),
        )
        .with_state(dash)
}

/// Everything served, under the access rules ([`auth::guard`]): the dashboard's routes
/// and the `/metrics` slot (merged here, so it gets the same token rules).
pub fn app(dash: Dash) -> Router {
    let routes = router(dash.clone()).merge(
        Router::new()
            .route("/metrics", get(metrics::metrics))
            .with_state(dash.clone()),
    );
    auth::wrap(routes, dash)
}

/// Start the dashboard when `[http] listen` is set, as a kernel service that stops with
/// the others; logs `dashboard listening addr=…` (tests find `:0` ports there). Refuses
/// to listen beyond loopback without a token (the configuration refuses it too).
pub async fn start(
    kernel: &Kernel,
) -> Result<Option<std::net::SocketAddr>, crate::channels::contract::StartError> {
    server::start(kernel).await
}
