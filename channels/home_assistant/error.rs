//! Why a Home Assistant call did not succeed, and why the channel cannot connect at all.

use super::protocol;
use std::time::Duration;

/// Why a Home Assistant call did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HaError {
    #[error("Home Assistant is {0}")]
    NotConnected(String),
    #[error("Home Assistant did not answer within {} s", .0.as_secs())]
    Timeout(Duration),
    #[error("Home Assistant refused: {0}")]
    Refused(protocol::HaFailure),
    /// The answer is not what the command returns (see `answers`).
    #[error("Home Assistant's answer to {command} was malformed: {why}")]
    Malformed { command: &'static str, why: String },
    #[error("the connection to Home Assistant was lost during the call")]
    Disconnected,
    #[error("too many Home Assistant calls are waiting")]
    Busy,
    #[error("{0:?} is neither an area nor a satellite of Home Assistant")]
    UnknownTarget(String),
}

/// Why the channel cannot connect at all: the configuration lacks what a connection needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotConfigured {
    #[error("no url ([home_assistant] url or HOMEBOT_HA_URL)")]
    NoUrl,
    /// The environment variable that should hold the token.
    #[error("no access token: set {0} to a long-lived access token (Home Assistant → your profile → Security)")]
    NoToken(String),
    /// The https settings could not be built (the CA file became unreadable, …).
    #[error("https: {0}")]
    Tls(String),
}
