//! [`Archivist`]: what the mode state does with sessions on disk, apart from the live
//! session — archiving a session that ends, and (in [`super::recovery`]) repairing the
//! workspace at start-up. It owns what that needs: the workspace, the registry of modes
//! (their plugins keep the history index), the household's time zone and the notifier of
//! sessions archived without a model summary. The live session's state (the active
//! session, turns in flight, `action.json` in memory) stays in `ModeCore`, which holds an
//! archivist and lends it what an archive changes of the live state ([`Live`]); the
//! core's own `maybe_archive` (in `switching`) decides when the active session's exit is
//! due. This file imports nothing of the core.
//!
//! Archiving a session: `summary.md` (only if missing) → the plugin's index update →
//! `action.json` inactive. Each step is safe to repeat, so an archive interrupted by a
//! crash resumes at the next start (`exit.json` says it was requested). A plugin index
//! that cannot be updated does not keep the mode open: `index.pending` records why, and
//! the update is retried at the next start.

use super::action::ActionDoc;
use super::error::{io, ModeError};
use super::paused::{self, PausedDoc};
use super::plugin::{ArchivedSession, PluginContext};
use super::registry::{ModeRegistry, RegisteredMode};
use super::session::{
    self, ExitMarker, HistoryLog, Record, SummaryJob, CONVERSATION_FILE, INDEX_PENDING_FILE,
    SUMMARY_FILE, SUMMARY_PENDING_FILE,
};
use super::warnings::Warnings;
use crate::chats::ChatHistories;
use crate::fsutil;
use crate::workspace::Workspace;
use crate::zone::Zone;
use chrono::{DateTime, FixedOffset, Utc};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// Archiving and start-up repair of the sessions on disk.
pub struct Archivist {
    pub(super) ws: Workspace,
    pub(super) registry: Arc<ModeRegistry>,
    pub(super) tz: Zone,
    /// Told the folder of each session archived without a model summary (the kernel's
    /// summarizer writes one); `None` until [`Archivist::notify`].
    notifier: Option<UnboundedSender<PathBuf>>,
}

/// A session that ends, as its archive needs it.
pub(super) struct Ending<'a> {
    /// `None` when the mode's skill no longer loads: the index update waits.
    pub mode: Option<&'a RegisteredMode>,
    pub mode_id: &'a str,
    pub display_name: &'a str,
    pub session_id: &'a str,
    pub dir: &'a Path,
    pub started_at: &'a str,
    pub marker: &'a ExitMarker,
    pub records: &'a [Record],
    /// A sub-mode that ends hands its conclusion to the parent it paused, which then
    /// runs again; `None` for a top-level session (the state goes inactive).
    pub resume: Option<Resume<'a>>,
}

/// The parent a sub-mode paused, as the sub-mode's archive resumes it: the conclusion
/// goes into its history (once), `action.json` names it again, `paused.json` goes.
pub(super) struct Resume<'a> {
    pub dir: &'a Path,
    pub log: &'a HistoryLog,
    pub doc: &'a ActionDoc,
    pub conclusion: Record,
}

/// What an archive changes of the live state: the chats that took part carry the ended
/// session for a day, the lifecycle document goes inactive when it names the session,
/// and what went wrong is kept for `status`.
pub(super) struct Live<'a> {
    pub chats: &'a mut ChatHistories,
    pub action: &'a mut ActionDoc,
    pub warnings: &'a mut Warnings,
}

/// What a mode's plugin is told of where it runs.
pub(super) fn plugin_ctx<'a>(ws: &'a Workspace, mode: &'a RegisteredMode) -> PluginContext<'a> {
    PluginContext {
        workspace: ws,
        manifest: &mode.manifest,
        skill_dir: &mode.skill_dir,
        skill_name: &mode.skill_name,
    }
}

