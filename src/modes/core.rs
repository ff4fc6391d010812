//! `ModeCore`: the run-mode state machine, synchronous and runtime-free, so it can be
//! unit-tested directly; the [`super::manager::ModeManager`] actor only adds ordering.
//! Start-up recovery is in [`super::recovery`], archiving in [`super::archive`], and
//! normal-operation chat histories in [`crate::chats`].
//!
//! A turn's life: [`ModeCore::begin_turn`] (expiry catch-up, then a snapshot of the active
//! session, or of the chat's normal history) → the agent runs elsewhere →
//! [`ModeCore::end_turn`] (record in the session the turn began in, then archive if an
//! exit is pending and nothing else of the session is in flight).
//!
//! Invariants kept here (SPEC §3):
//! - at most one active session; `action.json` replaced atomically on every change;
//! - a turn is recorded exactly once, in the session that was active when it began (a
//!   turn that began outside any mode and entered one is recorded in the session it made);
//! - once an exit is requested, new turns no longer join the session; archival runs once,
//!   after the last in-flight turn of the session (and the exiting turn) is recorded;
//! - archival steps are resumable: `exit.json` marks the request, `summary.md` is written
//!   only if missing, the plugin index update is idempotent, `action.json` goes last.

use super::action::ActionDoc;
use super::plugin::{ContextPath, PluginContext};
use super::registry::{ModeRegistry, RegisteredMode};
use super::session::{self, ExitMarker, HistoryLog, HistoryView, Record, EXIT_MARKER_FILE};
use super::session_id::SessionId;
use super::switch::{self, SwitchAction};
use super::switched::{Refusal, SwitchError, Switched};
use crate::chats::ChatHistories;
use crate::fsutil;
use crate::workspace::Workspace;
use chrono::{DateTime, FixedOffset, SecondsFormat, Utc};
use chrono_tz::Tz;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tracing::{info, warn};

pub type TurnId = u64;

const MAX_WARNINGS: usize = 50;

