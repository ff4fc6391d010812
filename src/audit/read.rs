//! Finding and reading the audit trail: a session's folder, every audit file, their records
//! with their times (`load`), and what could not be read (`AuditError`).

use crate::modes::SessionId;
use crate::provider::audit::{AuditRecord, AUDIT_DIR, SESSION_AUDIT_FILE};
use crate::workspace::Workspace;
use std::io::BufRead;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("{0:?} is not a mode session id (like cook-20261022-195500-a1b2c3)")]
    BadSessionId(String),
    #[error("no mode session {0} in {1}")]
    UnknownSession(String, PathBuf),
}

/// Records read, oldest first, and what could not be read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub records: Vec<AuditRecord>,
    /// Files with lines skipped, and how many.
    pub skipped: Vec<(PathBuf, usize)>,
}

impl Loaded {
    /// One note per file with unreadable lines, for stderr.
    pub fn notes(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|(p, n)| format!("note: skipped {n} unreadable line(s) in {}", p.display()))
            .collect()
    }
}

/// The folder of mode session `id`, active or archived.
pub fn session_dir(ws: &Workspace, id: &str) -> Result<PathBuf, AuditError> {
    // the id becomes a path component: only a well-formed one is looked for
    if SessionId::parse(id).is_none() || !crate::config::is_safe_id(id) {
        return Err(AuditError::BadSessionId(id.chars().take(80).collect()));
    }
    let root = ws.sessions_root();
    for mode in subdirs(&root) {
        let dir = mode.join(id);
        if dir.is_dir() {
            return Ok(dir);
        }
    }
    Err(AuditError::UnknownSession(id.to_string(), root))
}

/// Every audit file: the dated ones and each mode session's.
pub fn all_files(ws: &Workspace) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(ws.root().join(crate::workspace::LOGS_DIR).join(AUDIT_DIR))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
    for mode in subdirs(&ws.sessions_root()) {
        for s in subdirs(&mode) {
            let f = s.join(SESSION_AUDIT_FILE);
            if f.is_file() {
                files.push(f);
            }
        }
    }
    files.sort();
    files
}

/// The records of `session` (a mode session id), or of every file.
pub fn load(ws: &Workspace, session: Option<&str>) -> Result<Loaded, AuditError> {
    let files = match session {
        Some(id) => vec![session_dir(ws, id)?.join(SESSION_AUDIT_FILE)],
        None => all_files(ws),
    };
    let mut out = Loaded::default();
    let mut stamped = Vec::new();
    for f in files {
        let (recs, bad) = read_file(&f);
        if bad > 0 {
            out.skipped.push((f, bad));
        }
        stamped.extend(recs);
    }
    // by instant (files interleave; offsets may differ if the household moved zones)
    stamped.sort_by_key(|(at, _)| *at);
    out.records = stamped.into_iter().map(|(_, r)| r).collect();
    Ok(out)
}

type Stamped = (chrono::DateTime<chrono::FixedOffset>, AuditRecord);

/// The records of one file and the number of lines that did not parse.
pub fn read_file(path: &Path) -> (Vec<Stamped>, usize) {
    let Ok(f) = std::fs::File::open(path) else {
        return (Vec::new(), 0);
    };
    let (mut recs, mut bad) = (Vec::new(), 0);
    for line in std::io::BufReader::new(f).split(b'\n') {
        let Ok(line) = line else {
            bad += 1;
            break;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = serde_json::from_slice::<AuditRecord>(&line)
            .ok()
            .and_then(|r| {
                let at = chrono::DateTime::parse_from_rfc3339(&r.timestamp).ok()?;
                Some((at, r))
            });
        match parsed {
            Some(x) => recs.push(x),
            None => bad += 1,
        }
    }
    (recs, bad)
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}
