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
/// The longest name taken from HA (a user's, an area's, a floor's).
pub const MAX_NAME_CHARS: usize = 100;
/// The most chat-log entries taken with one turn (the newest are kept).
pub const MAX_LOG_ENTRIES: usize = 8;
/// The most of one chat-log entry that is kept (characters).
pub const MAX_LOG_CHARS: usize = 1000;

/// The area of the device that heard the words, as HA's registries name it.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct AskArea {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub floor: Option<String>,
}

/// One entry of HA's chat log for this conversation that homebot did not write (HA's own
/// agent answering a command locally, an automation's `start_conversation` question).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct LogEntry {
    /// `user` or `assistant`.
    pub role: String,
    pub text: String,
    /// The agent that wrote an assistant entry (`conversation.home_assistant`, a satellite).
    #[serde(default)]
    pub agent_id: Option<String>,
}

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
    /// The HA user's display name.
    #[serde(default)]
    pub user_name: Option<String>,
    /// The satellite that heard the words (`assist_satellite.*`): HA's `satellite_id`,
    /// else the device's satellite entity.
    #[serde(default)]
    pub satellite_id: Option<String>,
    /// The device's area.
    #[serde(default)]
    pub area: Option<AskArea>,
    /// What HA's chat log holds of this conversation that homebot did not write, since
    /// homebot's last answer in it.
    #[serde(default)]
    pub chat_log: Vec<LogEntry>,
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
            *id = bounded(id.take(), MAX_ID_CHARS);
        }
        self.satellite_id = bounded(self.satellite_id.take(), MAX_ID_CHARS)
            .filter(|s| crate::config::is_safe_id(s));
        self.user_name = bounded(self.user_name.take(), MAX_NAME_CHARS);
        self.area = self.area.take().and_then(|a| {
            Some(AskArea {
                // a door target and a held message's key: a safe id (HA's are slugs)
                id: bounded(Some(a.id), MAX_ID_CHARS).filter(|i| crate::config::is_safe_id(i))?,
                name: bounded(Some(a.name), MAX_NAME_CHARS)?,
                floor: bounded(a.floor, MAX_NAME_CHARS),
            })
        });
        let skip = self.chat_log.len().saturating_sub(MAX_LOG_ENTRIES);
        self.chat_log = std::mem::take(&mut self.chat_log)
            .into_iter()
            .skip(skip)
            .filter(|e| matches!(e.role.as_str(), "user" | "assistant"))
            .filter_map(|e| {
                let text: String = e.text.trim().chars().take(MAX_LOG_CHARS).collect();
                (!text.trim().is_empty()).then(|| LogEntry {
                    text,
                    agent_id: bounded(e.agent_id, MAX_ID_CHARS),
                    ..e
                })
            })
            .collect();
        Ok(self)
    }
}

/// `s` trimmed, or `None` when blank or longer than `max` characters (an id cut short
/// would name something else).
fn bounded(s: Option<String>, max: usize) -> Option<String> {
    s.map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s.chars().count() <= max)
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
        let place = self.place(&ask).await;
        // a satellite's pipeline tells no user: the household's opt-in for that satellite
        let speaker = or_satellite_member(
            speaker,
            &ctx.config().home_assistant.speakers,
            place.satellite.as_deref(),
        );
        // where it is said, and where what it leaves for later waits: the satellite, else
        // the device's area (its satellites announce; unreachable, held for the next
        // turn from that room), else the next turn without a satellite
        let front = match (&place.satellite, &place.area) {
            (Some(s), _) => format!("{HA_PREFIX}{s}"),
            (None, Some(a)) => format!("{HA_PREFIX}{}", a.id),
            (None, None) => WYOMING_TARGET.to_string(),
        };
        let mut turn = super::turn(&chat, &speaker, &ask.text, place.satellite.as_deref());
        if let (None, Some(a)) = (&place.satellite, &place.area) {
            turn.reply_to = Some(a.id.clone());
        }
        turn.room = place.area.as_ref().map(|a| match &a.floor {
            Some(f) => format!("{}（{f}）", a.name),
            None => a.name.clone(),
        });
        // heard at a satellite, the words were said in its room for whoever is there: the
        // room's scene (typed, on a tablet or a phone, they stay the speaker's own)
        if place.satellite.is_some() {
            turn.facts.scenes.extend(
                place
                    .area
                    .as_ref()
                    .and_then(|a| crate::memory::SceneKey::room(&a.name))
                    .map(|k| k.to_string()),
            );
        }
        turn.peer_note = ask.extra_system_prompt.clone();
        turn.peer_name = ask.user_name.clone();
        turn.peer_log = ask
            .chat_log
            .iter()
            .map(|e| (log_speaker(e), e.text.clone()))
            .collect();
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

impl Agent {
    /// Where the device that heard the words is: what the integration sent (HA resolves
    /// it in-process), else what this channel's own connection to HA knows of the device
    /// — never a satellite that merely listens now, nor the default one.
    async fn place(&self, ask: &AgentAsk) -> Place {
        let mut place = Place {
            satellite: ask.satellite_id.clone(),
            area: ask.area.clone(),
        };
        if let (Some(ha), true) = (&self.ha, place.satellite.is_none() || place.area.is_none()) {
            let found = ha
                .place(ask.satellite_id.clone(), ask.device_id.clone())
                .await;
            place.satellite = place.satellite.or(found.satellite);
            place.area = place.area.or_else(|| {
                found.area.map(|a| AskArea {
                    id: a.id,
                    name: a.name,
                    floor: None,
                })
            });
        }
        place
    }
}

/// Where an agent turn's device is.
#[derive(Debug, Default)]
struct Place {
    satellite: Option<String>,
    area: Option<AskArea>,
}

/// Who said a chat-log entry, as the model reads it.
fn log_speaker(e: &LogEntry) -> String {
    match (e.role.as_str(), e.agent_id.as_deref()) {
        ("user", _) => "用户".into(),
        (_, Some(a)) if a.starts_with("assist_satellite.") => format!("{a}（自动化的提问）"),
        _ => "Home Assistant".into(),
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
