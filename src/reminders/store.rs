//! `<workspace>/reminders.json`: the whole [`ReminderBook`], replaced atomically (temp
//! file, fsync, rename) after every change, 0600 like every file homebot writes. A file
//! that cannot be read is moved aside as `.corrupt` and reported; the book starts empty.

use super::ReminderBook;
use std::path::{Path, PathBuf};

pub use crate::workspace::REMINDERS_FILE;

#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct StoreError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Load the book; `Ok((book, Some(warning)))` when a corrupt file was set aside.
pub fn load(path: &Path) -> Result<(ReminderBook, Option<String>), StoreError> {
    let err = |source| StoreError {
        path: path.to_path_buf(),
        source,
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((ReminderBook::default(), None))
        }
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => Vec::new(),
        Err(e) => return Err(err(e)),
    };
    match serde_json::from_slice::<ReminderBook>(&bytes) {
        Ok(b) => Ok((b, None)),
        Err(e) => {
            let aside = crate::fsutil::move_aside(path, "corrupt").map_err(err)?;
            Ok((
                ReminderBook::default(),
                Some(format!(
                    "{} is unreadable ({e}); kept as {}; reminders start empty",
                    path.display(),
                    aside.display()
                )),
            ))
        }
    }
}

pub fn save(path: &Path, book: &ReminderBook) -> Result<(), StoreError> {
    let mut bytes = serde_json::to_vec_pretty(book).expect("a ReminderBook always serializes");
    bytes.push(b'\n');
    crate::fsutil::write_atomic(path, &bytes).map_err(|source| StoreError {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_loaded_and_corrupt_set_aside() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(REMINDERS_FILE);
        assert_eq!(load(&p).unwrap().0, ReminderBook::default());
        let mut b = ReminderBook::default();
        let now = chrono::DateTime::parse_from_rfc3339("2026-10-22T19:50:00+08:00").unwrap();
        let origin = super::super::Origin {
            channel: "cli".into(),
            chat_id: "local".into(),
            speaker_id: "mom".into(),
            target: "local".into(),
        };
        b.add(now, now + chrono::Duration::minutes(10), "关火", origin)
            .unwrap();
        save(&p, &b).unwrap();
        assert_eq!(load(&p).unwrap().0, b);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        std::fs::write(&p, "{not json").unwrap();
        let (fresh, warning) = load(&p).unwrap();
        assert_eq!(fresh, ReminderBook::default());
        assert!(warning.unwrap().contains("corrupt"));
        assert!(d.path().join("reminders.json.corrupt").exists());
    }
}
