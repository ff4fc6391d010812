//! Acting on the home through Home Assistant: the state and rules behind the tools
//! ([`access`]), the tools `home_state` and `home_control` ([`tools`], [`state`],
//! [`control`]; offered only while `[home_assistant]` is configured), and the fast path
//! ([`fast_path`]: a plain sentence goes to Home Assistant's own agent first).

pub mod access;
pub mod control;
pub mod fast_path;
pub mod state;
pub mod tools;

pub use access::*;
pub use tools::{HomeControl, HomeState};
