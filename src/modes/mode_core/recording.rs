//! Recording a turn: leaving its record's fsync to the turn (group commit, see
//! [`crate::modes::durable`]), and what a failure to record leaves behind — a warning, and while
//! the disk is full, turns refused before the model is asked.

use super::{ModeCore, ModeError, RecordingFailure};
use crate::modes::durable::{Pending, Syncs};
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};
use tracing::info;

impl ModeCore {
    /// A record was written through `fd`: sync it now, or leave a [`Pending`] for the
    /// caller to wait on.
    pub(in crate::modes) fn durable(
        syncs: &mut Syncs,
        path: &Path,
        fd: std::fs::File,
        defer: bool,
        pending: &mut Option<Pending>,
    ) -> std::io::Result<()> {
        if defer {
            *pending = Some(syncs.written(path, fd));
            Ok(())
        } else {
            fd.sync_data()
        }
    }

    /// A record's deferred fsync failed (see [`ModeCore::end_turn_deferred`]): remember it
    /// as a recording failure, as if the append itself had failed.
    pub fn sync_failed(&mut self, now: DateTime<Utc>, channel: &str, chat_id: &str, e: &ModeError) {
        self.note_recording_failure(now, channel, chat_id, e);
    }

    pub(in crate::modes) fn note_recording_failure(
        &mut self,
        now: DateTime<Utc>,
        channel: &str,
        chat_id: &str,
        e: &ModeError,
    ) {
        let at = Self::rfc3339(self.local(now));
        let (path, error, disk_full) = match e {
            ModeError::Io { path, source, .. } => (
                path.clone(),
                source.to_string(),
                crate::fsutil::is_disk_full(source),
            ),
            other => (PathBuf::new(), other.to_string(), false),
        };
        self.warn(format!(
            "{at}: a turn of {channel}/{chat_id} could not be recorded in {}: {error}",
            path.display()
        ));
        let since = match self.recording_failure.take() {
            Some(f) => f.since,
            None => at,
        };
        self.recording_failure = Some(RecordingFailure {
            since,
            path,
            error,
            disk_full,
        });
    }

    /// Before a turn that will be recorded: refuse it while the disk is known to be full
    /// (the last turn could not be recorded for lack of space) and a probe write in the
    /// same folder still fails, so nobody gets an answer that is then lost. Once the probe
    /// succeeds, turns are taken again. Any other failure lets the turn through: its own
    /// recording tells.
    pub fn check_recordable(&mut self) -> Result<(), ModeError> {
        let Some(f) = self.recording_failure.as_ref().filter(|f| f.disk_full) else {
            return Ok(());
        };
        let dir = f
            .path
            .parent()
            .filter(|d| d.is_dir())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.ws.root().to_path_buf());
        match crate::fsutil::probe_space(&dir) {
            Ok(()) => {
                info!(dir = %dir.display(), "the disk takes writes again");
                self.recording_failure = None;
                Ok(())
            }
            Err(e) if crate::fsutil::is_disk_full(&e) => Err(ModeError::DiskFull {
                since: f.since.clone(),
                error: e.to_string(),
            }),
            Err(_) => Ok(()),
        }
    }
}
