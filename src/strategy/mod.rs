//! Agent strategies: *how* the agent works, orthogonal to run modes.
//!
//! - Build (default) — the plain tool loop ([`crate::agent::Agent::round`]);
//! - Plan / Spec — the model writes a JSON plan or spec (validated, re-asked once), the
//!   household confirms it from any chat or channel, then it runs step by step and is
//!   summarized ([`flows`], [`doc`]);
//! - Reflect — draft → critical review → revision, only the revision is the reply;
//! - Assist — the model must ask with `ask_user_choice` before a material choice;
//! - Custom — a persisted extra instruction.
//!
//! The strategy is **household-wide** ([`Strategies`], persisted in
//! `<workspace>/strategy/state.json`): a plan made in the QQ group must be confirmable
//! from the kitchen speaker, whose every wake is a new chat. Inside a run mode whose
//! `mode.json` names a `strategy`, that one applies, unless someone used `/strategy`
//! during the session. Switching is a hot patch of this state: it never touches the
//! conversation, the frozen `system_prompt.md` or the tool list. The standing strategy's
//! instruction (the configured or the mode's default) ends the system message, a cached
//! prefix; a switched one comes in each turn's dynamic tail as a [`TailSection`], so the
//! cached prefix of a running session stays byte-identical across switches (see
//! docs/strategies.md and [`Effective::blocks`]).
//!
//! Layout: `handle` — the state handle; `command` — `/strategy`; `effective` — the effective
//! strategy and where its instruction goes;
//! [`flows`] — one turn through the strategy; `result` — the [`TurnResult`] it ends in, its
//! rounds folded in; `work` — Plan / Spec; `spec_stream` — a spec said as it is written
//! (the card's words, not the JSON) to a channel that streams; `reflect` (an `ask_user_choice`
//! question rendered per channel and its answer parsed: `tools::choice::answer`); [`doc`] — plan / spec JSON; [`state`] — the file;
//! [`journal`] — the visible record of every step; `offer` — the answer to the
//! backend's offer of a mode, judged here, not by the model; `spoken` — a spoken change of
//! strategy (`set_strategy`, checked against the user's words by the tool) applied.

mod ctx;
pub mod doc;
mod flows;
pub mod journal;
mod offer;
mod reflect;
mod result;
mod spec_stream;
mod spoken;
pub mod state;
mod work;
pub use flows::run;
pub use result::TurnResult;
pub use state::{PendingChoice, PendingWork, Preset, State, Thinking, WorkKind};

mod command;
mod effective;
mod handle;

pub use command::{CommandError, MAX_CUSTOM_CHARS};
pub use effective::{Effective, Source, BUILD_WORDING, SECTION_LABEL};
pub use handle::{ActiveMode, Strategies};
