//! [`CliOptions`]: who speaks in a terminal chat, in which chat, with which scene keys —
//! and the turns of that chat.

use super::channel::CHANNEL;
use crate::turn::{Audience, Facts, Modality, Trust, Turn};

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
        let mut t = Turn::new(CHANNEL, &self.chat_id, &self.speaker, text);
        t.facts = Some(Facts {
            audience: Audience::Terminal,
            modality: Modality::Text,
            trust: Trust::Owner,
            memory_peer: Some(self.chat_id.clone()).filter(|c| !c.is_empty()),
        });
        t.scenes = self.scenes.clone();
        t.scene_policy = self.scene_policy;
        t
    }
}
