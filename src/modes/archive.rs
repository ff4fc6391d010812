//! Archiving a session that ends: `summary.md` (only if missing) → the plugin's index
//! update → `action.json` inactive. Each step is safe to repeat, so an archive
//! interrupted by a crash resumes at the next start (`exit.json` says it was requested).
//! A plugin index that cannot be updated does not keep the mode open: `index.pending`
//! records why, and the update is retried at the next start.

use super::action::ActionDoc;
use super::core::{io, ModeCore, ModeError};
use super::plugin::ArchivedSession;
use super::registry::RegisteredMode;
use super::session::{
    self, ExitMarker, Record, SummaryJob, INDEX_PENDING_FILE, SUMMARY_FILE, SUMMARY_PENDING_FILE,
};
use crate::fsutil;
use std::path::Path;
use tracing::info;

impl ModeCore {
    /// Archive the active session if its exit is due. Errors are kept as warnings and
    /// retried at the next call (every turn start/end and every cron tick).
    pub(super) fn maybe_archive(&mut self) -> Option<String> {
        let due = self
            .active
            .as_ref()
            .is_some_and(|s| s.exit.is_some() && s.in_flight.is_empty() && s.exit_turn.is_none());
        if !due {
            return None;
        }
        let s = self.active.take().expect("due implies an active session");
        let marker = s.exit.clone().expect("due implies an exit request");
        // records whose fsync a turn is still waiting on reach the disk before the summary
        if let Ok(f) = std::fs::File::open(s.dir.join(session::CONVERSATION_FILE)) {
            let _ = f.sync_data();
        }
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
                crate::metrics::mode_exited(&s.mode_id, &marker.reason);
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
    pub(super) fn archive_files(
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
                let no_model_summary = marker
                    .summary
                    .as_deref()
                    .is_none_or(|t| t.trim().is_empty());
                if no_model_summary && !records.is_empty() {
                    // ended by expiry, recovery or without a summary: the model writes one
                    // later, outside this actor; until then (or if it cannot) the
                    // mechanical one below stands
                    let job = SummaryJob {
                        display_name: display_name.into(),
                        mode_id: mode_id.into(),
                        session_id: session_id.into(),
                        started_at: started_at.into(),
                        ended_at: marker.requested_at.clone(),
                        exit_reason: marker.reason.clone(),
                        attempts: 0,
                    };
                    let pending = dir.join(SUMMARY_PENDING_FILE);
                    let json = serde_json::to_vec_pretty(&job).expect("a summary job serializes");
                    fsutil::write_atomic(&pending, &json).map_err(io("write", &pending))?;
                }
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
        // the chats that took part carry the session for a day (a failure costs only that)
        if let Ok(ended) = chrono::DateTime::parse_from_rfc3339(&marker.requested_at) {
            let carried = crate::chats::carried::CarriedSession {
                session_id: session_id.into(),
                mode_name: display_name.into(),
                session_dir: dir.to_path_buf(),
                ended_at: marker.requested_at.clone(),
            };
            if let Err(e) = self.chats.session_ended(records, carried, ended) {
                self.warn(format!(
                    "session {session_id}: the chats that took part will not carry it: {e}"
                ));
            }
        }
        // the summarizer goes to work only once the archive's own files are written:
        // it replaces summary.md, and the archive must not write over its result
        if dir.join(SUMMARY_PENDING_FILE).exists() {
            if let Some(tx) = &self.archived {
                let _ = tx.send(dir.to_path_buf());
            }
        }
        let is_current =
            self.action.active && self.action.session_id.as_deref() == Some(session_id);
        if is_current {
            let doc = ActionDoc::inactive(Some(marker.reason.clone()));
            doc.write(&self.ws.action_file())?;
            self.action = doc;
        }
        Ok(())
    }

    pub(super) fn mark_index_pending(&mut self, dir: &Path, why: &str) {
        let session = super::dirs::file_name(dir);
        let path = dir.join(INDEX_PENDING_FILE);
        if let Err(e) = fsutil::write_atomic(&path, why.as_bytes()) {
            self.warn(format!("{}: {e}", path.display()));
        }
        self.warn(format!(
            "session {session}: the plugin's history index could not be updated ({why}); the session is archived and the index update will be retried at the next start"
        ));
    }
}
