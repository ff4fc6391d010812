//! `<workspace>/modes/examples/<mode_id>.json`: a mode's kept cases, newest last,
//! replaced atomically after every change (under a lock on `modes/examples/.lock`, so the
//! gateway and `homebot examples forget` never lose each other's change). Bounded where
//! it enters: each case's words and answer are cut when kept and again when read, a file
//! holds at most [`MAX_KEEP`] cases, and one larger than [`MAX_FILE_BYTES`] or unreadable
//! is set aside (`.corrupt`) with a warning and the mode starts with none — a turn never
//! fails for it ([`ExampleStore::peek`] only reads, for the dashboard, which never writes).
//! A case id that comes in from outside is checked for its shape first ([`is_case_id`]).

use crate::fsutil;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The most characters of the user's words a case keeps.
pub const MAX_USER_CHARS: usize = 500;
/// The most characters of the answer a case keeps.
pub const MAX_ANSWER_CHARS: usize = 1500;
/// The largest `keep` a mode may ask for, and the most cases a file is read with.
pub const MAX_KEEP: usize = 200;
/// A cases file larger than this is not read (set aside as corrupt).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// How the household showed the answer served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Judged {
    /// `/good` right after the answer.
    Good,
    /// The next message was only praise ("这个好").
    Praised,
    /// The next message thanked ("谢谢").
    Thanked,
    /// The owner kept it from the dashboard (`/good CHANNEL CHAT_ID`): the owner's word on
    /// another chat's answer.
    Dashboard,
}

/// The longest case id: a mode id (at most 128 characters) and `-<n>`.
pub const MAX_CASE_ID: usize = 150;

/// Whether `id` has a case id's shape, `<mode_id>-<n>` (a safe mode id, a number), within
/// [`MAX_CASE_ID`]: checked where an id comes in (a command, a dashboard path).
pub fn is_case_id(id: &str) -> bool {
    let Some((mode_id, n)) = id.rsplit_once('-') else {
        return false;
    };
    id.len() <= MAX_CASE_ID
        && crate::config::is_safe_id(mode_id)
        && !n.is_empty()
        && n.len() <= 20
        && n.bytes().all(|b| b.is_ascii_digit())
}

/// Where the case was said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseScene {
    pub channel: String,
    pub chat_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
}

/// One effective case: what was asked, what was answered, where, when, how it was judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    /// `<mode_id>-<n>`, unique in the mode's file.
    pub id: String,
    pub user: String,
    pub answer: String,
    pub scene: CaseScene,
    /// When the answered turn began (household time, RFC 3339).
    pub at: String,
    pub judged: Judged,
    /// The session the turn was in.
    pub session_id: String,
}

impl Case {
    /// The case with its words and answer cut to their bounds.
    pub fn bounded(mut self) -> Self {
        self.user = cut(&self.user, MAX_USER_CHARS);
        self.answer = cut(&self.answer, MAX_ANSWER_CHARS);
        self
    }
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => text[..i].to_string(),
        None => text.to_string(),
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    next_id: u64,
    #[serde(default)]
    cases: Vec<Case>,
}

/// A mode's cases on disk.
#[derive(Debug, Clone)]
pub struct ExampleStore {
    dir: PathBuf,
}

impl ExampleStore {
    /// The store under `<workspace>/modes/examples`.
    pub fn new(ws: &crate::workspace::Workspace) -> Self {
        Self {
            dir: ws.modes_dir().join("examples"),
        }
    }

    pub fn path(&self, mode_id: &str) -> PathBuf {
        self.dir.join(format!("{mode_id}.json"))
    }

    /// The mode's cases, oldest first (at most [`MAX_KEEP`]), and a warning if the file
    /// was set aside. Never an error: what cannot be read is no cases.
    pub fn load(&self, mode_id: &str) -> (Vec<Case>, Option<String>) {
        let (f, warning) = read(&self.path(mode_id));
        (f.cases, warning)
    }

