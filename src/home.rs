//! The door through which Home Assistant reaches the kernel (the kernel never imports
//! `channels/`): a running channel that holds Home Assistant provides it when it starts
//! (`channels::contract::Provides::home`), registered in [`crate::outbound::Doors`]. The home tools and the fast path
//! (`tools::home`) use it; `channels/home_assistant` implements it.

use async_trait::async_trait;
use serde_json::Value;

/// The `purpose` of a fast-path turn's audit line (`homebot stats` counts them apart).
pub const FAST_PATH: &str = "fast_path";
/// Home Assistant's built-in agent: the fast path always names this one, so a sentence
/// that came from Home Assistant's pipeline (homebot being its conversation agent) never
/// goes back to homebot.
pub const BUILTIN_AGENT: &str = "conversation.home_assistant";

/// One entity exposed to Assist, with its live state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeEntity {
    pub entity_id: String,
    /// Its friendly name (cleaned: one line, no brackets, bounded).
    pub name: String,
    /// Its room (area name), when it has one.
    pub area: Option<String>,
    pub state: String,
    pub unit: Option<String>,
    pub device_class: Option<String>,
}

/// What Home Assistant's own agent made of a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Converse {
    /// `action_done` / `query_answer`: its speech is the reply.
    Handled {
        speech: String,
        response_type: String,
    },
    /// Anything else (`error`, `no_intent_match`, a timeout, not asked at all): why.
    NotHandled(String),
}

/// Why Home Assistant did not do what was asked. The text is Home Assistant's own (or
/// the connection's), for the model and the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HomeError {
    /// Not connected, no answer in time, the connection lost mid-call, too busy.
    #[error("{0}")]
    Unreachable(String),
    /// Home Assistant answered with a failure (unknown entity, service error, …).
    #[error("{0}")]
    Refused(String),
}

/// Home Assistant, as the kernel sees it.
#[async_trait]
pub trait Home: Send + Sync {
    /// The entities exposed to Assist (`conversation: true`), with their live states.
    async fn exposed(&self) -> Result<Vec<HomeEntity>, HomeError>;
    /// The services Home Assistant has in `domain` (`None`: no such domain).
    async fn services(&self, domain: &str) -> Result<Option<Vec<String>>, HomeError>;
    /// `call_service` on one entity.
    async fn call(
        &self,
        domain: &str,
        service: &str,
        entity_id: &str,
        data: Value,
    ) -> Result<(), HomeError>;
    /// The sentence to Home Assistant's built-in agent (`conversation.home_assistant`),
    /// within `within`; `room` is where the speaker is.
    async fn converse(
        &self,
        text: &str,
        room: Option<&str>,
        within: std::time::Duration,
    ) -> Converse;
}
