//! Home Assistant, as a client of its WebSocket API: homebot knows the house's rooms and
//! satellites, says things on a satellite unasked (a reminder rings in the kitchen), and
//! makes a satellite listen again after a question.
//!
//! Home Assistant is a channel of its own (`channel`: [`HomeAssistantChannel`]): it
//! provides its door, the house, its satellites (`satellites`: the port the voice channel
//! reaches them through) and its conversation agent's endpoint (`agent`: the turn,
//! `agent_http`: the route and its token).
//!
//! Layout: `channel` — the channel and its door; `handle` — [`HomeAssistant`], the handle, which starts the actor; `actor` —
//! the `HaActor` that owns what homebot knows of Home Assistant, on its own thread;
//! `state` — what it knows (`HaState`) and its synchronous transitions;
//! `error` — [`HaError`], [`NotConfigured`], [`TlsSetupError`]; `status` — [`Status`], [`Located`]; `watch`
//! — fired watches delivered through the channels' doors; `connection` — connecting, auth and reconnects;
//! `tls` — https: the certificates trusted, and a refused one in words;
//! `session` — one session's subscriptions, commands and keep-alive; `doctor` — the
//! one-shot probe of `homebot doctor`; `protocol` — the frames HA sends; `frames` — the
//! commands homebot sends, typed, in their id envelope; `answers` — each command's
//! `result`, typed, and decoded where its call resolves; `lenient` — a peer's JSON read
//! leniently (HA adds fields); `rooms` — areas,
//! satellites and media players from HA's registries; `satellites` — what homebot does
//! with HA's satellites: announcing (`assist_satellite.announce`, then `tts.speak`),
//! listening again after a question (`assist_satellite.start_conversation`), and the
//! `Satellites` port it provides.
//!
//! Everything else talks to the actor through [`HomeAssistant`], a cloneable handle; every
//! call is bounded by `home_assistant.timeout_secs`, so Home Assistant being slow or gone
//! never holds a turn longer than that. The token is read from the environment variable
//! `home_assistant.token_env` at start, sent only in the `auth` message, and never logged,
//! printed or written.

mod actor;
pub mod agent;
pub mod agent_http;
mod answers;
mod channel;
mod connection;
mod doctor;
mod error;
mod frames;
mod handle;
mod home;
mod lenient;
pub mod protocol;
pub mod rooms;
mod satellites;
mod session;
mod state;
mod status;
mod tls;
mod turn;
pub mod watch;

pub use channel::{say, HomeAssistantChannel};
pub use connection::AUTH_RETRY;
pub use doctor::doctor;
pub use error::{HaError, NotConfigured, TlsSetupError};
pub(crate) use handle::settings;
pub use handle::HomeAssistant;
pub use status::{Located, Status, CHANNEL};
pub use turn::{facts, turn, HELD};
