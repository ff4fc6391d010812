//! The log writer's tests: batching and syncs, a full queue, and what a reader's view
//! holds while lines are queued and written.
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
async fn a_view_holds_the_lines_not_yet_written_and_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("sub/b.jsonl");
    let (w, gate) = LogWriter::start_gated();
    let reader = w.reader();
    w.append(a.clone(), "1".into());
    w.append(b.clone(), "x".into());
    w.append(a.clone(), "2".into());
    {
        let view = reader.view();
        let lines = |p: &Path| {
            view.unwritten(p)
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(lines(&a), ["1", "2"], "queued, in order");
        assert_eq!(lines(&b), ["x"]);
        let mut paths: Vec<_> = view.paths().collect();
        paths.sort();
        assert_eq!(paths, [a.as_path(), b.as_path()]);
        assert!(!a.exists(), "nothing on disk yet");
    }
    drop(gate);
    w.flush().await;
    let view = reader.view();
    assert!(view.unwritten(&a).is_empty() && view.paths().count() == 0);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "1\n2\n");
}

/// A reader's view while lines are queued and written: the file and the view together
/// hold every line queued before the view, each once, in order.
#[test]
fn file_and_view_together_are_every_line_once_while_the_writer_runs() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("usage.jsonl");
    let w = Arc::new(LogWriter::start());
    let reader = w.reader();
    const N: usize = 3000;
    let queued = Arc::new(AtomicU64::new(0));
    let writer = {
        let (w, f, queued) = (w.clone(), f.clone(), queued.clone());
        std::thread::spawn(move || {
            for i in 0..N {
                w.append(f.clone(), i.to_string());
                queued.store(i as u64 + 1, Ordering::SeqCst);
                if i % 64 == 0 {
                    std::thread::yield_now();
                }
            }
        })
    };
    let mut last = 0;
    loop {
        let before = queued.load(Ordering::SeqCst) as usize;
        let seen: Vec<usize> = {
            let view = reader.view();
            let on_disk = std::fs::read_to_string(&f).unwrap_or_default();
            on_disk
                .lines()
                .map(str::to_string)
                .chain(view.unwritten(&f).iter().map(|l| l.to_string()))
                .map(|l| l.parse().unwrap())
                .collect()
        };
        assert!(
            seen.len() >= before,
            "{} seen, {before} queued before",
            seen.len()
        );
        assert!(seen.len() >= last, "figures never go back");
        assert!(
            seen.iter().enumerate().all(|(i, &n)| i == n),
            "each line once, in order"
        );
        last = seen.len();
        if last == N {
            break;
        }
    }
    writer.join().unwrap();
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
