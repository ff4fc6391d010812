//! Which ended mode session each chat carries: when a session ends (an exit, the expiry
//! after midnight, an archive at start), every chat that took part in it remembers it
//! for a day, so "刚才那道菜放了多少盐" in the same QQ group still finds the answer. The
//! block itself is rendered by [`crate::context::carry`]; this file only keeps who
//! carries what, in `chats/carried.json` (written atomically, bounded, and a damaged
//! file is set aside with a warning — the chats then carry nothing, and lose nothing).

use chrono::{DateTime, Duration, FixedOffset};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tracing::warn;

pub const CARRIED_FILE: &str = "carried.json";
/// How long a chat carries an ended session.
pub const CARRY_FOR: Duration = Duration::hours(24);
/// Chats of one session that carry it (the ones that spoke last); a session with more
/// (a voice wake is a chat of its own) does not fill the file.
const MAX_CHATS_PER_SESSION: usize = 16;
/// Entries kept at most (the newest ended first).
const MAX_ENTRIES: usize = 256;
/// A larger file is not ours.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// An ended session a chat carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CarriedSession {
    pub session_id: String,
    /// The mode's display name ("做饭模式").
    pub mode_name: String,
    /// The session's folder (relative to the workspace in the file, absolute when handed
    /// out).
    pub session_dir: PathBuf,
    /// When it ended (household time, RFC 3339).
    pub ended_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    channel: String,
    chat_id: String,
    #[serde(flatten)]
    session: CarriedSession,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    chats: Vec<Entry>,
}

pub struct Carried {
    /// `chats/carried.json`.
    path: PathBuf,
    /// The workspace root, which session folders are relative to.
    root: PathBuf,
    entries: Vec<Entry>,
}

impl Carried {
    /// What `chats_dir/carried.json` holds; a damaged file is moved aside with a warning.
    pub fn load(chats_dir: &Path) -> Self {
        let path = chats_dir.join(CARRIED_FILE);
        let root = chats_dir.parent().unwrap_or(chats_dir).to_path_buf();
        let entries = match read(&path) {
            Ok(f) => f.chats,
            Err(None) => Vec::new(),
            Err(Some(why)) => {
                match crate::fsutil::move_aside(&path, "corrupt") {
                    Ok(aside) => {
                        warn!(path = %path.display(), aside = %aside.display(), why = %why, "unusable carried-session file moved aside; chats carry no ended session")
                    }
                    Err(e) => {
                        warn!(path = %path.display(), why = %why, error = %e, "unusable carried-session file could not be moved aside")
                    }
                }
                Vec::new()
            }
        };
        Self {
            path,
            root,
            entries,
        }
    }

    /// The session `channel`/`chat_id` carries at `now`, if it ended less than a day ago.
    pub fn get(
        &self,
        channel: &str,
        chat_id: &str,
        now: DateTime<FixedOffset>,
    ) -> Option<CarriedSession> {
        let e = self
            .entries
            .iter()
            .find(|e| e.channel == channel && e.chat_id == chat_id)?;
        if !fresh(&e.session.ended_at, now) {
            return None;
        }
        let mut s = e.session.clone();
        s.session_dir = self.root.join(&s.session_dir);
        Some(s)
    }

    /// `session` ended: the chats that took part (`chats`, newest first) carry it from
    /// now on, in place of whatever they carried. Expired entries go.
    pub fn ended(
        &mut self,
        chats: &[(String, String)],
        mut session: CarriedSession,
        now: DateTime<FixedOffset>,
    ) -> std::io::Result<()> {
        if let Ok(rel) = session.session_dir.strip_prefix(&self.root) {
            session.session_dir = rel.to_path_buf();
        }
        let chats = &chats[..chats.len().min(MAX_CHATS_PER_SESSION)];
        self.entries.retain(|e| {
            fresh(&e.session.ended_at, now)
                && !chats
                    .iter()
                    .any(|(ch, id)| *ch == e.channel && *id == e.chat_id)
        });
        for (channel, chat_id) in chats.iter().rev() {
            self.entries.insert(
                0,
                Entry {
                    channel: channel.clone(),
                    chat_id: chat_id.clone(),
                    session: session.clone(),
                },
            );
        }
        self.entries.truncate(MAX_ENTRIES);
        let file = File {
            chats: self.entries.clone(),
        };
        let bytes = serde_json::to_vec_pretty(&file).expect("carried sessions serialize");
        crate::fsutil::write_atomic(&self.path, &bytes)
    }
}

/// Ended less than [`CARRY_FOR`] before `now` (an unreadable time is not fresh).
fn fresh(ended_at: &str, now: DateTime<FixedOffset>) -> bool {
    DateTime::parse_from_rfc3339(ended_at).is_ok_and(|t| now - t < CARRY_FOR && t <= now)
}