impl Archivist {
    pub fn new(ws: Workspace, registry: Arc<ModeRegistry>, tz: Zone) -> Self {
        Self {
            ws,
            registry,
            tz,
            notifier: None,
        }
    }

    /// Send the folder of every session archived without a model summary to `tx`.
    pub fn notify(&mut self, tx: Option<UnboundedSender<PathBuf>>) {
        self.notifier = tx;
    }

    pub fn notifier(&self) -> Option<UnboundedSender<PathBuf>> {
        self.notifier.clone()
    }

    pub(super) fn local(&self, t: DateTime<Utc>) -> DateTime<FixedOffset> {
        t.with_timezone(&self.tz).fixed_offset()
    }

    /// Archive steps after the records: summary.md (only if missing) → plugin index →
    /// `action.json` inactive. Each is safe to repeat.
    pub(super) fn archive_files(&self, e: &Ending<'_>, live: Live<'_>) -> Result<(), ModeError> {
        let Live {
            chats,
            action,
            warnings,
        } = live;
        let (dir, marker) = (e.dir, e.marker);
        let summary_path = dir.join(SUMMARY_FILE);
        let summary_text = match std::fs::read_to_string(&summary_path) {
            Ok(t) => t,
            Err(_) => self.write_summary(e, &summary_path)?,
        };
        self.update_index(e, &summary_path, &summary_text, warnings);
        crate::failpoint::hit("archive.after_index");
        carry(e, chats, warnings);
        // the summarizer goes to work only once the archive's own files are written:
        // it replaces summary.md, and the archive must not write over its result
        if dir.join(SUMMARY_PENDING_FILE).exists() {
            if let Some(tx) = &self.notifier {
                let _ = tx.send(dir.to_path_buf());
            }
        }
        let is_current = action.active && action.session_id.as_deref() == Some(e.session_id);
        match &e.resume {
            None if is_current => {
                let doc = ActionDoc::inactive(Some(marker.reason.clone()));
                doc.write(&self.ws.action_file())?;
                *action = doc;
            }
            None => {}
            Some(r) => self.resume_parent(r, is_current, action)?,
        }
        Ok(())
    }

    /// A sub-mode's last archive steps: its conclusion appended to the parent's
    /// `conversation.jsonl` unless a record from this sub-session is there already (so a
    /// resumed archive appends it exactly once; a torn append is cut at the next load and
    /// made again), then `action.json` names the parent, then `paused.json` goes.
    fn resume_parent(
        &self,
        r: &Resume<'_>,
        is_current: bool,
        action: &mut ActionDoc,
    ) -> Result<(), ModeError> {
        let sub = r.conclusion.chat_id.as_str();
        if !r
            .log
            .view()
            .with(|records| paused::has_conclusion(records, sub))
        {
            let path = r.dir.join(CONVERSATION_FILE);
            session::append_record(&path, &r.conclusion).map_err(io("append to", &path))?;
            r.log.push(r.conclusion.clone());
        }
        crate::failpoint::hit("archive.after_conclusion");
        if is_current {
            r.doc.write(&self.ws.action_file())?;
            *action = r.doc.clone();
        }
        crate::failpoint::hit("archive.after_resume");
        let path = PausedDoc::path(&self.ws.modes_dir());
        PausedDoc::remove(&path).map_err(io("remove", &path))
    }

