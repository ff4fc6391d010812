//! Start-up recovery of the mode state: `ModeCore::open` reads `action.json` (a corrupt
//! one is set aside and rebuilt from the newest unfinished session that was really used),
//! reloads the active session, resumes an interrupted archive, archives orphaned session
//! folders as `recovered`, retries pending plugin index updates, and expires a session
//! whose time passed while homebot was down. Nothing is deleted.

use super::action::ActionDoc;
use super::core::{io, ActiveSession, FrozenPromptFn, ModeCore, ModeError};
use super::plugin::ArchivedSession;
use super::registry::{ModeRegistry, RegisteredMode};
use super::session::{
    self, ExitMarker, HistoryLog, CONVERSATION_FILE, EXIT_MARKER_FILE, INDEX_PENDING_FILE,
    SUMMARY_FILE, SYSTEM_PROMPT_FILE,
};
use super::session_id::SessionId;
use crate::fsutil;
use crate::workspace::Workspace;
use chrono::{DateTime, FixedOffset, Utc};
use chrono_tz::Tz;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tracing::info;

impl ModeCore {
    /// Open the mode state of a workspace: read `action.json` (a corrupt one is set aside
    /// and reported), reload the active session, resume an interrupted archive, and
    /// archive orphaned session folders (a crash during entry or a lost `action.json`),
    /// then expire a session whose time passed while homebot was down.
    pub fn open(
        ws: Workspace,
        registry: Arc<ModeRegistry>,
        tz: Tz,
        now: DateTime<Utc>,
        frozen_prompt: FrozenPromptFn,
    ) -> Result<Self, ModeError> {
        let mut core = ModeCore::empty(ws, registry, tz, frozen_prompt);
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
        // a session that expired while homebot was down ends now, before anyone (a
        // `homebot status`, the first turn) sees it as active
        core.check_expiry(now);
        Ok(core)
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

    /// When a session started: from its id, else its first record.
    fn session_start(&self, sdir: &Path) -> Option<DateTime<FixedOffset>> {
        if let Some(t) = SessionId::parse(&file_name(sdir)).and_then(|id| id.started_in(self.tz)) {
            return Some(t);
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
                    if SessionId::parse(&file_name(&sdir)).is_some() {
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
}

/// Sub-folders whose names are valid ids; anything else (a stray `backup copy`, a
/// non-UTF-8 name) is not a mode or session folder and is left alone.
pub(super) fn read_dirs(dir: &Path) -> Vec<PathBuf> {
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

pub(super) fn file_name(p: &Path) -> String {
    p.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string()
}
