//! Crash-safe file primitives shared by everything that writes the workspace.
//!
//! `write_atomic` replaces a file so that a reader (or a crash) sees either the old or
//! the new content, never a mix: temp file in the same directory, fsync, rename, fsync
//! the directory. `append_line` appends one complete record with a single `write` and
//! fsyncs it, so JSONL files never hold interleaved lines. Damaged files are moved
//! aside ([`move_aside`]), never deleted; [`probe_space`] tells whether the disk takes a
//! write again after it was full.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Atomically replace `path` with `bytes`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    crate::failpoint::enospc("write.enospc")?;
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no parent"))?;
    create_private_dirs(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let result = (|| {
        let mut f = private_file(OpenOptions::new().write(true).create_new(true)).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Create `dir` and any missing parents as 0700: the workspace and everything in it is
/// the owner's alone (folders that already exist keep their mode).
pub fn create_private_dirs(dir: &Path) -> io::Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// Append `line` (a newline is added) to `path` with one write, then fsync.
pub fn append_line(path: &Path, line: &str) -> io::Result<()> {
    append_line_unsynced(path, line)?.sync_data()
}

/// [`append_line`] without the fsync: returns the file, which must be synced before the
/// line is relied on (`modes::durable` shares one fsync among the lines appended to a
/// file meanwhile).
pub fn append_line_unsynced(path: &Path, line: &str) -> io::Result<File> {
    crate::failpoint::enospc("append.enospc")?;
    if let Some(dir) = path.parent() {
        create_private_dirs(dir)?;
    }
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    let mut f = open_append_private(path)?;
    f.write_all(&buf)?;
    Ok(f)
}

/// Open a file for appending, created readable by its owner only.
pub fn open_append_private(path: &Path) -> io::Result<File> {
    private_file(OpenOptions::new().create(true).append(true)).open(path)
}

/// Create (truncate) a file readable by its owner only.
pub fn create_private(path: &Path) -> io::Result<File> {
    crate::failpoint::enospc("write.enospc")?;
    private_file(OpenOptions::new().write(true).create(true).truncate(true)).open(path)
}

/// New files are the owner's only (0600): they may hold secrets or family conversations.
fn private_file(o: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o
}

/// fsync a directory so a rename or a new file in it survives a crash.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Whether an error means the disk (or the user's quota) is full.
pub fn is_disk_full(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

/// Whether `dir` takes a write now: a small file (about one record) is written, fsynced
/// and removed. Used after a full disk, before work that must be recorded is accepted.
pub fn probe_space(dir: &Path) -> io::Result<()> {
    crate::failpoint::enospc("append.enospc")?;
    let probe = dir.join(format!(
        ".space-probe-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let result = (|| {
        let mut f = private_file(OpenOptions::new().write(true).create_new(true)).open(&probe)?;
        f.write_all(&[b'\n'; 4096])?;
        f.sync_all()
    })();
    let _ = fs::remove_file(&probe);
    result
}

/// Move `path` — a file, a folder, anything — aside as `<name>.<suffix>` (never over an
/// earlier one: `.1`, `.2`, … then) and return where it went. For what cannot be used
/// but may matter to a human: nothing is deleted.
pub fn move_aside(path: &Path, suffix: &str) -> io::Result<std::path::PathBuf> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut candidate = dir.join(format!("{name}.{suffix}"));
    let mut n = 1;
    while fs::symlink_metadata(&candidate).is_ok() {
        candidate = dir.join(format!("{name}.{suffix}.{n}"));
        n += 1;
    }
    fs::rename(path, &candidate)?;
    sync_dir(dir)?;
    Ok(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "temp files left behind");
    }

    #[test]
    fn append_adds_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/c.jsonl");
        append_line(&p, "{\"a\":1}").unwrap();
        append_line(&p, "{\"a\":2}").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "{\"a\":1}\n{\"a\":2}\n");
    }

    #[cfg(unix)]
    #[test]
    fn new_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.toml");
        write_atomic(&a, b"key").unwrap();
        let b = dir.path().join("b.jsonl");
        append_line(&b, "{}").unwrap();
        for p in [a, b] {
            assert_eq!(
                fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o600,
                "{}",
                p.display()
            );
        }
    }

    #[test]
    fn move_aside_takes_folders_too_and_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        fs::create_dir(&p).unwrap();
        fs::write(p.join("inside"), "kept").unwrap();
        let a = move_aside(&p, "corrupt").unwrap();
        fs::write(&p, "file").unwrap();
        let b = move_aside(&p, "corrupt").unwrap();
        assert_eq!(a, dir.path().join("c.jsonl.corrupt"));
        assert_eq!(b, dir.path().join("c.jsonl.corrupt.1"));
        assert_eq!(fs::read_to_string(a.join("inside")).unwrap(), "kept");
        assert_eq!(fs::read_to_string(b).unwrap(), "file");
        assert!(!p.exists());
    }

    #[test]
    fn the_space_probe_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        probe_space(dir.path()).unwrap();
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