    /// The mechanical summary.md, and — when the session ended without a model summary —
    /// the job that asks the summarizer for one. Its text.
    fn write_summary(&self, e: &Ending<'_>, summary_path: &Path) -> Result<String, ModeError> {
        let (dir, marker, records) = (e.dir, e.marker, e.records);
        let no_model_summary = marker
            .summary
            .as_deref()
            .is_none_or(|t| t.trim().is_empty());
        if no_model_summary && !records.is_empty() {
            // ended by expiry, recovery or without a summary: the model writes one
            // later, outside this actor; until then (or if it cannot) the
            // mechanical one below stands
            let job = SummaryJob {
                display_name: e.display_name.into(),
                mode_id: e.mode_id.into(),
                session_id: e.session_id.into(),
                started_at: e.started_at.into(),
                ended_at: marker.requested_at.clone(),
                exit_reason: marker.reason.clone(),
                attempts: 0,
            };
            let pending = dir.join(SUMMARY_PENDING_FILE);
            let json = serde_json::to_vec_pretty(&job).expect("a summary job serializes");
            fsutil::write_atomic(&pending, &json).map_err(io("write", &pending))?;
        }
        let text = session::render_summary(&session::SummaryInput {
            display_name: e.display_name,
            mode_id: e.mode_id,
            session_id: e.session_id,
            started_at: e.started_at,
            ended_at: &marker.requested_at,
            exit_reason: &marker.reason,
            llm_summary: marker.summary.as_deref(),
            records,
        });
        fsutil::write_atomic(summary_path, text.as_bytes()).map_err(io("write", summary_path))?;
        crate::failpoint::hit("archive.after_summary");
        Ok(text)
    }

    /// The plugin's history index; when it fails (or the mode no longer loads) the
    /// update is marked pending and retried at the next start.
    fn update_index(
        &self,
        e: &Ending<'_>,
        summary_path: &Path,
        summary_text: &str,
        warnings: &mut Warnings,
    ) {
        let (dir, marker) = (e.dir, e.marker);
        match e.mode {
            Some(m) => {
                let archived = ArchivedSession {
                    session_id: e.session_id,
                    session_dir: dir,
                    started_at: e.started_at,
                    ended_at: &marker.requested_at,
                    exit_reason: &marker.reason,
                    summary_path,
                    summary_text,
                    llm_summary: marker.summary.as_deref(),
                    records: e.records,
                };
                if let Err(err) = m.plugin.after_exit(&plugin_ctx(&self.ws, m), &archived) {
                    // The session still ends: a broken index must not keep a mode open
                    // forever. The update is retried at the next start.
                    self.mark_index_pending(dir, &err.to_string(), warnings);
                }
            }
            None => self.mark_index_pending(
                dir,
                &format!("mode {:?} is not loaded", e.mode_id),
                warnings,
            ),
        }
    }

    pub(super) fn mark_index_pending(&self, dir: &Path, why: &str, warnings: &mut Warnings) {
        let session = super::dirs::file_name(dir);
        let path = dir.join(INDEX_PENDING_FILE);
        if let Err(e) = fsutil::write_atomic(&path, why.as_bytes()) {
            warnings.push(format!("{}: {e}", path.display()));
        }
        warnings.push(format!(
            "session {session}: the plugin's history index could not be updated ({why}); the session is archived and the index update will be retried at the next start"
        ));
    }
}

/// The chats that took part carry the session for a day (a failure costs only that).
fn carry(e: &Ending<'_>, chats: &mut ChatHistories, warnings: &mut Warnings) {
    let marker = e.marker;
    if let Ok(ended) = chrono::DateTime::parse_from_rfc3339(&marker.requested_at) {
        let carried = crate::chats::carried::CarriedSession {
            session_id: e.session_id.into(),
            mode_name: e.display_name.into(),
            session_dir: e.dir.to_path_buf(),
            ended_at: marker.requested_at.clone(),
        };
        // a sub-mode's conclusion in a parent's records is no chat that took part
        let records: std::borrow::Cow<'_, [Record]> =
            if e.records.iter().any(super::paused::is_conclusion) {
                let own = e
                    .records
                    .iter()
                    .filter(|r| !super::paused::is_conclusion(r));
                own.cloned().collect::<Vec<_>>().into()
            } else {
                e.records.into()
            };
        if let Err(err) = chats.session_ended(&records, carried, ended) {
            warnings.push(format!(
                "session {}: the chats that took part will not carry it: {err}",
                e.session_id
            ));
        }
    }
}
