//! Home Assistant's own conversation agent: a turn asked by the `homebot` custom
//! integration (`custom_components/homebot`) through the agent endpoint this channel
//! provides to the HTTP server ([`super::agent_http`]). HA hands it the words, its `conversation_id`, the device
//! that heard them, its user, a language and an automation's `extra_system_prompt`.
//!
//! - **Chat**: HA's `conversation_id` (a satellite keeps one across wakes until 5 minutes
//!   idle or a `start_conversation`; typed Assist has its own). What must outlive it is
//!   kept under the satellite (the turn's place). An id that is no safe file name is replaced by a
//!   fresh one, which the reply frame carries back.
//! - **Speaker**: the member whose `[[members]] ha_user_ids` lists HA's user (typed
//!   Assist carries its user; a satellite's pipeline carries none), else the member the
//!   household opted in to for that satellite (`[home_assistant] speakers`), else a guest.
//! - **Room and front**: from the device, through the Home Assistant client's
//!   registries; the turn's reminders ring on that satellite (`ha:<entity id>`). A turn
//!   with a device is spoken; without one (typed in the HA app) it is text.
//! - **Answer**: always streamed from the model (whatever `provider.stream` says), as the
//!   native satellites get it (the spoken kit's `deliver`): `partial` frames of whole sentences,
//!   then the `reply` frame with the whole text, `dialogue_state` (`continue` when the
//!   reply waits for an answer: HA then keeps the microphone open) and `rest`.
//! - **Cancel**: `cancel` (the HTTP request gone: HA gave up or stopped) cancels the turn.
//!
//! The turn is this channel's (`turn`: its chat, facts and door target), delivered
//! through the spoken kit as a satellite's is — the partials, and the messages held for
//! that satellite said first.

use super::HomeAssistant;
use crate::channels::ctx::{ChannelCtx, WeakChannelCtx};
use crate::channels::spoken::{or_satellite_member, Spoken, GUEST, HA_PREFIX, WYOMING_TARGET};
use crate::config::Secret;
use crate::turn::Partials;
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The longest utterance taken (characters).
pub const MAX_TEXT_CHARS: usize = 2000;
/// The longest id taken from HA (conversation, device, user).
pub const MAX_ID_CHARS: usize = 128;

/// What the integration sends for one turn. Every field but `text` may be missing.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AgentAsk {
    pub text: String,
    #[serde(default)]
    pub conversation_id: Option<String>,
    #[serde(default)]
    pub device_id: Option<String>,
    #[serde(default)]
    pub language: Option<String>,
    /// HA's user (`context.user_id`).
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub extra_system_prompt: Option<String>,
}

/// Why an ask is refused before it becomes a turn.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AskError {
    #[error("text is empty")]
    Empty,
    #[error("text is longer than {MAX_TEXT_CHARS} characters")]
    TooLong,
}

impl AgentAsk {
    /// Check the words; ids beyond bounds are dropped (treated as not sent).
    pub fn checked(mut self) -> Result<Self, AskError> {
        let text = self.text.trim();
        if text.is_empty() {
            return Err(AskError::Empty);
        }
        if text.chars().count() > MAX_TEXT_CHARS {
            return Err(AskError::TooLong);
        }
        self.text = text.to_string();
        for id in [
            &mut self.conversation_id,
            &mut self.device_id,
            &mut self.user_id,
            &mut self.language,
        ] {
            *id = id
                .take()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty() && s.chars().count() <= MAX_ID_CHARS);
        }
        Ok(self)
    }
}

/// Home Assistant's agent: what its turns need (cheap to clone; the HTTP route holds it).
#[derive(Clone)]
pub struct Agent {
    /// Weakly: a request that arrives while the gateway goes away is answered 503, and
    /// the route never keeps the kernel alive.
    ctx: WeakChannelCtx,
    spoken: Spoken,
    /// The client, when `[home_assistant]` is configured: the device's satellite and room.
    ha: Option<HomeAssistant>,
    /// The agent token (`[http] ha_agent_token_env`).
    pub(super) token: Secret,
}

impl Agent {
    pub fn new(ctx: &ChannelCtx, spoken: Spoken, ha: Option<HomeAssistant>, token: Secret) -> Self {
        Self {
            ctx: ctx.downgrade(),
            spoken,
            ha,
            token,
        }
    }

    /// The channel's view of the kernel, while the gateway runs.
    pub(super) fn ctx(&self) -> Option<ChannelCtx> {
        self.ctx.upgrade()
    }

    /// Run one agent turn; its frames (JSON, one per message) go to `out` as they come.
    pub async fn turn(
        &self,
        ctx: &ChannelCtx,
        ask: AgentAsk,
        cancel: CancellationToken,
        out: mpsc::Sender<String>,
    ) {
        let chat = ask
            .conversation_id
            .clone()
            .filter(|c| crate::config::is_safe_id(c))
            .unwrap_or_else(|| format!("ha-agent-{:08x}", rand::random::<u32>()));
        let speaker = ask
            .user_id
            .as_deref()
            .and_then(|u| {
                ctx.config()
                    .members
                    .iter()
                    .find(|m| m.ha_user_ids.iter().any(|id| id == u))
            })
            .map_or_else(|| GUEST.to_string(), |m| m.id.clone());
        let located = match (&self.ha, &ask.device_id) {
            (Some(ha), Some(device)) => ha.locate(None, Some(device.clone())).await,
            _ => None,
        };
        // a satellite's pipeline tells no user: the household's opt-in for that satellite
        let speaker = or_satellite_member(
            speaker,
            &ctx.config().home_assistant.speakers,
            located.as_ref().map(|l| l.entity_id.as_str()),
        );
        let front = located.as_ref().map_or_else(
            || WYOMING_TARGET.to_string(),
            |l| format!("{HA_PREFIX}{}", l.entity_id),
        );
        let satellite = located.as_ref().map(|l| l.entity_id.as_str());
        let mut turn = super::turn(&chat, &speaker, &ask.text, satellite);
        turn.room = located.as_ref().and_then(|l| l.room.clone());
        turn.peer_note = ask.extra_system_prompt.clone();
        let cap = ctx.config().agent.max_reply_chars;
        let (partials, rx) =
            Partials::new(cap.saturating_sub(crate::agent::TRUNCATION_MARK.chars().count()));
        turn.partials = Some(partials);
        let pending = ctx.submit_cancellable(turn, cancel.clone());
        // spoken as a satellite's: the partials, and what waits for this satellite first
        self.spoken
            .deliver(pending, Some(rx), cancel, &front, &chat, &out)
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_are_bounded() {
        let ask = |text: &str| AgentAsk {
            text: text.into(),
            ..Default::default()
        };
        assert_eq!(ask("  ").checked().unwrap_err(), AskError::Empty);
        assert_eq!(
            ask(&"字".repeat(MAX_TEXT_CHARS + 1)).checked().unwrap_err(),
            AskError::TooLong
        );
        let a = AgentAsk {
            text: " 你好 ".into(),
            device_id: Some("x".repeat(MAX_ID_CHARS + 1)),
            user_id: Some(" ".into()),
            conversation_id: Some("01JQ".into()),
            ..Default::default()
        }
        .checked()
        .unwrap();
        assert_eq!(a.text, "你好");
        assert_eq!(a.device_id, None, "an id past the bound counts as not sent");
        assert_eq!(a.user_id, None);
        assert_eq!(a.conversation_id.as_deref(), Some("01JQ"));
    }
}
