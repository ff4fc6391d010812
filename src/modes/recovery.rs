//! Start-up repair of the sessions on disk, by the [`Archivist`]: it reads `action.json`
//! (a corrupt one is set aside and rebuilt from the newest unfinished session that was
//! really used), reloads the active session, archives orphaned session folders as
//! `recovered` and retries pending plugin index updates. [`ModeCore::open`] runs these
//! in order, resuming an interrupted archive and expiring a session whose time passed
//! while homebot was down.
//!
//! Start-up survives any workspace file: whatever cannot be read is moved aside
//! (`.corrupt`) and reported, a session that cannot be archived now is retried at the next
//! start, and only a write that *must* succeed for the state to be consistent (moving a
//! damaged `action.json` aside) stops it. Nothing a human might want is deleted: the only
//! folders removed are those holding nothing but what homebot wrote at an entry that did
//! not finish (a frozen prompt and an empty conversation).
//!
//! [`ModeCore::open`]: super::mode_core::ModeCore::open

use super::action::ActionDoc;
use super::archive::{plugin_ctx, Archivist, Ending, Live};
pub use super::dirs::{file_name, read_dirs};
use super::mode_core::{io, ActiveSession, ModeCore, ModeError};
use super::plugin::ArchivedSession;
use super::registry::RegisteredMode;
use super::session::{
    self, ExitMarker, HistoryLog, CONVERSATION_FILE, EXIT_MARKER_FILE, INDEX_PENDING_FILE,
    SUMMARY_FILE, SYSTEM_PROMPT_FILE,
};
use super::session_id::SessionId;
use super::warnings::Warnings;
use crate::fsutil;
use chrono::{DateTime, FixedOffset, Utc};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use tracing::info;

impl Archivist {
    /// The lifecycle document as the workspace has it: read (a missing one is written
    /// inactive); a corrupt one, or one not readable as a file at all, is set aside and
    /// reported, and rebuilt from the newest unfinished session that was really used.
    /// Also reports the modes that did not load.
    pub(super) fn read_action(&self, warnings: &mut Warnings) -> Result<ActionDoc, ModeError> {
        for issue in self.registry.issues() {
            warnings.push(format!("mode not loaded: {issue}"));
        }
        let path = self.ws.action_file();
        let doc = match ActionDoc::read(&path) {
            Ok(Some(doc)) => doc,
            Ok(None) => {
                let doc = ActionDoc::inactive(None);
                self.write_action(&doc, warnings);
                doc
            }
            // corrupt, or not readable as a file at all (a folder, not UTF-8 …)
            Err(e) => {
                let message = match e {
                    super::action::ActionError::Corrupt { message, .. } => message,
                    super::action::ActionError::Io { source, .. } => source.to_string(),
                };
                let aside =
                    fsutil::move_aside(&path, "corrupt").map_err(io("move aside", &path))?;
                let restored = self.rebuild_action(warnings);
                warnings.push(format!(
                    "{} is corrupt ({message}); kept as {}; {}",
                    path.display(),
                    aside.display(),
                    match &restored {
                        Some((sid, _)) => format!("the unfinished session {sid} was restored from its folder and continues"),
                        None => "no unfinished session was found; the mode state starts inactive".into(),
                    }
                ));
                match restored {
                    Some((_, doc)) => doc,
                    None => {
                        let doc = ActionDoc::inactive(Some("recovered".into()));
                        self.write_action(&doc, warnings);
                        doc
                    }
                }
            }
        };
        Ok(doc)
    }

    /// Write `action.json`; on failure (a full disk) the state goes on in memory, with a
    /// warning, and is written at the next change.
    fn write_action(&self, doc: &ActionDoc, warnings: &mut Warnings) {
        if let Err(e) = doc.write(&self.ws.action_file()) {
            warnings.push(format!("could not write the mode state: {e}"));
        }
    }