    /// The mode's cases as [`Self::load`] reads them, but only read: an unreadable file is
    /// left where it is (the warning says so) for the gateway to set aside — for a reader
    /// that never writes (the dashboard).
    pub fn peek(&self, mode_id: &str) -> (Vec<Case>, Option<String>) {
        let path = self.path(mode_id);
        match parse(&path) {
            Ok(f) => (f.cases, None),
            Err(why) => (
                Vec::new(),
                Some(format!(
                    "{} is unreadable ({why}); the gateway sets it aside when it next reads it",
                    path.display()
                )),
            ),
        }
    }

    /// Every mode's cases (the mode ids of the files in the folder, sorted).
    pub fn modes(&self) -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let id = name.strip_suffix(".json")?.to_string();
                crate::config::is_safe_id(&id).then_some(id)
            })
            .collect();
        ids.sort();
        ids
    }

    /// Keep `case` (its id is given here) as the mode's newest, dropping the oldest past
    /// `keep`. Returns the id and a warning if the old file had to be set aside.
    pub fn add(
        &self,
        mode_id: &str,
        case: Case,
        keep: usize,
    ) -> std::io::Result<(String, Option<String>)> {
        self.update(mode_id, |f| {
            f.next_id += 1;
            let id = format!("{mode_id}-{}", f.next_id);
            f.cases.push(Case {
                id: id.clone(),
                ..case.bounded()
            });
            let over = f.cases.len().saturating_sub(keep.clamp(1, MAX_KEEP));
            f.cases.drain(..over);
            id
        })
    }

    /// Forget case `id` (`<mode_id>-<n>`); `false` if there is none.
    pub fn forget(&self, id: &str) -> std::io::Result<bool> {
        let Some((mode_id, _)) = id.rsplit_once('-') else {
            return Ok(false);
        };
        if !crate::config::is_safe_id(mode_id) || !self.path(mode_id).exists() {
            return Ok(false);
        }
        self.update(mode_id, |f| {
            let before = f.cases.len();
            f.cases.retain(|c| c.id != id);
            f.cases.len() != before
        })
        .map(|(found, _)| found)
    }

    /// Read, change and write back the mode's file under the folder's lock.
    fn update<T>(
        &self,
        mode_id: &str,
        change: impl FnOnce(&mut File) -> T,
    ) -> std::io::Result<(T, Option<String>)> {
        fsutil::create_private_dirs(&self.dir)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(".lock"))?;
        lock.lock()?;
        let path = self.path(mode_id);
        let (mut f, warning) = read(&path);
        let out = change(&mut f);
        let mut bytes = serde_json::to_vec_pretty(&f).expect("cases always serialize");
        bytes.push(b'\n');
        fsutil::write_atomic(&path, &bytes)?;
        Ok((out, warning))
    }
}

/// The file at `path`, bounded; an unreadable one is set aside and read as empty.
fn read(path: &Path) -> (File, Option<String>) {
    match parse(path) {
        Ok(f) => (f, None),
        Err(why) => {
            let kept = match fsutil::move_aside(path, "corrupt") {
                Ok(aside) => format!("kept as {}", aside.display()),
                Err(e) => format!("could not be set aside: {e}"),
            };
            let warning = format!(
                "{} is unreadable ({why}); {kept}; the mode's examples start empty",
                path.display()
            );
            tracing::warn!("{warning}");
            (File::default(), Some(warning))
        }
    }
}

/// Why a cases file cannot be read.
#[derive(Debug, thiserror::Error)]
enum Unreadable {
    #[error("larger than {MAX_FILE_BYTES} bytes")]
    TooLarge,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// The file at `path`, bounded (none: empty), or why it cannot be read.
fn parse(path: &Path) -> Result<File, Unreadable> {
    let too_big = std::fs::metadata(path).is_ok_and(|m| m.len() > MAX_FILE_BYTES);
    let mut f: File = match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(File::default()),
        _ if too_big => return Err(Unreadable::TooLarge),
        Err(e) => return Err(e.into()),
        Ok(bytes) => serde_json::from_slice(&bytes)?,
    };
    let over = f.cases.len().saturating_sub(MAX_KEEP);
    f.cases.drain(..over);
    f.cases = f.cases.into_iter().map(Case::bounded).collect();
    Ok(f)
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
