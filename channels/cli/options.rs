//! [`CliOptions`]: who speaks in a terminal chat, in which chat, with which scene keys —
//! and the turns of that chat.

use crate::turn::{Audience, Facts, Modality, Trust, Turn};

/// The channel name terminal turns carry, and the outbound door's.
pub const CHANNEL: &str = "cli";

#[derive(Debug, Clone)]
pub struct CliOptions {
    pub speaker: String,
    pub chat_id: String,
    /// Explicit scene keys for every turn of this chat (`--scene`); empty: derived.
    pub scenes: Vec<String>,
    /// `--scene-policy`: `none` keeps these turns out of scene memory.
    pub scene_policy: Option<crate::config::ScenePolicy>,
}

impl Default for CliOptions {
    fn default() -> Self {
        Self {
            speaker: "owner".into(),
            chat_id: "local".into(),
            scenes: Vec::new(),
            scene_policy: None,
        }
    }
}

impl CliOptions {
    /// A turn of this chat, with its scene keys and policy.
    pub fn turn(&self, text: &str) -> Turn {
        let mut t = turn(&self.chat_id, &self.speaker, text);
        t.scenes = self.scenes.clone();
        t.scene_policy = self.scene_policy;
        t
    }
}

/// What the terminal vouches for: the owner at the machine, reading text; the chat's own
/// scene. The control socket stamps these on every turn it reads, whatever the client
/// claimed.
pub fn terminal_facts(chat_id: &str) -> Facts {
    Facts {
        audience: Audience::Terminal,
        modality: Modality::Text,
        trust: Trust::Owner,
        memory_peer: Some(chat_id.to_string()).filter(|c| !c.is_empty()),
        place: None,
        scenes: Vec::new(),
    }
}

/// A terminal turn of `chat_id` by `speaker` (a slash command too: its text is the
/// command's canonical form, `Command::to_string`).
pub fn turn(
    chat_id: impl Into<String>,
    speaker: impl Into<String>,
    text: impl Into<String>,
) -> Turn {
    let chat_id = chat_id.into();
    let facts = terminal_facts(&chat_id);
    Turn::new(CHANNEL, chat_id, speaker, text, facts)
}
