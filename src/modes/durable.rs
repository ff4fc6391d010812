//! Group commit for history files: the ModeManager appends a turn's record with one
//! `write` and hands out a [`Pending`]; the turn waits on it — outside the actor — before
//! its reply goes out. The waits on one file share their fsyncs: one `fdatasync` at a
//! time per file, each covering every record written to it before it started, so fifty
//! turns ending at once in a mode session cost a few fsyncs instead of fifty in a row,
//! and the actor never blocks on the disk.
//!
//! Durability is unchanged: a turn is acknowledged only after an fsync that began after
//! its own write returned. A failed fsync fails every record it covered (the kernel says
//! so to their users); later records are synced afresh.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// The files with records written and possibly not yet synced (held by the actor).
#[derive(Default)]
pub struct Syncs {
    files: HashMap<PathBuf, Weak<FileSync>>,
    /// Prune dead entries when the map passes this size.
    prune_at: usize,
}

struct FileSync {
    /// Generation of the newest record written (assigned after its write returned).
    written: AtomicU64,
    /// Held by the one waiter that fsyncs; what is known durable.
    lead: tokio::sync::Mutex<Synced>,
}

#[derive(Default)]
struct Synced {
    /// Every record up to this generation is on disk.
    through: u64,
    /// The last failed fsync: the generations it covered and its error.
    failed: Option<(u64, io::ErrorKind, String)>,
}

/// A record written to `path` and not yet known durable.
pub struct Pending {
    file: Arc<FileSync>,
    gen: u64,
    fd: File,
    pub path: PathBuf,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("path", &self.path)
            .field("gen", &self.gen)
            .finish()
    }
}

impl Syncs {
    /// A record's write to `path` returned (through `fd`): what its turn waits on.
    pub fn written(&mut self, path: &Path, fd: File) -> Pending {
        let file = match self.files.get(path).and_then(Weak::upgrade) {
            Some(f) => f,
            None => {
                let f = Arc::new(FileSync {
                    written: AtomicU64::new(0),
                    lead: tokio::sync::Mutex::new(Synced::default()),
                });
                self.files.insert(path.to_path_buf(), Arc::downgrade(&f));
                if self.files.len() > self.prune_at {
                    // only files with a turn still waiting stay (voice makes a chat per wake)
                    self.files.retain(|_, w| w.strong_count() > 0);
                    self.prune_at = (self.files.len() * 2).max(64);
                }
                f
            }
        };
        let gen = file.written.fetch_add(1, Ordering::AcqRel) + 1;
        Pending {
            file,
            gen,
            fd,
            path: path.to_path_buf(),
        }
    }

    /// Files tracked (for tests).
    pub fn tracked(&self) -> usize {
        self.files.len()
    }
}

impl Pending {
    /// Resolves once this record is on disk: after an fsync that began after its write,
    /// its own or one another turn ran for the same file meanwhile.
    pub async fn wait(self) -> io::Result<()> {
        let mut lead = self.file.lead.lock().await;
        if lead.through >= self.gen {
            return Ok(());
        }
        if let Some((upto, kind, msg)) = &lead.failed {
            if self.gen <= *upto {
                return Err(io::Error::new(*kind, msg.clone()));
            }
        }
        // every record with a generation up to here was written before this fsync begins
        let upto = self.file.written.load(Ordering::Acquire);
        let fd = self.fd;
        let r = tokio::task::spawn_blocking(move || fd.sync_data())
            .await
            .unwrap_or_else(|e| Err(io::Error::other(e)));
        match r {
            Ok(()) => {
                lead.through = lead.through.max(upto);
                Ok(())
            }
            Err(e) => {
                lead.failed = Some((upto, e.kind(), e.to_string()));
                Err(e)
            }
        }
    }

    /// Sync now, on this thread (a caller that cannot wait asynchronously).
    pub fn sync_now(self) -> io::Result<()> {
        self.fd.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn append(s: &mut Syncs, path: &Path, line: &str) -> Pending {
        let mut f = crate::fsutil::open_append_private(path).unwrap();
        f.write_all(line.as_bytes()).unwrap();
        s.written(path, f)
    }

    #[tokio::test]
    async fn waits_on_one_file_share_fsyncs_and_each_sees_its_record_durable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        let mut s = Syncs::default();
        let pending: Vec<Pending> = (0..20)
            .map(|i| append(&mut s, &p, &format!("{i}\n")))
            .collect();
        let file = pending[0].file.clone();
        let waits: Vec<_> = pending
            .into_iter()
            .map(|p| tokio::spawn(p.wait()))
            .collect();
        for w in waits {
            w.await.unwrap().unwrap();
        }
        // the first waiter's fsync covered all twenty writes
        assert_eq!(file.lead.lock().await.through, 20);
        assert_eq!(std::fs::read_to_string(&p).unwrap().lines().count(), 20);
    }

    #[tokio::test]
    async fn a_record_written_after_an_fsync_began_gets_one_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        let mut s = Syncs::default();
        let first = append(&mut s, &p, "a\n");
        let file = first.file.clone();
        first.wait().await.unwrap();
        assert_eq!(file.lead.lock().await.through, 1);
        let second = append(&mut s, &p, "b\n");
        second.wait().await.unwrap();
        assert_eq!(file.lead.lock().await.through, 2);
    }

    #[tokio::test]
    async fn a_failed_fsync_fails_the_records_it_covered_and_not_later_ones() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        let mut s = Syncs::default();
        let a = append(&mut s, &p, "a\n");
        let b = append(&mut s, &p, "b\n");
        let file = a.file.clone();
        // as if the fsync covering both had failed
        file.lead.lock().await.failed = Some((2, io::ErrorKind::StorageFull, "full".into()));
        assert_eq!(
            a.wait().await.unwrap_err().kind(),
            io::ErrorKind::StorageFull
        );
        assert!(b.wait().await.is_err());
        let c = append(&mut s, &p, "c\n");
        c.wait().await.unwrap();
    }

    #[test]
    fn files_without_a_waiting_turn_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Syncs::default();
        for i in 0..1000 {
            let p = dir.path().join(format!("wake-{i}.jsonl"));
            append(&mut s, &p, "x\n").sync_now().unwrap();
        }
        assert!(s.tracked() <= 65, "{}", s.tracked());
    }
}
