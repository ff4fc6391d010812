//! `Turn`: one message a channel sends into the kernel, with its facts as the channel
//! stated them.

use super::facts::Facts;
use super::Partials;
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
    /// The room the speaker is in (a voice satellite's area), said in the dynamic tail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    /// Scene memory for this turn only (`auto` / `none`); `None`: the channel's policy
    /// (`[memory.channels]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scene_policy: Option<crate::config::ScenePolicy>,
    /// Explicit scene keys (`chan:qq/peer:group_1027`) given by a channel or a single
    /// injection; empty: derived from the channel and chat. At most four are used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenes: Vec<String>,
    /// Where the reply goes sentence by sentence while the model writes it (a native
    /// voice satellite starts speaking early); `None`: the reply comes whole. Never sent
    /// over the control socket.
    #[serde(skip)]
    pub partials: Option<Partials>,
    /// What the channel states about this turn. Never taken from the wire: a turn read
    /// from the control socket has the least facts ([`Facts::default`]) until the socket,
    /// the terminal's channel, stamps its own.
    #[serde(skip)]
    pub facts: Facts,
    /// Words the channel's peer adds to its conversation (a Home Assistant automation's
    /// `extra_system_prompt`, which HA keeps for the whole conversation): data from
    /// outside the household, a kept block of the message it first arrives in (sent
    /// again only when it changed or the replayed window lost it), never in the system
    /// message. Bounded by the channel. Never taken from the control socket.
    #[serde(skip)]
    pub peer_note: Option<String>,
    /// What the channel's peer said and answered in this conversation without homebot
    /// since homebot's last answer (Home Assistant answering a command itself, an
    /// automation's spoken question), as `(who, words)` lines: a kept block of this
    /// message. Bounded by the channel. Never taken from the control socket.
    #[serde(skip)]
    pub peer_log: Vec<(String, String)>,
    /// The speaker's name as the channel's peer knows it (Home Assistant's user), shown
    /// when the speaker is no member with a name of their own. Never taken from the
    /// control socket.
    #[serde(skip)]
    pub peer_name: Option<String>,
}

fn yes() -> bool {
    true
}

impl Turn {
    /// A turn of `channel`'s chat `chat_id`, with the facts its channel states (each
    /// channel has its own constructor that states them: `channels::qq::turn`, …).
    pub fn new(
        channel: impl Into<String>,
        chat_id: impl Into<String>,
        speaker_id: impl Into<String>,
        text: impl Into<String>,
        facts: Facts,
    ) -> Self {
        Self {
            channel: channel.into(),
            chat_id: chat_id.into(),
            speaker_id: speaker_id.into(),
            text: text.into(),
            may_switch_modes: true,
            reply_hint: None,
            reply_to: None,
            room: None,
            scene_policy: None,
            scenes: Vec::new(),
            partials: None,
            facts,
            peer_note: None,
            peer_log: Vec::new(),
            peer_name: None,
        }
    }

    /// The turn's facts, as its channel stated them.
    pub fn facts(&self) -> &Facts {
        &self.facts
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
