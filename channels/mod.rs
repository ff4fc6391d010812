//! Channel adapters: each folder is one channel implementing [`contract::Channel`]:
//! it turns its transport into [`crate::turn::Turn`]s for
//! [`ctx::ChannelCtx::submit`], delivers the replies, and offers an outbound door
//! for proactive messages.
//!
//! - [`cli`] — the terminal: interactive chat and one-shot `-m`.
//! - [`qq`] — QQ through OneBot v11 (reverse and forward WebSocket).
//! - [`voice`] — speakers: a Wyoming handle service and a native satellite WebSocket.
//! - [`home_assistant`] — Home Assistant, a channel of its own: its WebSocket API (rooms,
//!   satellites, announcing, the home tools' way into the house), its watches, its door,
//!   and its conversation agent's endpoint (a route it provides to the HTTP server).
//! - [`spoken`] — the kit voice and Home Assistant share: messages held for a front end's
//!   next turn, a spoken answer's frames, reply shaping for speech, who speaks.
//! - [`ports`] — what channels provide one another (Home Assistant's satellites),
//!   resolved once all have started; [`contract`] — what a channel is and provides;
//!   [`ctx`] — what a channel may use of the kernel (`ChannelCtx`).
//! - [`text`] — reply shaping shared by channels (markdown flattening, splitting);
//!   [`auth`] — token checks; [`login_limit`] — how often an address may guess a token;
//!   [`net`] — binding, graceful HTTP serving and the WebSocket writer task, shared by
//!   their servers; [`start`] — which channels the configuration enables, and starting
//!   them (the gateway's job). A channel's actor runs on a thread of its own
//!   started through the kernel's [`crate::actor::Lifecycle`] (`ChannelCtx::lifecycle`).

pub mod auth;
pub mod cli;
pub mod contract;
pub mod ctx;
pub mod home_assistant;
pub mod login_limit;
pub mod net;
pub mod ports;
pub mod qq;
pub mod spoken;
pub mod start;
pub mod text;
pub mod voice;

pub use start::{enabled, start_enabled};
