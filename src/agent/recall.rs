//! The memories a turn recalls: by scene, and — when the scene brings too few — by
//! wording, among the memories the chat may see (`memory_search`'s rule, so nothing
//! private crosses chats). Both blocks go where the scene block always went, after the
//! user's words, never in the system message: kept with the message under exact replay
//! (each memory's line sent once while the replayed window holds it) in a normal chat
//! and, in a mode session, for a group or a room; else the turn's aside. What the audit
//! records of them: which memories each recall brought, and the tokens each block cost.

use crate::config::Replay;
use crate::context::tokens::Calibration;
use crate::memory::{memory_line, recall_line, recall_section_of, Recalled, Worded};
use crate::prompt::TailSection;
use crate::turn::{Audience, Trust};

/// One turn's recalled memories and where their blocks go.
pub struct Recall {
    /// By scene, best first.
    pub scene: Vec<Recalled>,
    /// By wording, best first (none unless the scene brought too few).
    pub wording: Vec<Worded>,
    /// Kept blocks of the message (sent once while the window holds each line), else the
    /// turn's aside (never recorded nor replayed).
    pub keep: bool,
}

impl Recall {
    /// What `t` recalls under `replay`.
    pub fn of(memory: &crate::memory::Memory, t: &super::TurnCtx<'_>, replay: Replay) -> Self {
        let scene = t.scene_in(memory);
        let now = t.tail.now.timestamp();
        let by_scene = memory.recall(scene, now);
        let facts = t.turn.facts();
        let owner = facts.trust == Trust::Owner;
        let origin = format!("{}:{}", t.turn.channel, t.turn.chat_id);
        let wording = memory.recall_wording(scene, t.text, &by_scene, |_, from, keys| {
            crate::tools::memory::visible(scene, owner, &origin, from, keys)
        });
        // a private chat's or the terminal's memories in a mode session (shared by
        // several chats) and every memory under lean replay hold for this turn only
        let shared = matches!(facts.audience, Audience::Group | Audience::Room);
        let keep = replay == Replay::Exact && (t.ticket.mode.is_none() || shared);
        Self {
            scene: by_scene,
            wording,
            keep,
        }
    }

    /// The blocks kept with the message: the memories whose line the replayed window
    /// does not hold yet (`seen`). None when the blocks are the aside.
    pub fn kept(&self, seen: impl Fn(&str) -> bool) -> Vec<TailSection> {
        if !self.keep {
            return Vec::new();
        }
        let scene: Vec<Recalled> = self
            .scene
            .iter()
            .filter(|r| !seen(&recall_line(r)))
            .cloned()
            .collect();
        let wording: Vec<Worded> = self
            .wording
            .iter()
            .filter(|w| !seen(&memory_line(w.memory, &w.content)))
            .cloned()
            .collect();
        self.blocks(&scene, &wording)
    }

    /// The blocks of the turn's aside: all of them when they are not kept.
    pub fn aside(&self) -> Vec<TailSection> {
        if self.keep {
            return Vec::new();
        }
        self.blocks(&self.scene, &self.wording)
    }

    fn blocks(&self, scene: &[Recalled], wording: &[Worded]) -> Vec<TailSection> {
        recall_section_of(scene)
            .into_iter()
            .chain(crate::memory::wording::section_of(wording))
            .collect()
    }

    /// What the audit records: the ids each recall brought, and what the blocks of
    /// `sent` (the message's and the aside's, as sent) cost.
    pub fn audit(&self, cal: &Calibration, sent: &[&TailSection]) -> RecallAudit {
        RecallAudit {
            scene: self.scene.iter().map(|r| r.memory).collect(),
            wording: self.wording.iter().map(|w| w.memory).collect(),
            scene_tokens: tokens_of(cal, sent, crate::memory::SCENE_LABEL),
            wording_tokens: tokens_of(cal, sent, crate::memory::WORDING_LABEL),
        }
    }
}

/// The memories of a turn's first request, for its audit record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecallAudit {
    pub scene: Vec<i64>,
    pub wording: Vec<i64>,
    /// The `[场景记忆]` block this request sent (0: none, or the window held every line).
    pub scene_tokens: u32,
    /// The `[按字面找到的记忆]` block this request sent.
    pub wording_tokens: u32,
}

/// The tokens of the blocks labelled `label` among `sections`, counted as the prompt
/// carries them (`[label]…[/label]` after a blank line).
fn tokens_of(cal: &Calibration, sections: &[&TailSection], label: &str) -> u32 {
    sections
        .iter()
        .filter(|s| s.label == label)
        .map(|s| cal.count(&format!("\n\n[{label}]\n{}\n[/{label}]", s.body.trim())))
        .sum()
}
