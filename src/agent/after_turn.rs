//! After a turn is recorded: the observation handed to scene memory, and the compaction
//! started off every actor when a history has grown.

use super::Agent;
use crate::context::budget::Source;
use crate::context::compaction;
use crate::modes::TurnTicket;
use crate::prompt;
use std::sync::Arc;

impl Agent {
    /// Tell scene memory that this turn's situation occurred, with the tools it called
    /// (once per turn, whatever the strategy). Handed to the memory thread: the reply
    /// never waits for it, nor fails with it.
    pub fn observe_turn(&self, t: &super::TurnCtx<'_>, tools: Vec<String>) {
        let scene = t.scene_in(&self.memory).clone();
        self.memory.observe(scene, tools, t.tail.now.timestamp());
    }

    /// A normal chat's carried block (the ended session's id and the block), if any.
    pub(super) fn carried(&self, ticket: &TurnTicket) -> Option<(String, Arc<str>)> {
        let s = ticket.chat.as_ref()?.carried.as_ref()?;
        Some((s.session_id.clone(), self.context.carried_block(s)?))
    }

    /// After a turn was recorded (the kernel calls this, off every actor): compact its
    /// history — the mode session's, or the normal chat's — in the background if it
    /// passed the threshold.
    pub fn after_turn(&self, ticket: &TurnTicket, channel: &str, chat_id: &str) {
        self.compact_later(ticket, channel, chat_id);
    }

    pub(super) fn compact_later(&self, ticket: &TurnTicket, channel: &str, chat_id: &str) {
        let system = prompt::system_message(&self.base_prompt, ticket, None);
        let (checkpoint, session_dir, session_id, policy, focus) =
            match (&ticket.mode, &ticket.chat) {
                (Some(m), _) => (
                    crate::context::checkpoint::path_in(&m.session_dir),
                    Some(m.session_dir.clone()),
                    Some(m.session_id.clone()),
                    self.context.policy(&m.mode_id),
                    self.context.compaction_focus(&m.mode_id),
                ),
                (None, Some(c)) => (
                    c.checkpoint.clone(),
                    None,
                    None,
                    Source::normal(self.normal_history_turns, None).policy,
                    None,
                ),
                (None, None) => return,
            };
        self.context.after_turn(
            &self.provider,
            compaction::Job {
                checkpoint,
                session_dir,
                session_id,
                carried: self.carried(ticket),
                history: ticket.history.clone(),
                system: system.into(),
                policy,
                focus,
                channel: channel.to_string(),
                chat_id: chat_id.to_string(),
                now: ticket
                    .began_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
            },
        );
    }
}
