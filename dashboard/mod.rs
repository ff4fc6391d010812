//! The household dashboard: a small web server in the gateway (`[http] listen`,
//! `HOMEBOT_HTTP_LISTEN`) with server-rendered pages and the JSON API behind them. It
//! reads from disk (`action.json`, the session folders, the audit files) and from cheap
//! handles (the reminders actor, the channels' [`crate::presence`]), never from the mode
//! manager's lock, so looking at it does not slow a turn — but for the learned examples'
//! candidates, which only the mode manager holds (asked with a deadline, see
//! [`examples`]). What the owner can do from it (exit the mode, cancel a reminder, forget
//! an example, keep an answer as one) goes through the kernel's slash commands as an
//! owner turn, like `homebot reminders cancel` does. docs/dashboard.md describes it.
//!
//! - [`state`] — [`Dash`], what every handler shares; [`routes`] — the routes and the
//!   access rules around them; [`server`] — binding, the connection cap, graceful serving
//!   ([`start`]);
//! - [`auth`] — who may read and act: the token, its cookie, the security headers;
//!   [`logins`] — the live logins the cookie names (how often an address may try a token:
//!   `channels::login_limit`, one table for every token the server checks);
//! - [`api`] — `GET /api/status`, `/api/sessions`, `/api/sessions/{id}`, `/api/live`;
//!   [`live_events`] — `/api/live/events`, the live conversation pushed (server-sent events);
//! - [`data`] — reading sessions, conversations and audit records, bounded;
//! - [`pages`] — the HTML pages; [`html`] — their frame, escaping, refusals;
//!   [`chart`] — the per-turn token chart (SVG); [`money`] — what the calls cost;
//!   [`text`] — the pages' words in Chinese and English;
//! - [`examples`] — `/examples` and `GET /api/examples`: the examples the modes learned,
//!   and the answers the owner may keep as one;
//! - [`actions`] — exit the mode, cancel a reminder, forget or keep an example;
//! - beside them, the routes channels provide (`channels::contract::Provides::routes`):
//!   `POST /api/ha/conversation`, Home Assistant's conversation agent, is the Home
//!   Assistant channel's (its own token, its own turns);
//! - [`metrics`] — `GET /metrics` (Prometheus text: [`crate::metrics`] and the channels' links).
//!
//! Layering: the dashboard uses the kernel like a channel does; nothing in `src/` uses it.

pub mod actions;
pub mod api;
pub mod auth;
pub mod chart;
pub mod data;
pub mod examples;
pub mod html;
pub mod live_events;
pub mod logins;
pub mod metrics;
pub mod money;
pub mod pages;
pub mod routes;
pub mod server;
pub mod state;
pub mod text;

pub use routes::{app, router};
pub use server::start;
pub use state::{Dash, LABEL};
