//! A blocking owner's batch: after the first command wakes its thread, the commands that
//! arrive within a short window join it (turns finishing together share one write), but
//! one that someone waits for — a flush, a query, a stop — ends the window at once, and so
//! does a full batch or a closed queue. A sleep in its place made every waiting caller pay
//! the whole window (a one-shot `homebot chat` paid it twice at its exit).

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// `first` and what queues behind it within `window` (at most `max` in all), ending early
/// when an `urgent` command arrives (it is the batch's last) or the queue closes.
pub fn gather<T>(
    rx: &Receiver<T>,
    first: T,
    window: Duration,
    max: usize,
    urgent: impl Fn(&T) -> bool,
) -> Vec<T> {
    let stop = urgent(&first);
    let mut batch = vec![first];
    if stop {
        return batch;
    }
    let deadline = Instant::now() + window;
    while batch.len() < max {
        let left = deadline.saturating_duration_since(Instant::now());
        let next = if left.is_zero() {
            rx.try_recv().map_err(|_| RecvTimeoutError::Timeout)
        } else {
            rx.recv_timeout(left)
        };
        match next {
            Ok(c) => {
                let stop = urgent(&c);
                batch.push(c);
                if stop {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    batch
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    const LONG: Duration = Duration::from_secs(60);

    #[test]
    fn an_urgent_command_ends_the_window_at_once() {
        let (tx, rx) = channel();
        tx.send(2).unwrap();
        tx.send(0).unwrap(); // urgent
        tx.send(3).unwrap();
        // a 60 s window: the test would hang if it were slept through
        let b = gather(&rx, 1, LONG, 10, |c| *c == 0);
        assert_eq!(b, vec![1, 2, 0]);
        assert_eq!(rx.try_recv(), Ok(3), "what came after stays queued");
        assert_eq!(gather(&rx, 0, LONG, 10, |c| *c == 0), vec![0]);
    }

    #[test]
    fn a_closed_queue_or_a_full_batch_ends_it() {
        let (tx, rx) = channel();
        for i in 2..=5 {
            tx.send(i).unwrap();
        }
        assert_eq!(gather(&rx, 1, LONG, 3, |_| false), vec![1, 2, 3]);
        drop(tx);
        assert_eq!(gather(&rx, 9, LONG, 10, |_| false), vec![9, 4, 5]);
    }

    #[test]
    fn without_more_commands_the_window_runs_out() {
        let (_tx, rx) = channel::<u8>();
        let b = gather(&rx, 1, Duration::from_millis(1), 10, |_| false);
        assert_eq!(b, vec![1]);
        let b = gather(&rx, 1, Duration::ZERO, 10, |_| false);
        assert_eq!(b, vec![1]);
    }
}