    /// The active session `doc` names, reloaded from its folder: its frozen prompt, its
    /// records, a pending exit (an archive to resume). What cannot be read is reported
    /// and the session continues without it.
    pub(super) fn reload_active(&self, doc: &ActionDoc, warnings: &mut Warnings) -> ActiveSession {
        let field = |v: &Option<String>| v.clone().expect("checked by ActionDoc::check");
        let mode_id = field(&doc.mode_id);
        let session_id = field(&doc.session_id);
        let dir = self.ws.sessions_dir(&mode_id).join(&session_id);
        let mode = self.registry.get(&mode_id).cloned();
        if mode.is_none() {
            warnings.push(format!(
                "active mode {mode_id:?} is not loaded; session {session_id} continues on its frozen prompt"
            ));
        }
        let prompt_path = dir.join(SYSTEM_PROMPT_FILE);
        let system_prompt = match std::fs::read_to_string(&prompt_path) {
            Ok(t) => t,
            Err(e) => {
                warnings.push(format!(
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
            warnings.push(w);
        }
        let exit_path = dir.join(EXIT_MARKER_FILE);
        let exit = match std::fs::read(&exit_path) {
            Ok(b) => match serde_json::from_slice::<ExitMarker>(&b) {
                Ok(m) => Some(m),
                Err(e) => {
                    warnings.push(format!(
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
            .map(|m| m.plugin.runtime_context(&plugin_ctx(&self.ws, m)))
            .unwrap_or_default();
        let expires_at = DateTime::parse_from_rfc3339(&field(&doc.expires_at))
            .expect("checked by ActionDoc::check");
        if exit.is_some() {
            info!(session = %session_id, "resuming an interrupted archive");
        }
        ActiveSession {
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
        }
    }

    /// After a corrupt `action.json`: rebuild it from the newest unfinished session of a
    /// loaded mode (its folder holds everything but the lifecycle), so a live cooking
    /// session survives a damaged file — even one that seems to start in the future
    /// because the clock went back. Returns the restored session id and its document.
    fn rebuild_action(&self, warnings: &mut Warnings) -> Option<(String, ActionDoc)> {
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
        let doc =
            super::mode_core::session_dir::active_doc(&mode, &session_id, &sdir, started, self.tz);
        self.write_action(&doc, warnings);
        Some((session_id, doc))
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

    /// Session folders without `summary.md` that are not live (the active session, or the
    /// parent a sub-mode paused): archived
    /// as `recovered` if they hold records, removed or set aside if they hold none (never
    /// indexed as a session). A failure leaves the folder as it is, with a warning, for
    /// the next start: it never stops this one.
    pub(super) fn recover_orphans(
        &self,
        now: DateTime<Utc>,
        live_dirs: &[PathBuf],
        live: Live<'_>,
    ) {
        let root = self.ws.sessions_root();
        let mut orphans = Vec::new();
        for mode_dir in read_dirs(&root) {
            self.clean_half_made(&mode_dir, live.warnings);
            for sdir in read_dirs(&mode_dir) {
                let is_active = live_dirs.contains(&sdir);
                if !is_active && !sdir.join(SUMMARY_FILE).exists() {
                    if SessionId::parse(&file_name(&sdir)).is_some() {
                        orphans.push((mode_dir.clone(), sdir));
                    } else {
                        live.warnings.push(format!(
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
                    live.warnings.push(format!(
                        "could not read the unfinished session {session_id} ({}: {e}); left as it is, tried again at the next start",
                        conv.display()
                    ));
                    continue;
                }
            };
            for w in loaded.warnings {
                live.warnings.push(w);
            }
            if loaded.records.is_empty() {
                self.drop_empty_session(&sdir, live.warnings);
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
                requested_at: last.unwrap_or_else(|| ModeCore::rfc3339(self.local(now))),
            };
            let started = self
                .session_start(&sdir)
                .map(ModeCore::rfc3339)
                .unwrap_or_else(|| "unknown".into());
            let ending = Ending {
                mode: mode.as_ref(),
                mode_id: &mode_id,
                display_name: &display_name,
                session_id: &session_id,
                dir: &sdir,
                started_at: &started,
                marker: &marker,
                records: &loaded.records,
                resume: None,
            };
            let archived = self.archive_files(
                &ending,
                Live {
                    chats: &mut *live.chats,
                    action: &mut *live.action,
                    warnings: &mut *live.warnings,
                },
            );
            live.warnings.push(match archived {
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
    fn clean_half_made(&self, mode_dir: &Path, warnings: &mut Warnings) {
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
                warnings.push(format!(
                    "{} looks like a half-made session folder but holds other files; left alone",
                    path.display()
                ));
                continue;
            }
            match std::fs::remove_dir_all(&path) {
                Ok(()) => warnings.push(format!(
                    "a mode entry did not finish; its half-made session folder {name} was removed"
                )),
                Err(e) => warnings.push(format!(
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
    fn drop_empty_session(&self, sdir: &Path, warnings: &mut Warnings) {
        let sid = file_name(sdir);
        if only_entry_files(sdir) {
            match std::fs::remove_dir_all(sdir) {
                Ok(()) => warnings.push(format!(
                    "session folder {sid} has no records; removed (it held only its frozen prompt)"
                )),
                Err(e) => warnings.push(format!(
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
            Ok(()) => warnings.push(format!(
                "session folder {sid} has no records; set aside as {}",
                aside.display()
            )),
            Err(e) => warnings.push(format!(
                "session folder {sid} has no records but could not be set aside: {e}"
            )),
        }
    }

    /// Retry the plugin index update of sessions archived while it failed.
    pub(super) fn retry_pending_indexes(&self, warnings: &mut Warnings) {
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
                match mode
                    .plugin
                    .after_exit(&plugin_ctx(&self.ws, &mode), &archived)
                {
                    Ok(()) => {
                        let _ = std::fs::remove_file(&pending);
                        info!(session = %session_id, "pending history index update done");
                    }
                    Err(e) => warnings.push(format!(
                        "session {session_id}: history index update failed again ({e}); {} kept",
                        pending.display()
                    )),
                }
            }
        }
    }
}

/// Whether a session folder holds nothing but what an entry writes: its frozen prompt,
/// `entered.json`, the examples it got and an empty `conversation.jsonl` (any may be
/// missing).
fn only_entry_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|it| {
        it.filter_map(Result::ok).all(|e| {
            let meta = e.metadata();
            let name = e.file_name();
            ((name == SYSTEM_PROMPT_FILE
                || name == super::entered::ENTERED_FILE
                || name == super::examples::SESSION_EXAMPLES_FILE)
                && meta.as_ref().is_ok_and(|m| m.is_file()))
                || (name == CONVERSATION_FILE
                    && meta.as_ref().is_ok_and(|m| m.is_file() && m.len() == 0))
        })
    })
}
