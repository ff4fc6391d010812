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
//!
//! Readers in the process (the dashboard's figures) see a line as soon as it is queued:
//! a [`LogReader`]'s [`LogView`] holds the lines not yet in their files, and while it
//! lives the thread appends nothing, so each line queued before it is either in its
//! file or in the view, never both and never neither. A figure shown right after a turn
//! includes that turn's calls, and still no call waits for the disk (queuing takes a
//! short lock the thread holds only to drop the lines it appended).

use crate::actor::gather;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};
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
    Line(PathBuf, Arc<str>),
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

/// Lines queued and not yet appended, by file, in queue order.
type Unwritten = HashMap<PathBuf, VecDeque<Arc<str>>>;

/// What the writer's handles, its readers and its thread share.
#[derive(Default)]
struct Shared {
    counters: Counters,
    /// The queue's lines by file, until the thread has appended them.
    unwritten: Mutex<Unwritten>,
    /// Held for writing by the thread while it appends a batch and drops it from
    /// `unwritten`; for reading by a [`LogView`] while its reader reads the files.
    files: RwLock<()>,
}

impl Shared {
    fn unwritten(&self) -> MutexGuard<'_, Unwritten> {
        // every change to it is complete under the lock: a panic elsewhere leaves it whole
        self.unwritten.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub struct LogWriter {
    /// Sent to only with `unwritten` locked, so both keep one order per file.
    tx: Option<Sender<Job>>,
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Reads what the writer has written and what it is about to (cloneable; for the
/// dashboard, which reads in a blocking task).
#[derive(Clone)]
pub struct LogReader(Arc<Shared>);

impl LogReader {
    /// A view to read the log files with: while it lives, the files hold every line
    /// queued before it but the ones it lists as unwritten.
    pub fn view(&self) -> LogView<'_> {
        let files = self.0.files.read().unwrap_or_else(|p| p.into_inner());
        let unwritten = self
            .0
            .unwritten()
            .iter()
            .map(|(path, lines)| (path.clone(), lines.iter().cloned().collect()))
            .collect();
        LogView {
            _files: files,
            unwritten,
        }
    }
}

/// The log files, held still, and the lines queued for them that they do not hold yet.
pub struct LogView<'a> {
    _files: RwLockReadGuard<'a, ()>,
    unwritten: HashMap<PathBuf, Vec<Arc<str>>>,
}

impl LogView<'_> {
    /// The lines queued for `path` and not in it yet, oldest first.
    pub fn unwritten(&self, path: &Path) -> &[Arc<str>] {
        self.unwritten.get(path).map_or(&[], Vec::as_slice)
    }

    /// The files that have lines on their way (some may not exist yet).
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.unwritten.keys().map(PathBuf::as_path)
    }
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
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("homebot-logs".into())
            .spawn(move || {
                if let Some(g) = gate {
                    let _ = g.recv();
                }
                run(rx, &s)
            })
            .expect("a thread can be started at provider start-up");
        Self {
            tx: Some(tx),
            shared,
            thread: Mutex::new(Some(thread)),
        }
    }

    /// A reader of these logs that sees the queued lines too.
    pub fn reader(&self) -> LogReader {
        LogReader(self.shared.clone())
    }

    /// Queue one line (a newline is added) for `path`. Never blocks on the disk: on a
    /// full queue the line is dropped and counted.
    pub fn append(&self, path: PathBuf, line: String) {
        let Some(tx) = &self.tx else { return };
        let c = &self.shared.counters;
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
        let line: Arc<str> = line.into();
        let mut unwritten = self.shared.unwritten();
        if tx.send(Job::Line(path.clone(), line.clone())).is_err() {
            c.queued.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        unwritten.entry(path).or_default().push_back(line);
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
        let c = &self.shared.counters;
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

fn run(rx: Receiver<Job>, s: &Shared) {
    let c = &s.counters;
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
            // the calls finishing together share one wake and one write; a flush is
            // waited for, so it ends the gathering
            let jobs = gather(&rx, first, GATHER, MAX_BATCH, |j| {
                matches!(j, Job::Flush(_))
            });
            write_batch(jobs, &mut dirty, &mut acks, s);
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

/// Append each file's lines of `jobs` with one write and drop them from the unwritten
/// lines (readers wait meanwhile); the files join `dirty` (to be synced), the flush
/// requests `acks` (answered after that sync).
fn write_batch(
    jobs: Vec<Job>,
    dirty: &mut BTreeMap<PathBuf, File>,
    acks: &mut Vec<oneshot::Sender<()>>,
    s: &Shared,
) {
    let c = &s.counters;
    // each file's bytes, and how many lines they are
    let mut files: BTreeMap<PathBuf, (Vec<u8>, usize)> = BTreeMap::new();
    let mut lines = 0;
    for j in jobs {
        match j {
            Job::Line(path, line) => {
                c.queued.fetch_sub(1, Ordering::AcqRel);
                let (buf, n) = files.entry(path).or_default();
                buf.extend_from_slice(line.as_bytes());
                buf.push(b'\n');
                *n += 1;
                lines += 1;
            }
            Job::Flush(ack) => acks.push(ack),
        }
    }
    if files.is_empty() {
        return;
    }
    let _readers_wait = s.files.write().unwrap_or_else(|p| p.into_inner());
    for (path, (buf, _)) in &files {
        match append(path, buf) {
            Ok(f) => {
                dirty.insert(path.clone(), f);
            }
            Err(e) => {
                warn!(path = %path.display(), error = %e, "cannot append to a provider log")
            }
        }
    }
    // appended (or lost with a warning): no longer on their way
    let mut unwritten = s.unwritten();
    for (path, (_, n)) in files {
        if let Some(q) = unwritten.get_mut(&path) {
            q.drain(..n.min(q.len()));
            if q.is_empty() {
                unwritten.remove(&path);
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
#[path = "logwriter_tests.rs"]
mod tests;
