//! What channels send into the kernel and what comes back.

use serde::{Deserialize, Serialize};

/// One user message from a channel, with who sent it and where to answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Turn {
    /// `cli`, `qq`, `voice`, …
    pub channel: String,
    /// The conversation inside the channel (a QQ group, a voice session, a terminal).
    pub chat_id: String,
    /// Who spoke: a member id when known, else the channel's own id, else `guest`.
    pub speaker_id: String,
    pub text: String,
    /// Whether this sender may enter / exit run modes here (a channel's permission rule).
    #[serde(default = "yes")]
    pub may_switch_modes: bool,
    /// Channel-specific reply guidance for the dynamic tail (e.g. voice: short, no markdown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_hint: Option<String>,
    /// Where a proactive message for this chat goes: the target of the channel's outbound
    /// door (a satellite id, `group:<id>`, …). `None`: the chat id itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// Scene memory for this turn only (`auto` / `none`); `None`: the channel's policy
    /// (`[memory.channels]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scene_policy: Option<crate::config::ScenePolicy>,
    /// Explicit scene keys (`chan:qq/peer:group_1027`) given by a channel or a single
    /// injection; empty: derived from the channel and chat. At most four are used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenes: Vec<String>,
}

fn yes() -> bool {
    true
}

impl Turn {
    pub fn new(
        channel: impl Into<String>,
        chat_id: impl Into<String>,
        speaker_id: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self {
            channel: channel.into(),
            chat_id: chat_id.into(),
            speaker_id: speaker_id.into(),
            text: text.into(),
            may_switch_modes: true,
            reply_hint: None,
            reply_to: None,
            scene_policy: None,
            scenes: Vec::new(),
        }
    }

    /// Where proactive messages for this turn's chat go (see `reply_to`).
    pub fn reply_target(&self) -> &str {
        self.reply_to.as_deref().unwrap_or(&self.chat_id)
    }

    /// Key of the per-chat FIFO and of the normal-operation history.
    pub fn chat_key(&self) -> String {
        format!("{}:{}", self.channel, self.chat_id)
    }
}

/// The kernel's answer to a turn.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Reply {
    pub text: String,
    /// Set when the turn failed (provider down, timeout …); `text` then explains it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The reply asks something the chat's next message answers (an `ask_user_choice`
    /// question, a plan waiting for confirmation): voice keeps listening.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub awaits_answer: bool,
}

impl Reply {
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            error: None,
            awaits_answer: false,
        }
    }
    pub fn failed(text: impl Into<String>, error: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            error: Some(error.into()),
            awaits_answer: false,
        }
    }
}
