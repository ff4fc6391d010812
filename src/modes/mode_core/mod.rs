//! `ModeCore`: the live run-mode state — the active session, the turns in flight,
//! `action.json` as it is in memory, the chats' normal histories — as a state machine,
//! synchronous and runtime-free, so it can be unit-tested directly; the
//! [`super::manager::ModeManager`] actor only adds ordering. Entering, exiting and
//! expiring are in [`switching`], the fsync of records and recording failures in
//! [`recording`], and normal-operation chat histories in [`crate::chats`].
//!
//! What is done with sessions on disk apart from the live one — archiving a session that
//! ends ([`super::archive`]) and repairing the workspace at start-up
//! ([`super::recovery`]) — belongs to the [`Archivist`] the core holds; the core hands it
//! what an archive changes of the live state.
//!
//! A turn's life: [`ModeCore::begin_turn`] (expiry catch-up, then a snapshot of the active
//! session, or of the chat's normal history) → the agent runs elsewhere →
//! [`ModeCore::end_turn`] (record in the session the turn began in, then archive if an
//! exit is pending and nothing else of the session is in flight).
//!
//! Invariants kept here (turns from every channel arrive concurrently):
//! - at most one active session; `action.json` replaced atomically on every change;
//! - a turn is recorded exactly once, in the session that was active when it began (a
//!   turn that began outside any mode and entered one is recorded in the session it made);
//! - once an exit is requested, new turns no longer join the session; archival runs once,
//!   after the last in-flight turn of the session (and the exiting turn) is recorded;
//! - archival steps are resumable: `exit.json` marks the request, `summary.md` is written
//!   only if missing, the plugin index update is idempotent, `action.json` goes last;
//! - a turn that could not be recorded is never acknowledged as if it were: `end_turn`
//!   returns the error (the reply says so) and the failure is kept for `status`; while
//!   the disk is known to be full, [`ModeCore::check_recordable`] refuses new turns
//!   before they reach the LLM, until a probe write succeeds again.

pub mod examples;
pub mod offer;
pub mod recording;
pub mod session_dir;
pub mod submode;
pub mod switching;
mod turns;

use super::action::ActionDoc;
use super::archive::{Archivist, Live};
use super::durable::Pending;
use super::entered::Entrant;
use super::plugin::{ContextPath, PluginContext};
use super::registry::{ModeRegistry, RegisteredMode};
use super::session::{self, ExitMarker, HistoryLog, Record};
use super::warnings::Warnings;
use crate::chats::ChatHistories;
use crate::workspace::Workspace;
use crate::zone::Zone;
use chrono::{DateTime, FixedOffset, SecondsFormat, Utc};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use tracing::info;

pub(super) use super::error::io;
pub use super::error::ModeError;

pub use super::ticket::{
    ChatReplay, EndOutcome, ModeSnapshot, ModeStatus, RecordingFailure, SessionFacts, TurnId,
    TurnMeta, TurnTicket,
};

/// Lays out a session's frozen system prompt from the mode, its skill's static prompt,
/// the previous session's summary to carry over (if any) and the session's own facts.
/// The caller supplies it (homebot's is `prompt::frozen_mode_prompt`, beside the rest of
/// the prompt layout), so this module never imports the prompt that depends on it.
pub type FrozenPromptFn =
    fn(&RegisteredMode, &str, Option<&super::carry::CarryOver>, &SessionFacts) -> String;

pub(super) struct ActiveSession {
    /// `None` when the mode's skill no longer loads; the frozen prompt still serves.
    pub(super) mode: Option<RegisteredMode>,
    pub(super) mode_id: String,
    pub(super) display_name: String,
    pub(super) session_id: String,
    pub(super) dir: PathBuf,
    pub(super) started_at: String,
    pub(super) expires_at: DateTime<FixedOffset>,
    pub(super) system_prompt: Arc<str>,
    pub(super) context_paths: Vec<ContextPath>,
    pub(super) log: HistoryLog,
    pub(super) in_flight: HashSet<TurnId>,
    pub(super) exit: Option<ExitMarker>,
    /// A turn outside the session that asked for the exit; archival waits for its end.
    pub(super) exit_turn: Option<TurnId>,
}

/// The parent a running sub-mode paused, and the document that keeps it on disk
/// (`modes/paused.json`); see [`submode`].
pub(in crate::modes) struct Paused {
    pub session: ActiveSession,
    pub doc: super::paused::PausedDoc,
}

