//! The one background writer of the provider's logs (`logs/usage.jsonl`, the audit
//! files): a turn hands it a line and goes on; it never waits for a disk.
//!
//! A thread owns the files. Lines arrive on a bounded channel; the thread takes whatever
//! has queued up (at most [`MAX_BATCH`] lines, gathered for a few milliseconds after the
//! first) and appends each file's lines with one write. The `fdatasync` comes at most
//! [`SYNC_WITHIN`] later, once for every file written meanwhile: these logs acknowledge
//! no turn, and under load one sync per file covers every batch of that stretch, so the
//! logs add next to nothing to the disk queue the turns' own records wait on (one sync
//! per call before, as many as the records'). A power cut loses at most that stretch of
//! usage and audit lines. When the channel is full (the disk is stalled) a line is
//! dropped and counted, with a warning, rather than blocking the turn.
//! [`LogWriter::flush`] waits until everything sent before it is on disk; dropping the
//! last handle drains the queue, syncs and joins the thread (the provider's shutdown
//! path).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tracing::warn;

/// Lines that may wait for the writer before new ones are dropped.
pub const QUEUE_CAPACITY: usize = 4096;
/// Most lines written as one batch.
pub const MAX_BATCH: usize = 512;
/// How long the thread lets lines gather after the first one wakes it.
const GATHER: Duration = Duration::from_millis(5);
/// Longest a written line waits for its `fdatasync` (unless a flush asks sooner).
pub const SYNC_WITHIN: Duration = Duration::from_millis(500);
/// How long [`LogWriter::flush`] waits for the disk.
const FLUSH_WAIT: Duration = Duration::from_secs(10);

enum Job {
    Line(PathBuf, String),
    Flush(oneshot::Sender<()>),
}

/// What the writer has done, for tests and `status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Lines appended.
    pub lines: u64,
    /// Batches written (one write per file each).
    pub batches: u64,
    /// `fdatasync` calls made (one per file per sync, covering all batches before it).
    pub syncs: u64,
    /// Lines dropped because the queue was full.
    pub dropped: u64,
}

#[derive(Default)]
struct Counters {
    /// Lines sent and not yet taken by the thread (the queue's bound is on this: the
    /// channel itself allocates as it fills, so an idle writer holds next to nothing).
    queued: AtomicU64,
    lines: AtomicU64,
    batches: AtomicU64,
    syncs: AtomicU64,
    dropped: AtomicU64,
}