/// The file's contents; `Err(None)`: there is none; `Err(Some(why))`: it is unusable.
fn read(path: &Path) -> Result<File, Option<String>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
        Err(e) => return Err(Some(e.to_string())),
    };
    if !meta.is_file() {
        return Err(Some("not a regular file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(Some(format!("{} bytes", meta.len())));
    }
    let bytes = std::fs::read(path).map_err(|e| Some(e.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|e| Some(e.to_string()))
}

/// The chats that took part in a session, newest first, each once.
pub fn participants(records: &[crate::history::Record]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in records.iter().rev() {
        // a wake's carry is kept where the next wake finds it: its place (the satellite)
        let id = r.place.as_ref().unwrap_or(&r.chat_id);
        if !out.iter().any(|(ch, i)| *ch == r.channel && i == id) {
            out.push((r.channel.clone(), id.clone()));
            if out.len() == MAX_CHATS_PER_SESSION {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339(s).unwrap()
    }

    fn session(id: &str, ended: &str, root: &Path) -> CarriedSession {
        CarriedSession {
            session_id: id.into(),
            mode_name: "做饭模式".into(),
            session_dir: root.join("modes/cooking/sessions").join(id),
            ended_at: ended.into(),
        }
    }

    #[test]
    fn a_chat_carries_the_session_it_took_part_in_for_a_day() {
        let ws = tempfile::tempdir().unwrap();
        let chats = ws.path().join("chats");
        std::fs::create_dir_all(&chats).unwrap();
        let mut c = Carried::load(&chats);
        let group = ("qq".to_string(), "group:1".to_string());
        let now = at("2026-10-22T21:00:00+08:00");
        c.ended(
            std::slice::from_ref(&group),
            session("s1", "2026-10-22T21:00:00+08:00", ws.path()),
            now,
        )
        .unwrap();
        // reloaded from the file, the folder is the workspace's again
        let c = Carried::load(&chats);
        let got = c.get("qq", "group:1", now).unwrap();
        assert_eq!(got.session_dir, ws.path().join("modes/cooking/sessions/s1"));
        assert!(c.get("qq", "group:2", now).is_none());
        assert!(c
            .get("qq", "group:1", at("2026-10-23T20:59:00+08:00"))
            .is_some());
        assert!(c
            .get("qq", "group:1", at("2026-10-23T21:00:01+08:00"))
            .is_none());
        let rel = std::fs::read_to_string(chats.join(CARRIED_FILE)).unwrap();
        assert!(
            !rel.contains(&ws.path().display().to_string()),
            "relative: {rel}"
        );
    }

    #[test]
    fn a_later_session_replaces_the_earlier_and_the_file_stays_bounded() {
        let ws = tempfile::tempdir().unwrap();
        let chats = ws.path().join("chats");
        std::fs::create_dir_all(&chats).unwrap();
        let mut c = Carried::load(&chats);
        let now = at("2026-10-22T21:00:00+08:00");
        let many: Vec<(String, String)> = (0..40)
            .map(|i| ("voice".to_string(), format!("wake-{i}")))
            .collect();
        for s in 0..20 {
            c.ended(
                &many,
                session(&format!("s{s}"), "2026-10-22T20:00:00+08:00", ws.path()),
                now,
            )
            .unwrap();
        }
        assert_eq!(c.entries.len(), MAX_CHATS_PER_SESSION);
        assert_eq!(c.get("voice", "wake-0", now).unwrap().session_id, "s19");
        assert!(
            c.get("voice", "wake-39", now).is_none(),
            "beyond the per-session cap"
        );
    }

    #[test]
    fn a_damaged_file_is_set_aside() {
        let ws = tempfile::tempdir().unwrap();
        let chats = ws.path().join("chats");
        std::fs::create_dir_all(&chats).unwrap();
        std::fs::write(chats.join(CARRIED_FILE), b"{\"chats\": [").unwrap();
        let c = Carried::load(&chats);
        assert!(c.entries.is_empty());
        assert!(chats.join("carried.json.corrupt").exists());
    }

    #[test]
    fn participants_are_the_newest_chats_each_once() {
        let rec = |ch: &str, id: &str| crate::history::Record {
            timestamp: "2026-10-22T20:00:00+08:00".into(),
            channel: ch.into(),
            chat_id: id.into(),
            speaker_id: "mom".into(),
            user: "u".into(),
            assistant: "a".into(),
            error: None,
            speaker_name: None,
            sent: None,
            place: None,
            tool_results: Vec::new(),
        };
        let rs = vec![
            rec("qq", "group:1"),
            rec("cli", "local"),
            rec("qq", "group:1"),
        ];
        assert_eq!(
            participants(&rs),
            vec![
                ("qq".to_string(), "group:1".to_string()),
                ("cli".to_string(), "local".to_string())
            ]
        );
    }
}
