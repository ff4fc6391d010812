//! What the file tools may open and how much a writable folder may hold.
//!
//! Only regular files with one name: a FIFO, socket or device would block or never end,
//! and a hard link in `notes/` to `config.toml` would carry a private file's content
//! under a public path (zones are by path). Files are opened non-blocking and without
//! following a last symlink, and judged by the opened file's metadata, not the path, so
//! nothing can be swapped in between the check and the read. These functions block on the
//! disk; callers run them on the blocking pool.

use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use thiserror::Error;

/// Why a file was not opened or written; `shown` is the path as the model gave it.
#[derive(Debug, Error)]
pub enum FileError {
    #[error("error: {shown} does not exist")]
    NotFound { shown: String },
    #[error("error: {shown} is a symlink; open the file it points to")]
    Symlink { shown: String },
    #[error("error: cannot read {shown}: {source}")]
    Read {
        shown: String,
        source: std::io::Error,
    },
    #[error("error: cannot list {shown}: {source}")]
    List {
        shown: String,
        source: std::io::Error,
    },
    #[error("error: cannot write {shown}: {source}")]
    Write {
        shown: String,
        source: std::io::Error,
    },
    #[error("error: {shown} is not a UTF-8 text file")]
    NotText { shown: String },
    #[error("error: {shown} is a folder")]
    Folder { shown: String },
    #[error("error: {shown} is not a regular file (a pipe, socket or device); the file tools open only regular files")]
    NotRegular { shown: String },
    #[error("error: {shown} has more than one name (a hard link, {links} links); the file tools do not open it")]
    HardLink { shown: String, links: u64 },
    #[error("error: content is {len} bytes; the limit is {max}")]
    TooBig { len: usize, max: usize },
    #[error("error: {zone} holds more than {max_entries} entries; nothing more can be written there (quota: {max_files} files)")]
    ZoneEntries {
        zone: String,
        max_entries: usize,
        max_files: usize,
    },
    #[error("error: {zone} already holds {files} files, its quota is {max_files}; replace or reuse an existing file instead")]
    ZoneFiles {
        zone: String,
        files: usize,
        max_files: usize,
    },
    #[error(
        "error: {zone} would hold {bytes} bytes, its quota is {max_bytes}; nothing was written"
    )]
    ZoneBytes {
        zone: String,
        bytes: u64,
        max_bytes: u64,
    },
}

/// What one writable folder may hold (`tools.max_zone_bytes`, `tools.max_zone_files`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneLimits {
    pub max_bytes: u64,
    pub max_files: usize,
}

impl Default for ZoneLimits {
    fn default() -> Self {
        Self {
            max_bytes: 20 * 1024 * 1024,
            max_files: 500,
        }
    }
}

/// Open `p` for reading without blocking (a FIFO with no writer would wait forever) and
/// without following a symlink swapped in since the zone check; accept it only if the
/// opened file is a regular file with one name. Returns the file and its size.
pub fn open_regular(p: &Path, shown: &str) -> Result<(File, u64), FileError> {
    let shown_ = || shown.to_string();
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(p)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FileError::NotFound { shown: shown_() },
            _ if e.raw_os_error() == Some(libc::ELOOP) => FileError::Symlink { shown: shown_() },
            _ => FileError::Read {
                shown: shown_(),
                source: e,
            },
        })?;
    let meta = f.metadata().map_err(|e| FileError::Read {
        shown: shown_(),
        source: e,
    })?;
    check_regular(&meta, shown)?;
    Ok((f, meta.len()))
}

/// Only regular files with a single name (see the module doc for why).
pub fn check_regular(meta: &Metadata, shown: &str) -> Result<(), FileError> {
    let shown = shown.to_string();
    if meta.is_dir() {
        return Err(FileError::Folder { shown });
    }
    if !meta.is_file() {
        return Err(FileError::NotRegular { shown });
    }
    if meta.nlink() > 1 {
        return Err(FileError::HardLink {
            shown,
            links: meta.nlink(),
        });
    }
    Ok(())
}

/// Whether writing `new_len` bytes (replacing a file of `existing` bytes, if any) keeps
/// `zone` within its quota. The walk is bounded: a folder holding far more entries than
/// the quota allows is full, however it got there.
pub fn check_zone(
    name: &str,
    zone: &Path,
    existing: Option<u64>,
    new_len: u64,
    limits: &ZoneLimits,
) -> Result<(), FileError> {
    let max_entries = limits.max_files.saturating_mul(2).saturating_add(1000);
    let (mut files, mut bytes, mut entries) = (0usize, 0u64, 0usize);
    let mut stack = vec![zone.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            entries += 1;
            if entries > max_entries {
                return Err(FileError::ZoneEntries {
                    zone: name.to_string(),
                    max_entries,
                    max_files: limits.max_files,
                });
            }
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                files += 1;
                bytes = bytes.saturating_add(m.len());
            }
        }
    }
    let after_files = files + usize::from(existing.is_none());
    if existing.is_none() && after_files > limits.max_files {
        return Err(FileError::ZoneFiles {
            zone: name.to_string(),
            files,
            max_files: limits.max_files,
        });
    }
    let after_bytes = bytes
        .saturating_sub(existing.unwrap_or(0))
        .saturating_add(new_len);
    if after_bytes > limits.max_bytes {
        return Err(FileError::ZoneBytes {
            zone: name.to_string(),
            bytes: after_bytes,
            max_bytes: limits.max_bytes,
        });
    }
    Ok(())
}
