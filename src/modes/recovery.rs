//! Start-up recovery of the mode state: `ModeCore::open` reads `action.json` (a corrupt
//! one is set aside and rebuilt from the newest unfinished session that was really used),
//! reloads the active session, resumes an interrupted archive, archives orphaned session
//! folders as `recovered`, retries pending plugin index updates, and expires a session
//! whose time passed while homebot was down.
//!
//! Start-up survives any workspace file: whatever cannot be read is moved aside
//! (`.corrupt`) and reported, a session that cannot be archived now is retried at the next
//! start, and only a write that *must* succeed for the state to be consistent (moving a
//! damaged `action.json` aside) stops it. Nothing a human might want is deleted: the only
//! folders removed are those holding nothing but what homebot wrote at an entry that did
//! not finish (a frozen prompt and an empty conversation).

use super::action::ActionDoc;
use super::core::{io, ActiveSession, FrozenPromptFn, ModeCore, ModeError};
pub use super::dirs::{file_name, read_dirs};
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
            Ok(None) => core.write_action(),
            // corrupt, or not readable as a file at all (a folder, not UTF-8 …)
            Err(e) => {
                let message = match e {
                    super::action::ActionError::Corrupt { message, .. } => message,
                    super::action::ActionError::Io { source, .. } => source.to_string(),
                };
                let aside =
                    fsutil::move_aside(&path, "corrupt").map_err(io("move aside", &path))?;
                let restored = core.rebuild_action();
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
                    core.write_action();
                }
            }
        }
        if core.action.active {
            core.restore_active();
        }
        core.recover_orphans(now);
        core.maybe_archive();
        core.retry_pending_indexes();
        // a session that expired while homebot was down ends now, before anyone (a
        // `homebot status`, the first turn) sees it as active
        core.check_expiry(now);
        Ok(core)
    }

    /// Write `action.json` as it is in memory; on failure (a full disk) the state goes on
    /// in memory, with a warning, and is written at the next change.
    fn write_action(&mut self) {
        if let Err(e) = self.action.write(&self.ws.action_file()) {
            self.warn(format!("could not write the mode state: {e}"));
        }
    }

    fn restore_active(&mut self) {
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
        let loaded = session::load_records(&conv).unwrap_or_else(|e| session::Loaded {
            records: Vec::new(),
            warnings: vec![format!(
                "{}: {e}; the session continues without its earlier turns",
                conv.display()
            )],
        });
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
    }

    /// After a corrupt `action.json`: rebuild it from the newest unfinished session of a
    /// loaded mode (its folder holds everything but the lifecycle), so a live cooking
    /// session survives a damaged file — even one that seems to start in the future
    /// because the clock went back. Returns the restored session id.
    fn rebuild_action(&mut self) -> Option<String> {
        let root = self.ws.sessions_root();
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
                if best.as_ref().is_none_or(|(t, _, _)| started > *t) {
                    best = Some((started, mode.clone(), sdir));
                }
            }
        }
        let (started, mode, sdir) = best?;
        let session_id = file_name(&sdir);
        self.action = self.active_doc(&mode, &session_id, &sdir, started);
        self.write_action();
        Some(session_id)
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

    /// Session folders without `summary.md` that are not the active session: archived
    /// as `recovered` if they hold records, removed or set aside if they hold none (never
    /// indexed as a session). A failure leaves the folder as it is, with a warning, for
    /// the next start: it never stops this one.
    fn recover_orphans(&mut self, now: DateTime<Utc>) {
        let root = self.ws.sessions_root();
        let mut orphans = Vec::new();
        for mode_dir in read_dirs(&root) {
            self.clean_half_made(&mode_dir);
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
            let loaded = match session::load_records(&conv) {
                Ok(l) => l,
                Err(e) => {
                    self.warn(format!(
                        "could not read the unfinished session {session_id} ({}: {e}); left as it is, tried again at the next start",
                        conv.display()
                    ));
                    continue;
                }
            };
            for w in loaded.warnings {
                self.warn(w);
            }
            if loaded.records.is_empty() {
                self.drop_empty_session(&sdir);
                continue;
            }
            let mode = self.registry.get(&mode_id).cloned();
            let display_name = mode
                .as_ref()
                .map(|m| m.manifest.display_name.clone())
                .unwrap_or_else(|| mode_id.clone());
            // it ended with its last record (not when this start noticed), and began when
            // its id says
            let last = loaded.records.last().map(|r| r.timestamp.clone());
            let marker = ExitMarker {
                reason: "recovered".into(),
                summary: None,
                requested_at: last.unwrap_or_else(|| Self::rfc3339(self.local(now))),
            };
            let started = self
                .session_start(&sdir)
                .map(Self::rfc3339)
                .unwrap_or_else(|| "unknown".into());
            let archived = self.archive_files(
                mode.as_ref(),
                &mode_id,
                &display_name,
                &session_id,
                &sdir,
                &started,
                &marker,
                &loaded.records,
            );
            self.warn(match archived {
                Ok(()) => format!(
                    "session {session_id} was left unfinished (no summary.md, not active); archived as `recovered`"
                ),
                Err(e) => format!(
                    "could not archive the unfinished session {session_id} (no summary.md, not active): {e}; tried again at the next start"
                ),
            });
        }
    }

    /// Folders `.<session>.tmp` of entries that did not finish (a crash, a full disk while
    /// the session was made, see `create_session`): removed when they hold only what the
    /// entry writes, else left alone with a warning.
    fn clean_half_made(&mut self, mode_dir: &Path) {
        let Ok(entries) = std::fs::read_dir(mode_dir) else {
            return;
        };
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            if !(name.starts_with('.') && name.ends_with(".tmp") && path.is_dir()) {
                continue;
            }
            if !only_entry_files(&path) {
                self.warn(format!(
                    "{} looks like a half-made session folder but holds other files; left alone",
                    path.display()
                ));
                continue;
            }
            match std::fs::remove_dir_all(&path) {
                Ok(()) => self.warn(format!(
                    "a mode entry did not finish; its half-made session folder {name} was removed"
                )),
                Err(e) => self.warn(format!(
                    "could not remove the half-made session folder {}: {e}",
                    path.display()
                )),
            }
        }
    }

    /// A session folder with no records and no summary: nothing happened in it (an entry
    /// that failed in an older homebot, a session left before its first turn). It is not
    /// a session to index: removed when it holds only what the entry wrote, else set
    /// aside as `.<session>.empty` for a human to look at.
    fn drop_empty_session(&mut self, sdir: &Path) {
        let sid = file_name(sdir);
        if only_entry_files(sdir) {
            match std::fs::remove_dir_all(sdir) {
                Ok(()) => self.warn(format!(
                    "session folder {sid} has no records; removed (it held only its frozen prompt)"
                )),
                Err(e) => self.warn(format!(
                    "session folder {sid} has no records but could not be removed: {e}"
                )),
            }
            return;
        }
        let parent = sdir.parent().unwrap_or(Path::new("."));
        let mut aside = parent.join(format!(".{sid}.empty"));
        let mut n = 1;
        while std::fs::symlink_metadata(&aside).is_ok() {
            aside = parent.join(format!(".{sid}.empty.{n}"));
            n += 1;
        }
        match std::fs::rename(sdir, &aside).and_then(|_| fsutil::sync_dir(parent)) {
            Ok(()) => self.warn(format!(
                "session folder {sid} has no records; set aside as {}",
                aside.display()
            )),
            Err(e) => self.warn(format!(
                "session folder {sid} has no records but could not be set aside: {e}"
            )),
        }
    }

    /// Retry the plugin index update of sessions archived while it failed.
    fn retry_pending_indexes(&mut self) {
        let root = self.ws.sessions_root();
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

/// Whether a session folder holds nothing but what an entry writes: its frozen prompt
/// and an empty `conversation.jsonl` (either may be missing).
fn only_entry_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|it| {
        it.filter_map(Result::ok).all(|e| {
            let meta = e.metadata();
            let name = e.file_name();
            (name == SYSTEM_PROMPT_FILE && meta.as_ref().is_ok_and(|m| m.is_file()))
                || (name == CONVERSATION_FILE
                    && meta.as_ref().is_ok_and(|m| m.is_file() && m.len() == 0))
        })
    })
}
