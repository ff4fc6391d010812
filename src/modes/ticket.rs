//! What the ModeManager hands out and reports about turns and sessions: a turn's
//! [`TurnTicket`] (the mode it runs in, the history it replays), what ending it did
//! ([`EndOutcome`]), the status, and the facts a session's frozen prompt names. Plain
//! data; the state machine that makes them is [`super::mode_core`].

use super::action::ActionDoc;
use super::plugin::ContextPath;
use super::session::HistoryView;
use chrono::{DateTime, FixedOffset};
use std::path::PathBuf;
use std::sync::Arc;

/// A turn's number, handed out by begin-turn.
pub type TurnId = u64;

/// What a session's frozen prompt names of the session itself: constant while it lasts,
/// so it sits in the cached prefix instead of every request's tail.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionFacts {
    pub session_id: String,
    /// The session folder, relative to the workspace.
    pub session_dir: String,
    /// The plugin's data paths (label, path relative to the workspace).
    pub paths: Vec<(String, String)>,
    /// The household's examples the session got ([`super::examples`]; empty: none).
    pub examples: Vec<super::examples::Case>,
}

/// Who is speaking, where: what the core needs of a turn.
#[derive(Debug, Clone)]
pub struct TurnMeta {
    pub channel: String,
    pub chat_id: String,
    pub speaker_id: String,
    /// The name the household gave the speaker, if any.
    pub speaker_name: Option<String>,
    /// Where what outlives the chat is kept (`Facts::place`); `None`: the chat.
    pub place: Option<String>,
    /// The turn's words.
    pub text: String,
    /// Whether others hear the answer (a group chat, a room): only such a turn may be
    /// kept as an example ([`super::examples`]).
    pub shared: bool,
    /// The room the turn is heard in, if the channel knows it.
    pub room: Option<String>,
}

/// The active session as one turn sees it.
#[derive(Debug, Clone)]
pub struct ModeSnapshot {
    pub mode_id: String,
    pub display_name: String,
    pub session_id: String,
    pub session_dir: PathBuf,
    /// The frozen `system_prompt.md`.
    pub system_prompt: Arc<str>,
    pub context_paths: Vec<ContextPath>,
}

/// What `begin_turn` hands the agent.
#[derive(Debug, Clone)]
pub struct TurnTicket {
    pub turn_id: TurnId,
    pub mode: Option<ModeSnapshot>,
    /// The mode's history, or the chat's normal-operation history.
    pub history: HistoryView,
    pub began_at: DateTime<FixedOffset>,
    /// Outside a mode: the chat's checkpoint and the ended session it carries.
    pub chat: Option<ChatReplay>,
}

/// What a normal chat's turn replays besides its records.
#[derive(Debug, Clone)]
pub struct ChatReplay {
    /// The chat's `<chat>.checkpoint.json` (it may not exist yet).
    pub checkpoint: PathBuf,
    /// A mode session this chat took part in that ended less than a day ago.
    pub carried: Option<crate::chats::carried::CarriedSession>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ModeStatus {
    pub action: ActionDoc,
    /// The parent session the running sub-mode paused (`modes/paused.json`).
    pub paused: Option<ActionDoc>,
    pub exiting: bool,
    pub in_flight: usize,
    pub turns_recorded: usize,
    pub modes: Vec<(String, String)>,
    pub warnings: Vec<String>,
    /// Turns are failing to be recorded (cleared when a record or a probe write succeeds).
    pub recording_failure: Option<RecordingFailure>,
    /// Switches since the ModeManager opened, and when it opened (see [`Self::stamp`]).
    #[serde(skip)]
    pub switches: (u64, u128),
}

impl ModeStatus {
    /// What changes with every switch, from any chat (an entry, an exit requested, an
    /// expiry): a question about switching compares it with the stamp of when it was
    /// asked. After a restart no stamp matches: a question from before is void.
    pub fn stamp(&self) -> String {
        format!("{}#{}", self.switches.1, self.switches.0)
    }
}

/// The current streak of turns that could not be recorded.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RecordingFailure {
    /// When the first turn of the streak failed (household time, RFC 3339).
    pub since: String,
    /// The file the latest failed turn was to be appended to, and why it was not.
    pub path: PathBuf,
    pub error: String,
    /// The latest failure was a full disk (or quota): new turns are refused meanwhile.
    pub disk_full: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct EndOutcome {
    /// Session the turn was recorded in (`None`: normal-operation history).
    pub recorded_in: Option<String>,
    /// Session archived as a consequence of this turn ending.
    pub archived: Option<String>,
}