/// The live session `sid` among the active one and the paused parent (a function of the
/// two fields, so the caller can go on borrowing the core's others).
pub(super) fn live_in<'a>(
    active: &'a mut Option<ActiveSession>,
    paused: &'a mut Option<Paused>,
    sid: &str,
) -> Option<&'a mut ActiveSession> {
    [active.as_mut(), paused.as_mut().map(|p| &mut p.session)]
        .into_iter()
        .flatten()
        .find(|s| s.session_id == sid)
}

pub(super) struct TurnEntry {
    /// The session the turn is recorded in, and its folder.
    pub(super) session: Option<(String, PathBuf)>,
    /// Whose turn it is (`entered.json` names them if the turn enters a mode).
    pub(super) who: Entrant,
    /// The turn's words (a session it enters picks its examples by them), whether others
    /// hear its answer, its chat and its room ([`examples`]).
    pub(super) text: String,
    pub(super) chat_id: String,
    pub(super) shared: bool,
    pub(super) room: Option<String>,
}

pub struct ModeCore {
    pub(super) ws: Workspace,
    pub(super) frozen_prompt: FrozenPromptFn,
    /// Archiving and start-up repair of the sessions on disk.
    pub(super) archivist: Archivist,
    pub(super) registry: Arc<ModeRegistry>,
    pub(super) tz: Zone,
    pub(super) action: ActionDoc,
    pub(super) active: Option<ActiveSession>,
    /// The parent session a running sub-mode paused (`modes/paused.json`), resumed when
    /// the sub-mode ends ([`submode`]).
    pub(super) paused: Option<Paused>,
    pub(super) turns: HashMap<TurnId, TurnEntry>,
    next_turn: TurnId,
    /// Turn ids below this were handed out before a restart of the ModeManager.
    first_turn: TurnId,
    pub(super) chats: ChatHistories,
    /// History files with records written and not yet synced (group commit).
    syncs: super::durable::Syncs,
    pub(super) warnings: Warnings,
    pub(super) recording_failure: Option<RecordingFailure>,
    /// Switches since this ModeCore opened (an entry, an exit requested), with when it
    /// opened: what a pending switch question compares with ([`ModeStatus::stamp`]).
    pub(super) switches: (u64, u128),
    /// Each chat's last answered turn in a session that learns examples ([`examples`]).
    pub(super) candidates: HashMap<(String, String), examples::Candidate>,
    /// What examples are compared by (the memory's topic words); `None`: the newest.
    pub(super) words: Option<crate::modes::examples::pick::WordsFn>,
}

