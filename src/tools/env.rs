//! [`ToolEnv`]: what is true of one turn for its tool calls (who asks, where, in which
//! mode, what the turn has done so far). The agent builds one per turn; the registry
//! hands it to every call of the turn. The services the tools act through are their
//! own (see `services`).
//!
//! It names only the state types of the tool modules (`memory`, `choice`,
//! `set_strategy`, `home`), never a tool: tools import this file, not the other way
//! round.

use super::choice::rules::ChoiceSlot;
use super::memory::rules::MemoryEnv;
use super::set_strategy::rules::Setter;
use crate::modes::mode_core::TurnId;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// What is true of one turn for its tool calls.
pub struct ToolEnv {
    pub turn_id: TurnId,
    /// The user's original words of this turn (for `switch_mode` validation).
    pub user_text: String,
    /// The channel's permission rule for this sender.
    pub may_switch_modes: bool,
    /// How far the channel trusts this sender (a guest is never offered a mode).
    pub trust: crate::turn::Trust,
    /// Where the turn was said (a voice satellite's entity), when its channel knows.
    pub place: Option<String>,
    /// The mode the turn runs in (its knowledge is readable; other modes' is not); set
    /// when the turn itself enters one.
    pub mode: Mutex<Option<String>>,
    /// Bytes the tools that write files have written in this turn so far.
    pub written: AtomicU64,
    /// Where this turn's reminders would ring.
    pub origin: crate::reminders::Origin,
    /// Scene memory, and where this turn stands in it.
    pub memory: MemoryEnv,
    /// A question `ask_user_choice` asked in this turn (it ends the turn).
    pub choice: ChoiceSlot,
    /// Where an accepted `set_strategy` goes (the strategy layer sets it on every turn it
    /// runs; `None`: the strategy cannot be changed from this call).
    pub strategy: Option<Arc<dyn Setter>>,
    /// The turn's view of Home Assistant (`None`: not configured).
    pub home: Option<super::home::access::HomeTurn>,
}

impl ToolEnv {
    /// The mode the turn is in now.
    pub fn mode(&self) -> Option<String> {
        self.mode
            .lock()
            .expect("the tool mode lock is never poisoned")
            .clone()
    }

    /// From now on the turn is in `mode_id` (with that mode's knowledge rules).
    pub fn entered(&self, mode_id: &str) {
        *self
            .mode
            .lock()
            .expect("the tool mode lock is never poisoned") = Some(mode_id.to_string());
    }
}