#[derive(Debug, thiserror::Error)]
pub enum ModeError {
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Action(#[from] super::action::ActionError),
    #[error("turn {0} is not in flight (already ended, or never begun)")]
    UnknownTurn(TurnId),
    #[error("the mode manager failed while handling this request and was restarted from disk")]
    Restarted,
    #[error("the mode manager has stopped")]
    Gone,
}

pub(super) fn io<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> ModeError + 'a {
    move |source| ModeError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// Who is speaking, where: what the core needs of a turn.
#[derive(Debug, Clone)]
pub struct TurnMeta {
    pub channel: String,
    pub chat_id: String,
    pub speaker_id: String,
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
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ModeStatus {
    pub action: ActionDoc,
    pub exiting: bool,
    pub in_flight: usize,
    pub turns_recorded: usize,
    pub modes: Vec<(String, String)>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct EndOutcome {
    /// Session the turn was recorded in (`None`: normal-operation history).
    pub recorded_in: Option<String>,
    /// Session archived as a consequence of this turn ending.
    pub archived: Option<String>,
}

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

struct TurnEntry {
    /// The session the turn is recorded in, and its folder.
    session: Option<(String, PathBuf)>,
}

pub struct ModeCore {
    pub(super) ws: Workspace,
    pub(super) registry: Arc<ModeRegistry>,
    pub(super) tz: Tz,
    pub(super) action: ActionDoc,
    pub(super) active: Option<ActiveSession>,
    turns: HashMap<TurnId, TurnEntry>,
    next_turn: TurnId,
    /// Turn ids below this were handed out before a restart of the ModeManager.
    first_turn: TurnId,
    chats: ChatHistories,
    warnings: Vec<String>,
}

/// Where a switch request comes from.
#[derive(Debug, Clone, Copy)]
pub enum SwitchOrigin<'a> {
    /// The `switch_mode` tool during a turn; the user's words of that turn.
    Tool { turn_id: TurnId, user_text: &'a str },
    /// An explicit `/mode` command.
    Command,
}

impl ModeCore {
    /// An empty core over a workspace; [`ModeCore::open`] fills it from disk.
    pub(super) fn empty(ws: Workspace, registry: Arc<ModeRegistry>, tz: Tz) -> Self {
        let chats = ChatHistories::new(&ws.chats_dir());
        ModeCore {
            ws,
            registry,
            tz,
            action: ActionDoc::inactive(None),
            active: None,
            turns: HashMap::new(),
            next_turn: 1,
            first_turn: 1,
            chats,
            warnings: Vec::new(),
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

    pub(super) fn warn(&mut self, msg: String) {
        warn!("{msg}");
        if self.warnings.len() >= MAX_WARNINGS {
            self.warnings.remove(0);
        }
        self.warnings.push(msg);
    }

    pub(super) fn local(&self, t: DateTime<Utc>) -> DateTime<FixedOffset> {
        t.with_timezone(&self.tz).fixed_offset()
    }

    pub(super) fn rfc3339(t: DateTime<FixedOffset>) -> String {
        t.to_rfc3339_opts(SecondsFormat::Secs, false)
    }

    pub(super) fn plugin_ctx<'a>(&'a self, mode: &'a RegisteredMode) -> PluginContext<'a> {
        PluginContext {
            workspace: &self.ws,
            manifest: &mode.manifest,
            skill_dir: &mode.skill_dir,
            skill_name: &mode.skill_name,
        }
    }

    // ---- turns -------------------------------------------------------------------

    /// Start a turn: catch up on expiry, then snapshot what the turn runs in.
    pub fn begin_turn(&mut self, now: DateTime<Utc>, meta: TurnMeta) -> TurnTicket {
        self.check_expiry(now);
        self.maybe_archive();
        crate::failpoint::panic_once("modes.begin_turn");
        let turn_id = self.next_turn;
        self.next_turn += 1;
        let began_at = self.local(now);
        let (mode, history, session) = match self.active.as_mut() {
            Some(s) if s.exit.is_none() => {
                s.in_flight.insert(turn_id);
                (
                    Some(snapshot(s)),
                    s.log.view(),
                    Some((s.session_id.clone(), s.dir.clone())),
                )
            }
            _ => {
                let (log, warnings) = self.chats.log(&meta.channel, &meta.chat_id);
                for w in warnings {
                    self.warn(w);
                }
                (None, log.view(), None)
            }
        };
        self.turns.insert(turn_id, TurnEntry { session });
        TurnTicket {
            turn_id,
            mode,
            history,
            began_at,
        }
    }

    /// Finish a turn: record it where it belongs, then archive if an exit is due.
    ///
    /// `began_in` is the session the turn's ticket named: it places a turn this core
    /// does not know (begun before the ModeManager was restarted) — in that session if it
    /// is still the active one, else in the chat's normal history — so it is not lost.
    pub fn end_turn(
        &mut self,
        turn_id: TurnId,
        record: Record,
        began_in: Option<&str>,
    ) -> Result<EndOutcome, ModeError> {
        let session = match self.turns.remove(&turn_id) {
            Some(entry) => entry.session,
            // ended already, or never begun
            None if turn_id >= self.first_turn => return Err(ModeError::UnknownTurn(turn_id)),
            // begun before a restart of the ModeManager: place it by its ticket
            None => {
                let placed = self
                    .active
                    .as_ref()
                    .filter(|s| began_in == Some(s.session_id.as_str()))
                    .map(|s| (s.session_id.clone(), s.dir.clone()));
                if let (Some(sid), None) = (began_in, &placed) {
                    self.warn(format!(
                        "turn {turn_id} ended after a restart of the mode manager; its session {sid} is no longer active, so it is recorded in the chat's normal history"
                    ));
                }
                placed
            }
        };
        let mut out = EndOutcome::default();
        let result = match session {
            Some((sid, dir)) => {
                let active = self.active.as_mut().filter(|s| s.session_id == sid);
                let path = dir.join(session::CONVERSATION_FILE);
                let r = session::append_record(&path, &record).map_err(io("append to", &path));
                match active {
                    Some(s) => {
                        s.in_flight.remove(&turn_id);
                        if r.is_ok() {
                            s.log.push(record);
                        }
                    }
                    // a session is not archived while its turns are in flight; if that
                    // was broken anyway the record still lands in its own folder
                    None => self.warn(format!(
                        "turn {turn_id} of session {sid} ended after the session was archived; appended to its conversation.jsonl"
                    )),
                }
                if r.is_ok() {
                    out.recorded_in = Some(sid);
                }
                r
            }
            None => {
                let (r, warnings) = self.chats.append(record.clone());
                for w in warnings {
                    self.warn(w);
                }
                let path = self.chats.path(&record.channel, &record.chat_id);
                r.map_err(io("append to", &path))
            }
        };
        if let Some(s) = self.active.as_mut() {
            if s.exit_turn == Some(turn_id) {
                s.exit_turn = None;
            }
        }
        out.archived = self.maybe_archive();
        result.map(|_| out)
    }

    // ---- switching ---------------------------------------------------------------

    /// A switch request. From the `switch_mode` tool, `origin` carries the turn and the
    /// user's original words, which must name the mode and the action; from an explicit
    /// `/mode` command there are no words to check. On `Err` nothing changed.
    pub fn switch(
        &mut self,
        now: DateTime<Utc>,
        action: SwitchAction,
        mode_id: Option<&str>,
        summary: Option<String>,
        origin: SwitchOrigin<'_>,
    ) -> Result<Switched, SwitchError> {
        self.check_expiry(now);
        let available = self.registry.ids();
        let mode = match (action, mode_id) {
            (_, Some(id)) => match self.registry.get(id) {
                Some(m) => Some(m.clone()),
                None if action == SwitchAction::Exit
                    && self.active.as_ref().is_some_and(|a| a.mode_id == id) =>
                {
                    None
                }
                None => {
                    return Err(Refusal::UnknownMode {
                        id: id.to_string(),
                        available,
                    }
                    .into())
                }
            },
            (SwitchAction::Enter, None) => return Err(Refusal::ModeNeeded { available }.into()),
            (SwitchAction::Exit, None) => None,
        };
        if let SwitchOrigin::Tool { user_text, .. } = origin {
            // Exit of a mode whose skill no longer loads: validate against the stored name.
            let manifest = match &mode {
                Some(m) => m.manifest.clone(),
                None => match &self.active {
                    Some(a) => super::manifest::ModeManifest::named(&a.mode_id, &a.display_name),
                    None => return Err(Refusal::NoActiveMode.into()),
                },
            };
            switch::validate(&manifest, action, user_text).map_err(Refusal::Words)?;
        }
        let turn_id = match origin {
            SwitchOrigin::Tool { turn_id, .. } => Some(turn_id),
            SwitchOrigin::Command => None,
        };
        match action {
            SwitchAction::Enter => {
                let mode = mode.expect("enter always names a registered mode (checked above)");
                self.enter(now, mode, turn_id)
            }
            SwitchAction::Exit => {
                let at = Self::rfc3339(self.local(now));
                self.request_exit(mode_id, "user", summary, at, turn_id)
            }
        }
    }

    fn enter(
        &mut self,
        now: DateTime<Utc>,
        mode: RegisteredMode,
        turn_id: Option<TurnId>,
    ) -> Result<Switched, SwitchError> {
        if let Some(a) = &self.active {
            let display_name = a.display_name.clone();
            return Err(if a.exit.is_some() {
                Refusal::StillArchiving { display_name }
            } else if a.mode_id == mode.manifest.id {
                Refusal::AlreadyIn {
                    display_name,
                    session_id: a.session_id.clone(),
                }
            } else {
                Refusal::OtherActive { display_name }
            }
            .into());
        }
        if let Err(e) = self.create_session(now, &mode) {
            self.warn(format!(
                "could not enter {}: {e}",
                mode.manifest.display_name
            ));
            return Err(SwitchError::Failed(e));
        }
        let s = self
            .active
            .as_mut()
            .expect("create_session sets the active session");
        if let Some(t) = turn_id.and_then(|t| self.turns.get_mut(&t).map(|e| (t, e))) {
            if t.1.session.is_none() {
                t.1.session = Some((s.session_id.clone(), s.dir.clone()));
                s.in_flight.insert(t.0);
            }
        }
        info!(mode = %s.mode_id, session = %s.session_id, "mode entered");
        Ok(Switched::Entered {
            mode_id: s.mode_id.clone(),
            display_name: s.display_name.clone(),
            session_id: s.session_id.clone(),
            session_dir: s.dir.clone(),
        })
    }

    /// The `action.json` of an active session.
    pub(super) fn active_doc(
        &self,
        mode: &RegisteredMode,
        session_id: &str,
        dir: &Path,
        started: DateTime<FixedOffset>,
    ) -> ActionDoc {
        ActionDoc {
            schema_version: super::action::SCHEMA_VERSION,
            active: true,
            mode_id: Some(mode.manifest.id.clone()),
            display_name: Some(mode.manifest.display_name.clone()),
            session_id: Some(session_id.to_string()),
            skill_name: Some(mode.skill_name.clone()),
            started_at: Some(Self::rfc3339(started)),
            expires_at: Some(Self::rfc3339(
                mode.manifest.expiry().after(started, self.tz),
            )),
            session_dir: Some(dir.display().to_string()),
            exit_reason: None,
        }
    }

    fn create_session(
        &mut self,
        now: DateTime<Utc>,
        mode: &RegisteredMode,
    ) -> Result<(), ModeError> {
        let ctx = self.plugin_ctx(mode);
        let started = self.local(now);
        let prefix = mode.plugin.session_prefix(&ctx);
        let base = self.ws.sessions_dir(&mode.manifest.id);
        let (session_id, dir) = loop {
            let sid = SessionId::new(&prefix, started).to_string();
            let dir = base.join(&sid);
            if !dir.exists() {
                break (sid, dir);
            }
        };
        fsutil::create_private_dirs(&dir).map_err(io("create", &dir))?;
        mode.plugin
            .prepare(&ctx)
            .map_err(io("prepare plugin data for", &dir))?;
        let skill_md = mode.skill_dir.join("SKILL.md");
        let static_prompt = mode
            .plugin
            .static_prompt(&ctx)
            .map_err(io("read", &skill_md))?;
        let system_prompt = crate::prompt::frozen_mode_prompt(mode, &static_prompt);
        let prompt_path = dir.join(session::SYSTEM_PROMPT_FILE);
        fsutil::write_atomic(&prompt_path, system_prompt.as_bytes())
            .map_err(io("write", &prompt_path))?;
        let conv = dir.join(session::CONVERSATION_FILE);
        fsutil::create_private(&conv)
            .and_then(|f| f.sync_all())
            .and_then(|_| fsutil::sync_dir(&dir))
            .map_err(io("create", &conv))?;
        let doc = self.active_doc(mode, &session_id, &dir, started);
        let expires_at =
            DateTime::parse_from_rfc3339(doc.expires_at.as_deref().unwrap_or_default())
                .expect("active_doc writes RFC 3339");
        doc.write(&self.ws.action_file())?;
        let context_paths = mode.plugin.runtime_context(&ctx);
        self.action = doc;
        self.active = Some(ActiveSession {
            mode: Some(mode.clone()),
            mode_id: mode.manifest.id.clone(),
            display_name: mode.manifest.display_name.clone(),
            session_id,
            dir,
            started_at: Self::rfc3339(started),
            expires_at,
            system_prompt: system_prompt.into(),
            context_paths,
            log: HistoryLog::default(),
            in_flight: HashSet::new(),
            exit: None,
            exit_turn: None,
        });
        Ok(())
    }

    /// Mark the active session as exiting (`exit.json`), then archive at once if nothing
    /// of it is in flight. `requested_at` becomes the session's recorded end.
    fn request_exit(
        &mut self,
        mode_id: Option<&str>,
        reason: &str,
        summary: Option<String>,
        requested_at: String,
        turn_id: Option<TurnId>,
    ) -> Result<Switched, SwitchError> {
        let Some(s) = self.active.as_mut() else {
            return Err(Refusal::NoActiveMode.into());
        };
        if let Some(id) = mode_id {
            if id != s.mode_id {
                return Err(Refusal::NotActive {
                    requested: id.to_string(),
                    active_id: s.mode_id.clone(),
                    active_name: s.display_name.clone(),
                }
                .into());
            }
        }
        let (mode_id, display_name) = (s.mode_id.clone(), s.display_name.clone());
        if s.exit.is_some() {
            return Ok(Switched::AlreadyEnding {
                mode_id,
                display_name,
            });
        }
        let marker = ExitMarker {
            reason: reason.to_string(),
            summary,
            requested_at,
        };
        let path = s.dir.join(EXIT_MARKER_FILE);
        let bytes = serde_json::to_vec_pretty(&marker).expect("ExitMarker always serializes");
        if let Err(e) = fsutil::write_atomic(&path, &bytes) {
            self.warn(format!("could not write {}: {e}", path.display()));
            return Err(SwitchError::Failed(ModeError::Io {
                what: "write",
                path,
                source: e,
            }));
        }
        s.exit = Some(marker);
        crate::failpoint::hit("archive.after_marker");
        if let Some(t) = turn_id {
            if !s.in_flight.contains(&t) && self.turns.contains_key(&t) {
                s.exit_turn = Some(t);
            }
        }
        info!(mode = %s.mode_id, session = %s.session_id, reason, "mode exit requested");
        Ok(match self.maybe_archive() {
            Some(session_id) => Switched::Exited {
                mode_id,
                display_name,
                session_id,
            },
            None => Switched::ExitRequested {
                mode_id,
                display_name,
            },
        })
    }

    /// Expire the active session if its time has passed (its recorded end is
    /// `expires_at`, however late the check runs). Returns the archived session.
    pub fn check_expiry(&mut self, now: DateTime<Utc>) -> Option<String> {
        let expires_at = self
            .active
            .as_ref()
            .filter(|s| s.exit.is_none() && now >= s.expires_at.with_timezone(&Utc))
            .map(|s| Self::rfc3339(s.expires_at))?;
        match self.request_exit(None, "expired", None, expires_at, None) {
            Ok(Switched::Exited { session_id, .. }) => Some(session_id),
            Ok(_) => None,
            Err(e) => {
                self.warn(format!("could not expire the active session: {e}"));
                None
            }
        }
    }

    // ---- status --------------------------------------------------------------------

    pub fn status(&self) -> ModeStatus {
        ModeStatus {
            action: self.action.clone(),
            exiting: self.active.as_ref().is_some_and(|s| s.exit.is_some()),
            in_flight: self.turns.len(),
            turns_recorded: self.active.as_ref().map_or(0, |s| s.log.len()),
            modes: self
                .registry
                .modes()
                .iter()
                .map(|m| (m.manifest.id.clone(), m.manifest.display_name.clone()))
                .collect(),
            warnings: self.warnings.clone(),
        }
    }

    pub fn registry(&self) -> &Arc<ModeRegistry> {
        &self.registry
    }

    pub fn workspace(&self) -> &Workspace {
        &self.ws
    }

    pub fn timezone(&self) -> Tz {
        self.tz
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
