//! `ModeCore`: the run-mode state machine, synchronous and runtime-free, so it can be
//! unit-tested directly; the [`super::manager::ModeManager`] actor only adds ordering.
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
use super::plugin::{ArchivedSession, ContextPath, PluginContext};
use super::registry::{ModeRegistry, RegisteredMode};
use super::session::{
    self, ExitMarker, HistoryLog, HistoryView, Record, CONVERSATION_FILE, EXIT_MARKER_FILE,
    INDEX_PENDING_FILE, SUMMARY_FILE, SYSTEM_PROMPT_FILE,
};
use super::switch::{self, SwitchAction};
use crate::fsutil;
use crate::workspace::Workspace;
use chrono::{DateTime, FixedOffset, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tracing::{info, warn};

pub type TurnId = u64;

const MAX_WARNINGS: usize = 50;
const MAX_CACHED_CHATS: usize = 256;

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
    #[error("the mode manager has stopped")]
    Gone,
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> ModeError + 'a {
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

struct ActiveSession {
    /// `None` when the mode's skill no longer loads; the frozen prompt still serves.
    mode: Option<RegisteredMode>,
    mode_id: String,
    display_name: String,
    session_id: String,
    dir: PathBuf,
    started_at: String,
    expires_at: DateTime<FixedOffset>,
    system_prompt: Arc<str>,
    context_paths: Vec<ContextPath>,
    log: HistoryLog,
    in_flight: HashSet<TurnId>,
    exit: Option<ExitMarker>,
    /// A turn outside the session that asked for the exit; archival waits for its end.
    exit_turn: Option<TurnId>,
}

struct TurnEntry {
    meta: TurnMeta,
    session_id: Option<String>,
}

pub struct ModeCore {
    ws: Workspace,
    registry: Arc<ModeRegistry>,
    tz: Tz,
    action: ActionDoc,
    active: Option<ActiveSession>,
    turns: HashMap<TurnId, TurnEntry>,
    next_turn: TurnId,
    chats: HashMap<String, HistoryLog>,
    /// Load order of `chats`, for eviction (voice makes a new chat per wake).
    chat_order: std::collections::VecDeque<String>,
    warnings: Vec<String>,
}

impl ModeCore {
    /// Open the mode state of a workspace: read `action.json` (a corrupt one is set aside
    /// and reported), reload the active session, resume an interrupted archive, and
    /// archive orphaned session folders (a crash during entry or a lost `action.json`).
    pub fn open(
        ws: Workspace,
        registry: Arc<ModeRegistry>,
        tz: Tz,
        now: DateTime<Utc>,
    ) -> Result<Self, ModeError> {
        let mut core = ModeCore {
            ws,
            registry,
            tz,
            action: ActionDoc::inactive(None),
            active: None,
            turns: HashMap::new(),
            next_turn: 1,
            chats: HashMap::new(),
            chat_order: Default::default(),
            warnings: Vec::new(),
        };
        for issue in core.registry.issues().to_vec() {
            core.warn(format!("mode not loaded: {issue}"));
        }
        let path = core.ws.action_file();
        match ActionDoc::read(&path) {
            Ok(Some(doc)) => core.action = doc,
            Ok(None) => core.action.write(&path)?,
            Err(super::action::ActionError::Corrupt { message, .. }) => {
                let aside = fsutil::set_aside(&path, "corrupt").map_err(io("back up", &path))?;
                let restored = core.rebuild_action(now)?;
                core.warn(format!(
                    "{} is corrupt ({message}); kept as {}; {}",
                    path.display(),
                    aside.display(),
                    match &restored {
                        Some(sid) => format!("the unfinished session {sid} was restored from its folder and continues"),
                        None => "no unfinished session was found; the mode state starts inactive".into(),
                    }
                ));
                if restored.is_none() {
                    core.action = ActionDoc::inactive(Some("recovered".into()));
                    core.action.write(&path)?;
                }
            }
            Err(e) => return Err(e.into()),
        }
        if core.action.active {
            core.restore_active()?;
        }
        core.recover_orphans(now)?;
        core.maybe_archive();
        core.retry_pending_indexes();
        Ok(core)
    }

    fn warn(&mut self, msg: String) {
        warn!("{msg}");
        if self.warnings.len() >= MAX_WARNINGS {
            self.warnings.remove(0);
        }
        self.warnings.push(msg);
    }

    fn local(&self, t: DateTime<Utc>) -> DateTime<FixedOffset> {
        t.with_timezone(&self.tz).fixed_offset()
    }

    fn rfc3339(t: DateTime<FixedOffset>) -> String {
        t.to_rfc3339_opts(SecondsFormat::Secs, false)
    }

    fn plugin_ctx<'a>(&'a self, mode: &'a RegisteredMode) -> PluginContext<'a> {
        PluginContext {
            workspace: &self.ws,
            manifest: &mode.manifest,
            skill_dir: &mode.skill_dir,
            skill_name: &mode.skill_name,
        }
    }

    fn restore_active(&mut self) -> Result<(), ModeError> {
        let doc = self.action.clone();
        let field = |v: &Option<String>| v.clone().expect("checked by ActionDoc::check");
        let mode_id = field(&doc.mode_id);
        let session_id = field(&doc.session_id);
        let dir = self.ws.sessions_dir(&mode_id).join(&session_id);
        let mode = self.registry.get(&mode_id).cloned();
        if mode.is_none() {
            self.warn(format!(
                "active mode {mode_id:?} is not loaded; session {session_id} continues on its frozen prompt"
            ));
        }
        let prompt_path = dir.join(SYSTEM_PROMPT_FILE);
        let system_prompt = match std::fs::read_to_string(&prompt_path) {
            Ok(t) => t,
            Err(e) => {
                self.warn(format!(
                    "{}: {e}; the session continues without its frozen mode prompt",
                    prompt_path.display()
                ));
                String::new()
            }
        };
        let conv = dir.join(CONVERSATION_FILE);
        let loaded = session::load_records(&conv).map_err(io("read", &conv))?;
        for w in loaded.warnings {
            self.warn(w);
        }
        let exit_path = dir.join(EXIT_MARKER_FILE);
        let exit = match std::fs::read(&exit_path) {
            Ok(b) => match serde_json::from_slice::<ExitMarker>(&b) {
                Ok(m) => Some(m),
                Err(e) => {
                    self.warn(format!(
                        "{}: unreadable ({e}); treating as a user exit",
                        exit_path.display()
                    ));
                    Some(ExitMarker {
                        reason: "user".into(),
                        summary: None,
                        requested_at: doc.started_at.clone().unwrap_or_default(),
                    })
                }
            },
            Err(_) => None,
        };
        let context_paths = mode
            .as_ref()
            .map(|m| m.plugin.runtime_context(&self.plugin_ctx(m)))
            .unwrap_or_default();
        let expires_at = DateTime::parse_from_rfc3339(&field(&doc.expires_at))
            .expect("checked by ActionDoc::check");
        if exit.is_some() {
            info!(session = %session_id, "resuming an interrupted archive");
        }
        self.active = Some(ActiveSession {
            mode,
            mode_id,
            display_name: field(&doc.display_name),
            session_id,
            dir,
            started_at: field(&doc.started_at),
            expires_at,
            system_prompt: system_prompt.into(),
            context_paths,
            log: HistoryLog::from_records(loaded.records),
            in_flight: HashSet::new(),
            exit,
            exit_turn: None,
        });
        Ok(())
    }

    /// After a corrupt `action.json`: rebuild it from the newest unfinished session of a
    /// loaded mode (its folder holds everything but the lifecycle), so a live cooking
    /// session survives a damaged file. Returns the restored session id.
    fn rebuild_action(&mut self, now: DateTime<Utc>) -> Result<Option<String>, ModeError> {
        let root = self.ws.modes_dir().join("sessions");
        let mut best: Option<(DateTime<FixedOffset>, RegisteredMode, PathBuf)> = None;
        for mode_dir in read_dirs(&root) {
            let Some(mode) = self.registry.get(&file_name(&mode_dir)).cloned() else {
                continue;
            };
            for sdir in read_dirs(&mode_dir) {
                if sdir.join(SUMMARY_FILE).exists() || !sdir.join(SYSTEM_PROMPT_FILE).exists() {
                    continue;
                }
                // Only a session the family actually used (it has records) and whose id
                // carries its start time: a stray copy or a half-made entry is archived
                // by `recover_orphans` instead of being brought back.
                let has_records = session::load_records(&sdir.join(CONVERSATION_FILE))
                    .is_ok_and(|l| !l.records.is_empty());
                let Some(started) = self.session_start(&sdir).filter(|_| has_records) else {
                    continue;
                };
                if started > self.local(now) {
                    continue;
                }
                if best.as_ref().is_none_or(|(t, _, _)| started > *t) {
                    best = Some((started, mode.clone(), sdir));
                }
            }
        }
        let Some((started, mode, sdir)) = best else {
            return Ok(None);
        };
        let session_id = file_name(&sdir);
        let doc = self.active_doc(&mode, &session_id, &sdir, started);
        doc.write(&self.ws.action_file())?;
        self.action = doc;
        Ok(Some(session_id))
    }

    /// When a session started: from its id (`…-YYYYMMDD-HHMMSS-xxxxxx`), else its first record.
    fn session_start(&self, sdir: &Path) -> Option<DateTime<FixedOffset>> {
        let id = file_name(sdir);
        let parts: Vec<&str> = id.rsplitn(4, '-').collect();
        if parts.len() == 4 {
            let stamp = format!("{}{}", parts[2], parts[1]);
            if let Ok(naive) = chrono::NaiveDateTime::parse_from_str(&stamp, "%Y%m%d%H%M%S") {
                if let Some(t) = self.tz.from_local_datetime(&naive).earliest() {
                    return Some(t.fixed_offset());
                }
            }
        }
        let first = session::load_records(&sdir.join(CONVERSATION_FILE))
            .ok()?
            .records
            .into_iter()
            .next()?;
        DateTime::parse_from_rfc3339(&first.timestamp).ok()
    }

    /// Session folders without `summary.md` that are not the active session.
    fn recover_orphans(&mut self, now: DateTime<Utc>) -> Result<(), ModeError> {
        let root = self.ws.modes_dir().join("sessions");
        let mut orphans = Vec::new();
        for mode_dir in read_dirs(&root) {
            for sdir in read_dirs(&mode_dir) {
                let is_active = self.active.as_ref().is_some_and(|a| a.dir == sdir);
                if !is_active && !sdir.join(SUMMARY_FILE).exists() {
                    if session_id_stamp(&file_name(&sdir)).is_some() {
                        orphans.push((mode_dir.clone(), sdir));
                    } else {
                        self.warn(format!(
                            "{} is not a session folder homebot made; left alone",
                            sdir.display()
                        ));
                    }
                }
            }
        }
        for (mode_dir, sdir) in orphans {
            let mode_id = file_name(&mode_dir);
            let session_id = file_name(&sdir);
            let conv = sdir.join(CONVERSATION_FILE);
            let loaded = session::load_records(&conv).map_err(io("read", &conv))?;
            for w in loaded.warnings {
                self.warn(w);
            }
            let mode = self.registry.get(&mode_id).cloned();
            let display_name = mode
                .as_ref()
                .map(|m| m.manifest.display_name.clone())
                .unwrap_or_else(|| mode_id.clone());
            let marker = ExitMarker {
                reason: "recovered".into(),
                summary: None,
                requested_at: Self::rfc3339(self.local(now)),
            };
            let started = loaded
                .records
                .first()
                .map(|r| r.timestamp.clone())
                .unwrap_or_else(|| "unknown".into());
            self.archive_files(
                mode.as_ref(),
                &mode_id,
                &display_name,
                &session_id,
                &sdir,
                &started,
                &marker,
                &loaded.records,
            )?;
            self.warn(format!(
                "session {session_id} was left unfinished (no summary.md, not active); archived as `recovered`"
            ));
        }
        Ok(())
    }

    // ---- turns -------------------------------------------------------------------

    /// Start a turn: catch up on expiry, then snapshot what the turn runs in.
    pub fn begin_turn(&mut self, now: DateTime<Utc>, meta: TurnMeta) -> TurnTicket {
        self.check_expiry(now);
        self.maybe_archive();
        let turn_id = self.next_turn;
        self.next_turn += 1;
        let began_at = self.local(now);
        let (mode, history, session_id) = match self.active.as_mut() {
            Some(s) if s.exit.is_none() => {
                s.in_flight.insert(turn_id);
                (Some(snapshot(s)), s.log.view(), Some(s.session_id.clone()))
            }
            _ => (None, self.chat_log(&meta).view(), None),
        };
        self.turns.insert(turn_id, TurnEntry { meta, session_id });
        TurnTicket {
            turn_id,
            mode,
            history,
            began_at,
        }
    }

    /// Finish a turn: record it where it belongs, then archive if an exit is due.
    pub fn end_turn(&mut self, turn_id: TurnId, record: Record) -> Result<EndOutcome, ModeError> {
        let entry = self
            .turns
            .remove(&turn_id)
            .ok_or(ModeError::UnknownTurn(turn_id))?;
        let mut out = EndOutcome::default();
        let result = match (&entry.session_id, self.active.as_mut()) {
            (Some(sid), Some(s)) if &s.session_id == sid => {
                s.in_flight.remove(&turn_id);
                let path = s.dir.join(CONVERSATION_FILE);
                let r = session::append_record(&path, &record).map_err(io("append to", &path));
                if r.is_ok() {
                    s.log.push(record);
                    out.recorded_in = Some(sid.clone());
                }
                r
            }
            (Some(sid), _) => {
                // Cannot happen: a session is not archived while its turns are in flight.
                unreachable!("turn {turn_id} of session {sid} ended after the session was archived")
            }
            (None, _) => {
                // the in-memory log first: loading it after the append would count the
                // record twice
                let log = self.chat_log(&entry.meta);
                let path = self.chat_path(&entry.meta);
                let r = session::append_record(&path, &record).map_err(io("append to", &path));
                if r.is_ok() {
                    log.push(record);
                }
                r
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
    /// `/mode` command there are no words to check. `Ok` and `Err` are both messages for
    /// the user / LLM; `Err` means nothing changed.
    pub fn switch(
        &mut self,
        now: DateTime<Utc>,
        action: SwitchAction,
        mode_id: Option<&str>,
        summary: Option<String>,
        origin: SwitchOrigin<'_>,
    ) -> Result<String, String> {
        self.check_expiry(now);
        let ids = self.registry.ids().join(", ");
        let mode = match (action, mode_id) {
            (_, Some(id)) => match self.registry.get(id) {
                Some(m) => Some(m.clone()),
                None if action == SwitchAction::Exit
                    && self.active.as_ref().is_some_and(|a| a.mode_id == id) =>
                {
                    None
                }
                None => return Err(format!("refused: unknown mode {id:?}. 可用模式: {ids}")),
            },
            (SwitchAction::Enter, None) => {
                return Err(format!(
                    "refused: which mode? 需要 mode_id，可用模式: {ids}"
                ))
            }
            (SwitchAction::Exit, None) => None,
        };
        if let SwitchOrigin::Tool { user_text, .. } = origin {
            // Exit of a mode whose skill no longer loads: validate against the stored name.
            let manifest = match &mode {
                Some(m) => m.manifest.clone(),
                None => match &self.active {
                    Some(a) => super::manifest::ModeManifest {
                        id: a.mode_id.clone(),
                        display_name: a.display_name.clone(),
                        entrypoint: None,
                        aliases: vec![],
                        enter_verbs: vec![],
                        exit_verbs: vec![],
                        expiry: None,
                        context: None,
                    },
                    None => return Err("refused: no mode is active. 当前没有活动模式。".into()),
                },
            };
            switch::validate(&manifest, action, user_text)?;
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
            SwitchAction::Exit => self.request_exit(now, mode_id, "user", summary, turn_id),
        }
    }

    fn enter(
        &mut self,
        now: DateTime<Utc>,
        mode: RegisteredMode,
        turn_id: Option<TurnId>,
    ) -> Result<String, String> {
        if let Some(a) = &self.active {
            return Err(if a.exit.is_some() {
                format!("refused: {} is still being archived; try again in a moment. 上一个模式正在结束归档，请稍后再试。", a.display_name)
            } else if a.mode_id == mode.manifest.id {
                format!(
                    "refused: already in {0}. 已经在{0}中（会话 {1}）。",
                    a.display_name, a.session_id
                )
            } else {
                format!(
                    "refused: {0} is active; only one mode at a time. 当前已在{0}中，一次只能有一个模式，请先退出{0}。",
                    a.display_name
                )
            });
        }
        match self.create_session(now, &mode) {
            Ok(()) => {}
            Err(e) => {
                let msg = format!("could not enter {}: {e}", mode.manifest.display_name);
                self.warn(msg.clone());
                return Err(format!("failed: {msg}"));
            }
        }
        let s = self
            .active
            .as_mut()
            .expect("create_session sets the active session");
        if let Some(t) = turn_id.and_then(|t| self.turns.get_mut(&t).map(|e| (t, e))) {
            if t.1.session_id.is_none() {
                t.1.session_id = Some(s.session_id.clone());
                s.in_flight.insert(t.0);
            }
        }
        info!(mode = %s.mode_id, session = %s.session_id, "mode entered");
        Ok(format!(
            "ok: entered {} (session {}). 已进入{}。会话目录: {}。从现在起，对话会记录到本模式会话中，跨频道、跨唤醒延续。",
            s.mode_id,
            s.session_id,
            s.display_name,
            s.dir.display()
        ))
    }

    /// The `action.json` of an active session.
    fn active_doc(
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
            expires_at: Some(Self::rfc3339(expiry_time(
                started,
                &mode.manifest.expiry(),
                self.tz,
            ))),
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
            let sid = format!(
                "{prefix}-{}-{:06x}",
                started.format("%Y%m%d-%H%M%S"),
                rand::random::<u32>() & 0xff_ffff
            );
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
        let system_prompt = frozen_prompt(mode, &static_prompt);
        let prompt_path = dir.join(SYSTEM_PROMPT_FILE);
        fsutil::write_atomic(&prompt_path, system_prompt.as_bytes())
            .map_err(io("write", &prompt_path))?;
        let conv = dir.join(CONVERSATION_FILE);
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

    fn request_exit(
        &mut self,
        now: DateTime<Utc>,
        mode_id: Option<&str>,
        reason: &str,
        summary: Option<String>,
        turn_id: Option<TurnId>,
    ) -> Result<String, String> {
        let requested_at = Self::rfc3339(self.local(now));
        let Some(s) = self.active.as_mut() else {
            return Err("refused: no mode is active. 当前没有活动模式。".into());
        };
        if let Some(id) = mode_id {
            if id != s.mode_id {
                return Err(format!(
                    "refused: {id:?} is not active; the active mode is {} ({}). 当前活动的是{}。",
                    s.mode_id, s.display_name, s.display_name
                ));
            }
        }
        if s.exit.is_some() {
            return Ok(format!(
                "ok: {} is already ending. {}正在结束。",
                s.mode_id, s.display_name
            ));
        }
        let marker = ExitMarker {
            reason: reason.to_string(),
            summary,
            requested_at,
        };
        let path = s.dir.join(EXIT_MARKER_FILE);
        let bytes = serde_json::to_vec_pretty(&marker).expect("ExitMarker always serializes");
        if let Err(e) = fsutil::write_atomic(&path, &bytes) {
            let msg = format!("could not write {}: {e}", path.display());
            self.warn(msg.clone());
            return Err(format!("failed: {msg}"));
        }
        s.exit = Some(marker);
        crate::failpoint::hit("archive.after_marker");
        if let Some(t) = turn_id {
            if !s.in_flight.contains(&t) && self.turns.contains_key(&t) {
                s.exit_turn = Some(t);
            }
        }
        let (mode_id, display) = (s.mode_id.clone(), s.display_name.clone());
        info!(mode = %s.mode_id, session = %s.session_id, reason, "mode exit requested");
        Ok(match self.maybe_archive() {
            Some(sid) => format!(
                "ok: {mode_id} ended; session {sid} archived with a summary. 已退出{display}，本次会话已归档。"
            ),
            None => format!(
                "ok: {mode_id} will end after this reply; the session is archived with a summary. 已请求退出{display}，本轮回复后归档。"
            ),
        })
    }

    /// Expire the active session if its time has passed. Returns the archived session.
    pub fn check_expiry(&mut self, now: DateTime<Utc>) -> Option<String> {
        let expired = self
            .active
            .as_ref()
            .is_some_and(|s| s.exit.is_none() && now >= s.expires_at.with_timezone(&Utc));
        if expired {
            let at = self.active.as_ref().map(|s| Self::rfc3339(s.expires_at));
            let _ = self.request_exit(now, None, "expired", None, None);
            if let (Some(s), Some(at)) = (self.active.as_mut(), at) {
                if let Some(m) = s.exit.as_mut() {
                    m.requested_at = at;
                }
            }
            return self.maybe_archive();
        }
        None
    }

    /// Archive the active session if its exit is due. Errors are kept as warnings and
    /// retried at the next call (every turn start/end and every cron tick).
    fn maybe_archive(&mut self) -> Option<String> {
        let due = self
            .active
            .as_ref()
            .is_some_and(|s| s.exit.is_some() && s.in_flight.is_empty() && s.exit_turn.is_none());
        if !due {
            return None;
        }
        let s = self.active.take().expect("due implies an active session");
        let marker = s.exit.clone().expect("due implies an exit request");
        let result = s.log.view().with(|records| {
            self.archive_files(
                s.mode.as_ref(),
                &s.mode_id,
                &s.display_name,
                &s.session_id,
                &s.dir,
                &s.started_at,
                &marker,
                records,
            )
        });
        match result {
            Ok(()) => {
                info!(mode = %s.mode_id, session = %s.session_id, reason = %marker.reason, "mode archived");
                Some(s.session_id)
            }
            Err(e) => {
                let sid = s.session_id.clone();
                self.active = Some(s);
                self.warn(format!("archiving session {sid} failed, will retry: {e}"));
                None
            }
        }
    }

    /// Archive steps after the records: summary.md (only if missing) → plugin index →
    /// `action.json` inactive. Each is safe to repeat.
    #[allow(clippy::too_many_arguments)]
    fn archive_files(
        &mut self,
        mode: Option<&RegisteredMode>,
        mode_id: &str,
        display_name: &str,
        session_id: &str,
        dir: &Path,
        started_at: &str,
        marker: &ExitMarker,
        records: &[Record],
    ) -> Result<(), ModeError> {
        let summary_path = dir.join(SUMMARY_FILE);
        let summary_text = match std::fs::read_to_string(&summary_path) {
            Ok(t) => t,
            Err(_) => {
                let text = session::render_summary(&session::SummaryInput {
                    display_name,
                    mode_id,
                    session_id,
                    started_at,
                    ended_at: &marker.requested_at,
                    exit_reason: &marker.reason,
                    llm_summary: marker.summary.as_deref(),
                    records,
                });
                fsutil::write_atomic(&summary_path, text.as_bytes())
                    .map_err(io("write", &summary_path))?;
                crate::failpoint::hit("archive.after_summary");
                text
            }
        };
        match mode {
            Some(m) => {
                let archived = ArchivedSession {
                    session_id,
                    session_dir: dir,
                    started_at,
                    ended_at: &marker.requested_at,
                    exit_reason: &marker.reason,
                    summary_path: &summary_path,
                    summary_text: &summary_text,
                    llm_summary: marker.summary.as_deref(),
                    records,
                };
                if let Err(e) = m.plugin.after_exit(&self.plugin_ctx(m), &archived) {
                    // The session still ends: a broken index must not keep a mode open
                    // forever. The update is retried at the next start.
                    self.mark_index_pending(dir, &e.to_string());
                }
            }
            None => self.mark_index_pending(dir, &format!("mode {mode_id:?} is not loaded")),
        }
        crate::failpoint::hit("archive.after_index");
        let is_current =
            self.action.active && self.action.session_id.as_deref() == Some(session_id);
        if is_current {
            let doc = ActionDoc::inactive(Some(marker.reason.clone()));
            doc.write(&self.ws.action_file())?;
            self.action = doc;
        }
        Ok(())
    }

    fn mark_index_pending(&mut self, dir: &Path, why: &str) {
        let session = file_name(dir);
        let path = dir.join(INDEX_PENDING_FILE);
        if let Err(e) = fsutil::write_atomic(&path, why.as_bytes()) {
            self.warn(format!("{}: {e}", path.display()));
        }
        self.warn(format!(
            "session {session}: the plugin's history index could not be updated ({why}); the session is archived and the index update will be retried at the next start"
        ));
    }

    /// Retry the plugin index update of sessions archived while it failed.
    fn retry_pending_indexes(&mut self) {
        let root = self.ws.modes_dir().join("sessions");
        for mode_dir in read_dirs(&root) {
            let Some(mode) = self.registry.get(&file_name(&mode_dir)).cloned() else {
                continue;
            };
            for sdir in read_dirs(&mode_dir) {
                let pending = sdir.join(INDEX_PENDING_FILE);
                if !pending.exists() {
                    continue;
                }
                let session_id = file_name(&sdir);
                let records = session::load_records(&sdir.join(CONVERSATION_FILE))
                    .map(|l| l.records)
                    .unwrap_or_default();
                let marker = std::fs::read(sdir.join(EXIT_MARKER_FILE))
                    .ok()
                    .and_then(|b| serde_json::from_slice::<ExitMarker>(&b).ok());
                let summary_path = sdir.join(SUMMARY_FILE);
                let summary_text = std::fs::read_to_string(&summary_path).unwrap_or_default();
                let started = records
                    .first()
                    .map(|r| r.timestamp.clone())
                    .unwrap_or_default();
                let archived = ArchivedSession {
                    session_id: &session_id,
                    session_dir: &sdir,
                    started_at: &started,
                    ended_at: marker
                        .as_ref()
                        .map_or("unknown", |m| m.requested_at.as_str()),
                    exit_reason: marker.as_ref().map_or("recovered", |m| m.reason.as_str()),
                    summary_path: &summary_path,
                    summary_text: &summary_text,
                    llm_summary: marker.as_ref().and_then(|m| m.summary.as_deref()),
                    records: &records,
                };
                match mode.plugin.after_exit(&self.plugin_ctx(&mode), &archived) {
                    Ok(()) => {
                        let _ = std::fs::remove_file(&pending);
                        info!(session = %session_id, "pending history index update done");
                    }
                    Err(e) => self.warn(format!(
                        "session {session_id}: history index update failed again ({e}); {} kept",
                        pending.display()
                    )),
                }
            }
        }
    }

    // ---- normal-operation history -------------------------------------------------

    fn chat_path(&self, meta: &TurnMeta) -> PathBuf {
        self.ws
            .chats_dir()
            .join(file_safe(&meta.channel))
            .join(format!("{}.jsonl", file_safe(&meta.chat_id)))
    }

    fn chat_log(&mut self, meta: &TurnMeta) -> HistoryLog {
        let key = format!("{}\u{0}{}", meta.channel, meta.chat_id);
        if let Some(l) = self.chats.get(&key) {
            return l.clone();
        }
        let path = self.chat_path(meta);
        let loaded = match session::load_records(&path) {
            Ok(l) => l,
            Err(e) => {
                self.warn(format!(
                    "{}: {e}; starting this chat without history",
                    path.display()
                ));
                session::Loaded::default()
            }
        };
        for w in loaded.warnings {
            self.warn(w);
        }
        let log = HistoryLog::from_records(loaded.records);
        self.chats.insert(key.clone(), log.clone());
        self.chat_order.push_back(key);
        // Only recently used chats stay in memory; an evicted one reloads from its file.
        while self.chat_order.len() > MAX_CACHED_CHATS {
            if let Some(old) = self.chat_order.pop_front() {
                self.chats.remove(&old);
            }
        }
        log
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
}

/// Where a switch request comes from.
#[derive(Debug, Clone, Copy)]
pub enum SwitchOrigin<'a> {
    /// The `switch_mode` tool during a turn; the user's words of that turn.
    Tool { turn_id: TurnId, user_text: &'a str },
    /// An explicit `/mode` command.
    Command,
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

/// The frozen part of a mode's system prompt: fixed mode notes, the context policy's
/// labelled blocks, then the skill's own prompt.
pub fn frozen_prompt(mode: &RegisteredMode, static_prompt: &str) -> String {
    let m = &mode.manifest;
    let mut out = format!(
        "## 运行模式：{name}（{id}）\n\n\
         你现在处于“{name}”。这是全家共享的上下文空间，不属于某个频道或某个人：\n\
         - 本模式的每一轮对话都由后端完整记录，跨频道（语音、QQ、终端）和跨语音唤醒延续；\n\
         - 多位家庭成员可能交替说话；当前说话人、时间和频道在每条用户消息开头的 [上下文] 块里；\n\
         - 与模式主题无关的话题照常回答；\n\
         - 只有当用户原话明确包含“{name}”和退出动作（关闭/退出/结束）时，才调用 switch_mode(action=\"exit\", mode_id=\"{id}\")，可附一句简短 summary；\n\
         - 过往会话的索引和总结按需用 read_file 读取（路径见 [上下文]），不要凭记忆编造。\n",
        name = m.display_name,
        id = m.id
    );
    if let Some(ctx) = &m.context {
        if let Some(role) = &ctx.role {
            out.push_str(&format!("\n[ROLE]\n{}\n", role.trim()));
        }
        if !ctx.rules.is_empty() {
            out.push_str("\n[RULES]\n");
            for r in &ctx.rules {
                out.push_str(&format!("- {}\n", r.trim()));
            }
        }
        for k in &ctx.knowledge {
            out.push_str(&format!(
                "\n[KNOWLEDGE: {}]\n工作区内的 {}（只属于本模式；按需用 list_files / read_file 查阅）\n",
                k.name, k.path
            ));
        }
    }
    out.push_str(&format!(
        "\n[SKILL: {}]\n{}\n",
        mode.skill_name,
        static_prompt.trim()
    ));
    out
}

/// `at` local time, `days_after_start` days after the start day.
pub fn expiry_time(
    started: DateTime<FixedOffset>,
    policy: &super::manifest::ExpiryPolicy,
    tz: Tz,
) -> DateTime<FixedOffset> {
    let day = started.with_timezone(&tz).date_naive()
        + chrono::Days::new(u64::from(policy.days_after_start));
    let at = policy
        .time()
        .expect("expiry time was validated when mode.json loaded");
    let naive = day.and_time(at);
    let local = tz
        .from_local_datetime(&naive)
        .earliest()
        // a DST gap: the same wall-clock time an hour later is the first valid one
        .or_else(|| {
            tz.from_local_datetime(&(naive + chrono::Duration::hours(1)))
                .earliest()
        })
        .unwrap_or_else(|| tz.from_utc_datetime(&naive));
    local.fixed_offset()
}

/// The local start time in a session id `<prefix>-YYYYMMDD-HHMMSS-xxxxxx`; `None` when
/// the name is not of that form.
fn session_id_stamp(id: &str) -> Option<chrono::NaiveDateTime> {
    let parts: Vec<&str> = id.rsplitn(4, '-').collect();
    let [hex, time, date, prefix] = parts.as_slice() else {
        return None;
    };
    if prefix.is_empty() || hex.len() != 6 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    chrono::NaiveDateTime::parse_from_str(&format!("{date}{time}"), "%Y%m%d%H%M%S").ok()
}

/// Sub-folders whose names are valid ids; anything else (a stray `backup copy`, a
/// non-UTF-8 name) is not a mode or session folder and is left alone.
fn read_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .filter(|p| crate::config::is_safe_id(&file_name(p)))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string()
}

/// A chat id as a file name: safe characters kept; if anything had to change, a short
/// hash of the original keeps distinct ids distinct.
pub fn file_safe(s: &str) -> String {
    let cleaned: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned == s && !s.starts_with('.') && !s.is_empty() {
        return cleaned;
    }
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{}-{:08x}", cleaned.trim_start_matches('.'), h as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::manifest::ExpiryPolicy;

    #[test]
    fn expiry_is_ten_past_midnight_after_the_start_day() {
        let tz: Tz = "Asia/Shanghai".parse().unwrap();
        let started = DateTime::parse_from_rfc3339("2026-10-22T19:55:00+08:00").unwrap();
        let e = expiry_time(started, &ExpiryPolicy::default(), tz);
        assert_eq!(
            e.to_rfc3339_opts(SecondsFormat::Secs, false),
            "2026-10-23T00:10:00+08:00"
        );
        // started just after midnight: still the end of *that* day
        let started = DateTime::parse_from_rfc3339("2026-10-23T00:05:00+08:00").unwrap();
        let e = expiry_time(started, &ExpiryPolicy::default(), tz);
        assert_eq!(
            e.to_rfc3339_opts(SecondsFormat::Secs, false),
            "2026-10-24T00:10:00+08:00"
        );
    }

    fn core_at(dir: &Path, now: DateTime<Utc>) -> ModeCore {
        let ws = Workspace::open(dir).unwrap();
        let skills = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
        let reg = Arc::new(ModeRegistry::load(&[skills]));
        ModeCore::open(ws, reg, "Asia/Shanghai".parse().unwrap(), now).unwrap()
    }

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn meta(chat: &str) -> TurnMeta {
        TurnMeta {
            channel: "cli".into(),
            chat_id: chat.into(),
            speaker_id: "mom".into(),
        }
    }

    fn rec(user: &str) -> Record {
        Record {
            timestamp: "2026-10-22T20:00:00+08:00".into(),
            channel: "cli".into(),
            chat_id: "a".into(),
            speaker_id: "mom".into(),
            user: user.into(),
            assistant: "ok".into(),
            error: None,
        }
    }

    fn enter_cooking(c: &mut ModeCore, now: DateTime<Utc>) -> String {
        c.switch(
            now,
            SwitchAction::Enter,
            Some("cooking"),
            None,
            SwitchOrigin::Command,
        )
        .unwrap();
        c.action.session_id.clone().unwrap()
    }

    fn conv(core: &ModeCore, sid: &str) -> Vec<String> {
        let p = core
            .ws
            .sessions_dir("cooking")
            .join(sid)
            .join(CONVERSATION_FILE);
        session::load_records(&p)
            .unwrap()
            .records
            .into_iter()
            .map(|r| r.user)
            .collect()
    }

    #[test]
    fn exit_waits_for_in_flight_turns_and_later_turns_stay_out() {
        let dir = tempfile::tempdir().unwrap();
        let now = t("2026-10-22T19:55:00+08:00");
        let mut c = core_at(dir.path(), now);
        let sid = enter_cooking(&mut c, now);
        let slow = c.begin_turn(now, meta("voice")); // a slow turn in the session
        let exiting = c.begin_turn(now, meta("qq"));
        assert!(slow.mode.is_some() && exiting.mode.is_some());
        c.switch(
            now,
            SwitchAction::Exit,
            Some("cooking"),
            Some("番茄炒蛋".into()),
            SwitchOrigin::Tool {
                turn_id: exiting.turn_id,
                user_text: "退出做饭模式",
            },
        )
        .unwrap();
        // a turn that begins after the exit request is not in the exiting session
        let late = c.begin_turn(now, meta("cli"));
        assert!(late.mode.is_none());
        let out = c.end_turn(exiting.turn_id, rec("退出做饭模式")).unwrap();
        assert_eq!(out.recorded_in.as_deref(), Some(sid.as_str()));
        assert_eq!(out.archived, None, "the slow turn is still in flight");
        assert!(c.action.active);
        let out = c.end_turn(late.turn_id, rec("late")).unwrap();
        assert_eq!(out.recorded_in, None);
        let out = c.end_turn(slow.turn_id, rec("slow")).unwrap();
        assert_eq!(out.recorded_in.as_deref(), Some(sid.as_str()));
        assert_eq!(
            out.archived.as_deref(),
            Some(sid.as_str()),
            "archived exactly when the last turn ended"
        );
        assert!(!c.action.active);
        assert_eq!(conv(&c, &sid), ["退出做饭模式", "slow"]);
        assert!(matches!(
            c.end_turn(slow.turn_id, rec("again")),
            Err(ModeError::UnknownTurn(_))
        ));
    }

    #[test]
    fn expiry_during_a_turn_archives_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let now = t("2026-10-22T23:59:00+08:00");
        let mut c = core_at(dir.path(), now);
        let sid = enter_cooking(&mut c, now);
        let turn = c.begin_turn(now, meta("a"));
        let later = t("2026-10-23T00:10:01+08:00");
        assert_eq!(c.check_expiry(later), None, "waits for the in-flight turn");
        let next = c.begin_turn(later, meta("b"));
        assert!(next.mode.is_none(), "no new turn joins an expired session");
        let out = c.end_turn(turn.turn_id, rec("last words")).unwrap();
        assert_eq!(out.archived.as_deref(), Some(sid.as_str()));
        assert_eq!(c.action.exit_reason.as_deref(), Some("expired"));
        assert_eq!(conv(&c, &sid), ["last words"]);
        c.end_turn(next.turn_id, rec("b")).unwrap();
    }

    #[test]
    fn an_interrupted_archive_resumes_once() {
        let dir = tempfile::tempdir().unwrap();
        let now = t("2026-10-22T19:55:00+08:00");
        let mut c = core_at(dir.path(), now);
        let sid = enter_cooking(&mut c, now);
        let turn = c.begin_turn(now, meta("a"));
        c.end_turn(turn.turn_id, rec("hello")).unwrap();
        // simulate a crash right after the exit marker was written
        let sdir = c.ws.sessions_dir("cooking").join(&sid);
        let marker = ExitMarker {
            reason: "user".into(),
            summary: None,
            requested_at: "2026-10-22T20:00:00+08:00".into(),
        };
        fsutil::write_atomic(
            &sdir.join(EXIT_MARKER_FILE),
            &serde_json::to_vec(&marker).unwrap(),
        )
        .unwrap();
        drop(c);
        let c = core_at(dir.path(), now);
        assert!(!c.action.active);
        assert_eq!(c.action.exit_reason.as_deref(), Some("user"));
        assert!(sdir.join(SUMMARY_FILE).exists());
        let history = std::fs::read_to_string(dir.path().join("cooking/history.md")).unwrap();
        assert_eq!(
            history.matches(&sid).count(),
            2,
            "one index line (id and summary file name)"
        );
        // and again: nothing doubles
        drop(c);
        let _c = core_at(dir.path(), now);
        let again = std::fs::read_to_string(dir.path().join("cooking/history.md")).unwrap();
        assert_eq!(history, again);
    }

    #[test]
    fn expiry_in_a_dst_gap_moves_forward() {
        // America/Santiago skips 00:00-01:00 on 2024-09-08
        let tz: Tz = "America/Santiago".parse().unwrap();
        let started = DateTime::parse_from_rfc3339("2024-09-07T21:00:00-04:00").unwrap();
        let policy = ExpiryPolicy {
            at: "00:10".into(),
            days_after_start: 1,
        };
        let e = expiry_time(started, &policy, tz);
        assert!(e > started, "{e}");
        assert_eq!(
            e.to_rfc3339_opts(SecondsFormat::Secs, false),
            "2024-09-08T01:10:00-03:00"
        );
    }

    #[test]
    fn a_broken_index_does_not_keep_the_mode_open() {
        let dir = tempfile::tempdir().unwrap();
        let now = t("2026-10-22T19:55:00+08:00");
        let mut c = core_at(dir.path(), now);
        let sid = enter_cooking(&mut c, now);
        // the index path becomes a folder: every update fails
        let history = dir.path().join("cooking/history.md");
        std::fs::remove_file(&history).unwrap();
        std::fs::create_dir_all(history.join("oops")).unwrap();
        c.switch(now, SwitchAction::Exit, None, None, SwitchOrigin::Command)
            .unwrap();
        assert!(!c.action.active, "the session ended anyway");
        let sdir = c.ws.sessions_dir("cooking").join(&sid);
        assert!(sdir.join(SUMMARY_FILE).exists());
        assert!(sdir.join(INDEX_PENDING_FILE).exists());
        assert!(c
            .status()
            .warnings
            .iter()
            .any(|w| w.contains("retried at the next start")));
        // fixed by a human; the next start catches up
        std::fs::remove_dir_all(&history).unwrap();
        drop(c);
        let _c = core_at(dir.path(), now);
        assert!(std::fs::read_to_string(&history).unwrap().contains(&sid));
        assert!(!sdir.join(INDEX_PENDING_FILE).exists());
    }

    #[test]
    fn a_rebuilt_action_json_takes_only_a_real_used_session() {
        let dir = tempfile::tempdir().unwrap();
        let now = t("2026-10-22T19:55:00+08:00");
        let mut c = core_at(dir.path(), now);
        let live = enter_cooking(&mut c, now);
        let turn = c.begin_turn(now, meta("a"));
        c.end_turn(turn.turn_id, rec("hello")).unwrap();
        let base = c.ws.sessions_dir("cooking");
        // a stray copy and a never-used later session beside the live one
        std::fs::create_dir_all(base.join("cook-backup")).unwrap();
        std::fs::copy(
            base.join(&live).join(SYSTEM_PROMPT_FILE),
            base.join("cook-backup").join(SYSTEM_PROMPT_FILE),
        )
        .unwrap();
        let unused = base.join("cook-20261022-200000-abcdef");
        std::fs::create_dir_all(&unused).unwrap();
        std::fs::copy(
            base.join(&live).join(SYSTEM_PROMPT_FILE),
            unused.join(SYSTEM_PROMPT_FILE),
        )
        .unwrap();
        drop(c);
        std::fs::write(dir.path().join("modes/action.json"), "{broken").unwrap();
        let later = t("2026-10-22T20:30:00+08:00");
        let c = core_at(dir.path(), later);
        assert_eq!(c.action.session_id.as_deref(), Some(live.as_str()));
        assert_eq!(
            c.action.started_at.as_deref(),
            Some("2026-10-22T19:55:00+08:00")
        );
        assert!(
            unused.join(SUMMARY_FILE).exists(),
            "the unused one was archived"
        );
        assert!(
            !base.join("cook-backup").join(SUMMARY_FILE).exists(),
            "a stray folder is left alone"
        );
    }

    #[test]
    fn file_safe_keeps_distinct_ids_distinct() {
        assert_eq!(file_safe("local"), "local");
        assert_ne!(file_safe("group:1"), file_safe("group_1"));
        assert!(!file_safe("../x").contains('/'));
        assert!(!file_safe("..").starts_with('.'));
    }
}
