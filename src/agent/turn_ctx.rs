//! [`TurnCtx`]: one turn as the agent and the strategies see it. The kernel builds it
//! once, after begin-turn, from the channel's [`Turn`] and the ModeManager's
//! [`TurnTicket`]; every request of the turn is prepared from it.

use crate::memory::{Memory, TurnScene};
use crate::modes::{ModesHandle, TurnTicket};
use crate::prompt::TailInfo;
use crate::turn::Turn;
use std::sync::OnceLock;

/// One begun turn: what came in, what it replays, and what its tail says.
pub struct TurnCtx<'a> {
    pub turn: &'a Turn,
    /// The user's words, trimmed.
    pub text: &'a str,
    /// Begin-turn's answer: the mode (if any), the history to replay, the turn's time.
    pub ticket: &'a TurnTicket,
    /// What the current message's `[上下文]` block says of the turn.
    pub tail: TailInfo<'a>,
    /// The speaker's `USER.md`, outside a mode (a mode's frozen prompt holds the profiles).
    pub profile: Option<String>,
    /// The ModeManager, for the tools that switch modes.
    pub modes: &'a ModesHandle,
    /// Where the turn stands for scene memory, worked out once when first asked (recall,
    /// the memory tools and the observation share it: segmenting the words is the
    /// costliest part).
    pub scene: OnceLock<TurnScene>,
}

impl TurnCtx<'_> {
    /// The turn's scene (see [`TurnCtx::scene`]).
    pub fn scene_in(&self, memory: &Memory) -> &TurnScene {
        self.scene
            .get_or_init(|| memory.scene_of(self.turn, self.tail.now))
    }
}
