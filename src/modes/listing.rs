//! Every mode session folder and its true state, newest first across modes (`homebot
//! sessions`). Read-only: safe beside a running gateway.
//!
//! States: `archived` (has `summary.md`), `exiting` (an exit was requested and the archive
//! has not finished), `active` (the session `action.json` names), `expired` (named, but
//! past its `expires_at`: archived as soon as homebot opens the state), `paused` (the
//! parent a running sub-mode paused, `paused.json`), `unfinished` (none
//! of those: archived as `recovered` at the next start).

use super::action::ActionDoc;
use super::dirs::{file_name, read_dirs};
use super::session::{CONVERSATION_FILE, EXIT_MARKER_FILE, SUMMARY_FILE};
use super::session_id::SessionId;
use crate::workspace::Workspace;
use crate::zone::Zone;
use chrono::{DateTime, FixedOffset};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    Active,
    /// `action.json` still names it, but its `expires_at` has passed: it is archived as
    /// soon as homebot opens the mode state (the next start, turn or cron tick).
    Expired,
    Exiting,
    Archived,
    /// The parent session a running sub-mode paused.
    Paused,
    Unfinished,
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Active => "active",
            SessionState::Expired => "expired",
            SessionState::Exiting => "exiting",
            SessionState::Archived => "archived",
            SessionState::Paused => "paused",
            SessionState::Unfinished => "unfinished",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub mode_id: String,
    pub session_id: String,
    pub started: Option<DateTime<FixedOffset>>,
    pub turns: usize,
    pub state: SessionState,
}

/// All session folders homebot made, newest start first (unknown starts last).
pub fn list_sessions(ws: &Workspace, tz: Zone, now: DateTime<chrono::Utc>) -> Vec<SessionRow> {
    let action = ActionDoc::read(&ws.action_file()).ok().flatten();
    let active = action.as_ref().filter(|a| a.active);
    let active_id = active.and_then(|a| a.session_id.clone());
    let past_due = active
        .and_then(|a| a.expires_at.as_deref())
        .and_then(|e| DateTime::parse_from_rfc3339(e).ok())
        .is_some_and(|e| e <= now);
    let paused = super::paused::PausedDoc::read(&super::paused::PausedDoc::path(&ws.modes_dir()))
        .ok()
        .flatten()
        .map(|p| p.session_id().to_string());
    let mut rows = Vec::new();
    for mode_dir in read_dirs(&ws.sessions_root()) {
        for sdir in read_dirs(&mode_dir) {
            let session_id = file_name(&sdir);
            let Some(id) = SessionId::parse(&session_id) else {
                continue; // not a session folder homebot made
            };
            let turns = std::fs::read(sdir.join(CONVERSATION_FILE))
                .map(|b| {
                    b.split(|&c| c == b'\n')
                        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
                        .count()
                })
                .unwrap_or(0);
            let state = if sdir.join(SUMMARY_FILE).exists() {
                SessionState::Archived
            } else if sdir.join(EXIT_MARKER_FILE).exists() {
                SessionState::Exiting
            } else if active_id.as_deref() == Some(session_id.as_str()) {
                if past_due {
                    SessionState::Expired
                } else {
                    SessionState::Active
                }
            } else if paused.as_deref() == Some(session_id.as_str()) {
                SessionState::Paused
            } else {
                SessionState::Unfinished
            };
            rows.push(SessionRow {
                mode_id: file_name(&mode_dir),
                session_id,
                started: id.started_in(tz),
                turns,
                state,
            });
        }
    }
    rows.sort_by(|a, b| {
        b.started
            .cmp(&a.started)
            .then_with(|| b.session_id.cmp(&a.session_id))
    });
    rows
}

/// The table `homebot sessions` prints.
pub fn render(rows: &[SessionRow]) -> String {
    if rows.is_empty() {
        return "no mode sessions yet\n".into();
    }
    let mut out = String::new();
    for r in rows {
        out.push_str(&format!(
            "{}\t{}\t{}\t{} turns\t{}\n",
            r.mode_id,
            r.session_id,
            r.started
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, false))
                .unwrap_or_else(|| "?".into()),
            r.turns,
            r.state.as_str()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_first_across_modes_with_true_states() {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        let tz: Zone = "Asia/Shanghai".parse().unwrap();
        let mk = |mode: &str, sid: &str, files: &[&str]| {
            let dir = ws.sessions_dir(mode).join(sid);
            std::fs::create_dir_all(&dir).unwrap();
            for f in files {
                std::fs::write(dir.join(f), "{}\n").unwrap();
            }
        };
        // ids that sort the other way round by string than by time
        mk(
            "zeta",
            "z-20261020-100000-aaaaaa",
            &[SUMMARY_FILE, CONVERSATION_FILE],
        );
        mk("alpha", "a-20261022-090000-bbbbbb", &[EXIT_MARKER_FILE]);
        mk("cooking", "cook-20261021-190000-cccccc", &[]);
        mk(
            "cooking",
            "cook-20261022-195500-dddddd",
            &[CONVERSATION_FILE],
        );
        mk("cooking", "backup-copy", &[]);
        let mut doc = ActionDoc::inactive(None);
        doc.active = true;
        doc.mode_id = Some("cooking".into());
        doc.display_name = Some("做饭模式".into());
        doc.session_id = Some("cook-20261022-195500-dddddd".into());
        doc.started_at = Some("2026-10-22T19:55:00+08:00".into());
        doc.expires_at = Some("2026-10-23T00:10:00+08:00".into());
        doc.session_dir = Some("/x".into());
        doc.write(&ws.action_file()).unwrap();
        let before = chrono::DateTime::parse_from_rfc3339("2026-10-22T21:00:00+08:00")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let rows = list_sessions(&ws, tz, before);
        let got: Vec<(&str, SessionState)> = rows
            .iter()
            .map(|r| (r.session_id.as_str(), r.state))
            .collect();
        assert_eq!(
            got,
            [
                ("cook-20261022-195500-dddddd", SessionState::Active),
                ("a-20261022-090000-bbbbbb", SessionState::Exiting),
                ("cook-20261021-190000-cccccc", SessionState::Unfinished),
                ("z-20261020-100000-aaaaaa", SessionState::Archived),
            ]
        );
        assert_eq!(rows[0].turns, 1);
        // past its expires_at it is not shown as active, even before anything archived it
        let after = chrono::DateTime::parse_from_rfc3339("2026-10-23T08:00:00+08:00")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(
            list_sessions(&ws, tz, after)[0].state,
            SessionState::Expired
        );
        assert!(render(&rows).contains("2026-10-22T19:55:00+08:00"));
    }
}