pub struct LogWriter {
    tx: Option<Sender<Job>>,
    counters: Arc<Counters>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl LogWriter {
    pub fn start() -> Self {
        Self::spawn(None)
    }

    /// A writer that writes nothing until the returned gate is opened (dropped or sent
    /// to): for tests that need lines to queue up deterministically.
    #[doc(hidden)]
    pub fn start_gated() -> (Self, std::sync::mpsc::Sender<()>) {
        let (open, gate) = std::sync::mpsc::channel();
        (Self::spawn(Some(gate)), open)
    }

    fn spawn(gate: Option<std::sync::mpsc::Receiver<()>>) -> Self {
        let (tx, rx) = mpsc::channel();
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        let thread = std::thread::Builder::new()
            .name("homebot-logs".into())
            .spawn(move || {
                if let Some(g) = gate {
                    let _ = g.recv();
                }
                run(rx, &c)
            })
            .expect("a thread can be started at provider start-up");
        Self {
            tx: Some(tx),
            counters,
            thread: Mutex::new(Some(thread)),
        }
    }

    /// Queue one line (a newline is added) for `path`. Never blocks: on a full queue the
    /// line is dropped and counted.
    pub fn append(&self, path: PathBuf, line: String) {
        let Some(tx) = &self.tx else { return };
        let c = &self.counters;
        if c.queued.fetch_add(1, Ordering::AcqRel) >= QUEUE_CAPACITY as u64 {
            c.queued.fetch_sub(1, Ordering::AcqRel);
            let n = c.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n == 1 || n.is_multiple_of(1000) {
                warn!(
                    dropped = n,
                    "log writer queue full: usage/audit lines dropped"
                );
            }
            return;
        }
        if tx.send(Job::Line(path, line)).is_err() {
            c.queued.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Wait (at most 10 s) until every line queued before this call is on disk.
    pub async fn flush(&self) {
        let Some(tx) = &self.tx else { return };
        let (ack, done) = oneshot::channel();
        if tx.send(Job::Flush(ack)).is_err() {
            warn!("log writer did not take a flush request");
            return;
        }
        if tokio::time::timeout(FLUSH_WAIT, done).await.is_err() {
            warn!("log writer flush timed out");
        }
    }

    pub fn stats(&self) -> WriterStats {
        let c = &self.counters;
        WriterStats {
            lines: c.lines.load(Ordering::Relaxed),
            batches: c.batches.load(Ordering::Relaxed),
            syncs: c.syncs.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
        }
    }
}

impl Drop for LogWriter {
    /// Close the queue; the thread writes what is left, syncs and ends.
    fn drop(&mut self) {
        self.tx.take();
        let handle = self.thread.get_mut().map(Option::take).unwrap_or_default();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

fn run(rx: Receiver<Job>, c: &Counters) {
    // files written since their last sync, and when that sync is due
    let mut dirty: BTreeMap<PathBuf, File> = BTreeMap::new();
    let mut due: Option<Instant> = None;
    loop {
        let first = match due {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(at) => rx.recv_timeout(at.saturating_duration_since(Instant::now())),
        };
        let first = match first {
            Ok(job) => Some(job),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let mut acks = Vec::new();
        if let Some(first) = first {
            if matches!(first, Job::Line(..)) {
                // let the calls finishing together queue up: one wake, one write each
                std::thread::sleep(GATHER);
            }
            let mut jobs = vec![first];
            while jobs.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(j) => jobs.push(j),
                    Err(_) => break,
                }
            }
            write_batch(jobs, &mut dirty, &mut acks, c);
        }
        let now = Instant::now();
        if !acks.is_empty() || due.is_some_and(|at| now >= at) {
            sync(&mut dirty, c);
            due = None;
        } else if !dirty.is_empty() && due.is_none() {
            due = Some(now + SYNC_WITHIN);
        }
        for a in acks {
            let _ = a.send(());
        }
    }
    sync(&mut dirty, c);
}

/// Append each file's lines of `jobs` with one write; the files join `dirty` (to be
/// synced), the flush requests `acks` (answered after that sync).
fn write_batch(
    jobs: Vec<Job>,
    dirty: &mut BTreeMap<PathBuf, File>,
    acks: &mut Vec<oneshot::Sender<()>>,
    c: &Counters,
) {
    let mut files: BTreeMap<PathBuf, Vec<u8>> = BTreeMap::new();
    let mut lines = 0;
    for j in jobs {
        match j {
            Job::Line(path, line) => {
                c.queued.fetch_sub(1, Ordering::AcqRel);
                let buf = files.entry(path).or_default();
                buf.extend_from_slice(line.as_bytes());
                buf.push(b'\n');
                lines += 1;
            }
            Job::Flush(ack) => acks.push(ack),
        }
    }
    if files.is_empty() {
        return;
    }
    for (path, buf) in files {
        match append(&path, &buf) {
            Ok(f) => {
                dirty.insert(path, f);
            }
            Err(e) => {
                warn!(path = %path.display(), error = %e, "cannot append to a provider log")
            }
        }
    }
    c.lines.fetch_add(lines, Ordering::Relaxed);
    c.batches.fetch_add(1, Ordering::Relaxed);
}

fn append(path: &std::path::Path, buf: &[u8]) -> std::io::Result<File> {
    crate::failpoint::enospc("append.enospc")?;
    if let Some(dir) = path.parent() {
        crate::fsutil::create_private_dirs(dir)?;
    }
    let mut f = crate::fsutil::open_append_private(path)?;
    f.write_all(buf)?;
    Ok(f)
}

/// One `fdatasync` per file written since the last one.
fn sync(dirty: &mut BTreeMap<PathBuf, File>, c: &Counters) {
    for (path, f) in std::mem::take(dirty) {
        match f.sync_data() {
            Ok(()) => {
                c.syncs.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => warn!(path = %path.display(), error = %e, "cannot sync a provider log"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn queued_lines_share_one_sync_per_file_and_drop_writes_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a/usage.jsonl");
        let b = dir.path().join("b.jsonl");
        let (w, gate) = LogWriter::start_gated();
        for i in 0..300 {
            w.append(a.clone(), format!("{{\"n\":{i}}}"));
            w.append(b.clone(), format!("{{\"m\":{i}}}"));
        }
        drop(gate);
        w.flush().await;
        let s = w.stats();
        assert_eq!(s.lines, 600);
        // 600 lines queued: two batches of at most 512; the flush syncs each file once
        // for both
        assert_eq!(s.batches, 2, "{s:?}");
        assert_eq!(s.syncs, 2, "{s:?}");
        assert_eq!(s.dropped, 0);
        assert_eq!(std::fs::read_to_string(&a).unwrap().lines().count(), 300);
        let first = std::fs::read_to_string(&b).unwrap();
        assert_eq!(first.lines().next().unwrap(), "{\"m\":0}", "order kept");
        // lines queued just before the drop still land
        w.append(b.clone(), "{\"last\":true}".into());
        drop(w);
        let text = std::fs::read_to_string(&b).unwrap();
        assert_eq!(text.lines().count(), 301);
        assert_eq!(text.lines().last().unwrap(), "{\"last\":true}");
    }

    #[tokio::test]
    async fn written_lines_are_synced_within_the_interval_without_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("usage.jsonl");
        let w = LogWriter::start();
        w.append(f.clone(), "{\"n\":1}".into());
        // written at once (a crash of the process would not lose it) ...
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&f).unwrap_or_default().is_empty() {
            assert!(Instant::now() < deadline, "the line was never written");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // ... and synced by itself, without a flush, after at most SYNC_WITHIN
        while w.stats().syncs == 0 {
            assert!(Instant::now() < deadline, "the line was never synced");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let s = w.stats();
        assert_eq!((s.lines, s.batches, s.syncs), (1, 1, 1), "{s:?}");
        // nothing new: no sync for nothing
        w.flush().await;
        assert_eq!(w.stats().syncs, 1);
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_counts_instead_of_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.jsonl");
        let (w, gate) = LogWriter::start_gated();
        for i in 0..QUEUE_CAPACITY + 10 {
            w.append(f.clone(), i.to_string());
        }
        assert_eq!(w.stats().dropped, 10);
        drop(gate);
        w.flush().await;
        assert_eq!(w.stats().lines, QUEUE_CAPACITY as u64);
    }
}