/// Where a switch request comes from.
#[derive(Debug, Clone, Copy)]
pub enum SwitchOrigin<'a> {
    /// The `switch_mode` tool during a turn; the user's words of that turn.
    Tool { turn_id: TurnId, user_text: &'a str },
    /// An explicit `/mode` command, and who sent it (`None` from no chat).
    Command(Option<&'a Entrant>),
    /// A yes to the backend's question after the words of a switch were unsure (see
    /// `switch::unsure`): as the tool's switch, in the answering turn, without the word
    /// check (the yes was judged by the caller).
    Confirmed { turn_id: TurnId },
}

impl ModeCore {
    /// Open the mode state of a workspace: read `action.json` (a corrupt one is set aside
    /// and reported), reload the active session, archive orphaned session folders (a
    /// crash during entry or a lost `action.json`), resume an interrupted archive, retry
    /// pending index updates, then expire a session whose time passed while homebot was
    /// down ([`super::recovery`]).
    pub fn open(
        ws: Workspace,
        registry: Arc<ModeRegistry>,
        tz: Zone,
        now: DateTime<Utc>,
        frozen_prompt: FrozenPromptFn,
    ) -> Result<Self, ModeError> {
        let mut core = ModeCore::empty(ws, registry, tz, frozen_prompt);
        core.action = core.archivist.read_action(&mut core.warnings)?;
        if core.action.active {
            let active = core
                .archivist
                .reload_active(&core.action, &mut core.warnings);
            core.active = Some(active);
        }
        core.load_paused();
        let live_dirs: Vec<PathBuf> = [
            core.active.as_ref(),
            core.paused.as_ref().map(|p| &p.session),
        ]
        .into_iter()
        .flatten()
        .map(|a| a.dir.clone())
        .collect();
        let live = Live {
            chats: &mut core.chats,
            action: &mut core.action,
            warnings: &mut core.warnings,
        };
        core.archivist.recover_orphans(now, &live_dirs, live);
        core.maybe_archive();
        core.archivist.retry_pending_indexes(&mut core.warnings);
        // a session that expired while homebot was down ends now, before anyone (a
        // `homebot status`, the first turn) sees it as active
        core.check_expiry(now);
        Ok(core)
    }

    /// An empty core over a workspace; [`ModeCore::open`] fills it from disk.
    pub(super) fn empty(
        ws: Workspace,
        registry: Arc<ModeRegistry>,
        tz: Zone,
        frozen_prompt: FrozenPromptFn,
    ) -> Self {
        let chats = ChatHistories::new(&ws.chats_dir());
        ModeCore {
            archivist: Archivist::new(ws.clone(), registry.clone(), tz),
            ws,
            frozen_prompt,
            registry,
            tz,
            action: ActionDoc::inactive(None),
            active: None,
            paused: None,
            turns: HashMap::new(),
            next_turn: 1,
            first_turn: 1,
            chats,
            syncs: Default::default(),
            warnings: Warnings::default(),
            recording_failure: None,
            switches: (
                0,
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            ),
            candidates: HashMap::new(),
            words: None,
        }
    }

    /// After a restart: keep turn ids unique across the old and the new core, and know
    /// which ids the old one handed out.
    pub(super) fn continue_turn_ids(&mut self, from: TurnId) {
        self.next_turn = from;
        self.first_turn = from;
    }

    pub(super) fn next_turn_id(&self) -> TurnId {
        self.next_turn
    }

    /// Normal chats replay at most `turns` records (`agent.normal_history_turns`): only
    /// their tail stays in memory.
    pub fn keep_chat_history(&mut self, turns: usize) {
        self.chats.set_replayed(turns);
    }

    pub(super) fn chat_history_kept(&self) -> usize {
        self.chats.replayed_keep()
    }

    pub(super) fn set_chat_history_kept(&mut self, keep: usize) {
        self.chats.set_keep(keep);
    }

    pub(super) fn warn(&mut self, msg: String) {
        self.warnings.push(msg);
    }

    pub(super) fn local(&self, t: DateTime<Utc>) -> DateTime<FixedOffset> {
        t.with_timezone(&self.tz).fixed_offset()
    }

    pub(super) fn rfc3339(t: DateTime<FixedOffset>) -> String {
        t.to_rfc3339_opts(SecondsFormat::Secs, false)
    }

    pub(super) fn plugin_ctx<'a>(&'a self, mode: &'a RegisteredMode) -> PluginContext<'a> {
        super::archive::plugin_ctx(&self.ws, mode)
    }

    // ---- status --------------------------------------------------------------------

    pub fn status(&self) -> ModeStatus {
        ModeStatus {
            action: self.action.clone(),
            paused: self.paused_doc(),
            exiting: self.active.as_ref().is_some_and(|s| s.exit.is_some()),
            in_flight: self.turns.len(),
            turns_recorded: self.active.as_ref().map_or(0, |s| s.log.len()),
            modes: self
                .registry
                .modes()
                .iter()
                .map(|m| (m.manifest.id.clone(), m.manifest.display_name.clone()))
                .collect(),
            warnings: self.warnings.to_vec(),
            recording_failure: self.recording_failure.clone(),
            switches: self.switches,
        }
    }

    pub fn registry(&self) -> &Arc<ModeRegistry> {
        &self.registry
    }

    pub fn workspace(&self) -> &Workspace {
        &self.ws
    }

    pub fn timezone(&self) -> Zone {
        self.tz
    }

    /// Send the folder of every session archived without a model summary to `tx`.
    pub fn notify_archives(&mut self, tx: Option<tokio::sync::mpsc::UnboundedSender<PathBuf>>) {
        self.archivist.notify(tx);
    }

    pub fn archive_notifier(&self) -> Option<tokio::sync::mpsc::UnboundedSender<PathBuf>> {
        self.archivist.notifier()
    }

    pub fn frozen_prompt_fn(&self) -> FrozenPromptFn {
        self.frozen_prompt
    }
}

fn snapshot(s: &ActiveSession) -> ModeSnapshot {
    ModeSnapshot {
        mode_id: s.mode_id.clone(),
        display_name: s.display_name.clone(),
        session_id: s.session_id.clone(),
        session_dir: s.dir.clone(),
        system_prompt: s.system_prompt.clone(),
        context_paths: s.context_paths.clone(),
    }
}
