//! Channel adapters: each folder is one channel implementing [`contract::Channel`]:
//! it turns its transport into [`crate::turn::Turn`]s for
//! [`crate::kernel::Kernel::submit`], delivers the replies, and offers an outbound door
//! for proactive messages.
//!
//! - [`cli`] — the terminal: interactive chat and one-shot `-m`.
//! - [`qq`] — QQ through OneBot v11 (reverse and forward WebSocket).
//! - [`voice`] — speakers: a Wyoming handle service and a native satellite WebSocket.
//! - [`home_assistant`] — Home Assistant, a channel of its own: its WebSocket API (rooms,
//!   satellites, announcing, the home tools' way into the house), its watches, its door;
//!   the voice channel speaks through its client.
//! - [`text`] — reply shaping shared by channels (markdown flattening, splitting);
//!   [`auth`] — token checks; [`net`] — binding, graceful HTTP serving and the WebSocket
//!   writer task, shared by their servers; [`start`] — which channels the configuration
//!   enables, and starting them (the gateway's job). A channel's actor runs on a thread of its own
//!   started through the kernel's [`crate::actor::Lifecycle`] (`Kernel::lifecycle`).

pub mod auth;
pub mod cli;
pub mod contract;
pub mod home_assistant;
pub mod net;
pub mod qq;
pub mod start;
pub mod text;
pub mod voice;

pub use start::{enabled, start_enabled};
