//! Turn scheduling: one FIFO per chat, chats in parallel.
//!
//! A turn is admitted to its chat's queue *at arrival* (synchronously, inside
//! `Kernel::submit`), so a slow step later cannot reorder two messages of one chat. Each
//! chat with work has exactly one worker task that runs its turns one after another;
//! different chats (and channels) have different workers and proceed in parallel. The
//! queue is bounded: a chat that floods gets a clear "too many messages" reply instead of
//! unbounded memory.

use std::collections::{HashMap, VecDeque};

/// The per-chat queues. Pure data: the kernel holds it under a mutex and spawns workers.
#[derive(Debug)]
pub struct ChatQueues<J> {
    /// A key is present exactly while a worker runs for that chat.
    map: HashMap<String, Chat<J>>,
    cap: usize,
}

#[derive(Debug)]
struct Chat<J> {
    queue: VecDeque<J>,
    /// The worker has taken its first job; before that, the head of the queue is the
    /// job about to be answered, not one waiting.
    started: bool,
}

impl<J> Chat<J> {
    fn waiting(&self) -> usize {
        self.queue.len() - usize::from(!self.started && !self.queue.is_empty())
    }
}

/// What `admit` decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    /// Queued behind a running worker.
    Queued,
    /// The chat was idle: the caller must start a worker for it.
    StartWorker,
}

impl<J> ChatQueues<J> {
    pub fn new(cap: usize) -> Self {
        Self {
            map: HashMap::new(),
            cap: cap.max(1),
        }
    }

    /// Queue `job` for `key`; `Err(job)` when that chat already has `cap` waiting.
    pub fn admit(&mut self, key: &str, job: J) -> Result<Admission, J> {
        match self.map.get_mut(key) {
            Some(c) if c.waiting() >= self.cap => Err(job),
            Some(c) => {
                c.queue.push_back(job);
                Ok(Admission::Queued)
            }
            None => {
                self.map.insert(
                    key.to_string(),
                    Chat {
                        queue: VecDeque::from([job]),
                        started: false,
                    },
                );
                Ok(Admission::StartWorker)
            }
        }
    }

    /// The worker of `key` asks for its next job; `None` releases the chat.
    pub fn next(&mut self, key: &str) -> Option<J> {
        let c = self.map.get_mut(key)?;
        match c.queue.pop_front() {
            Some(j) => {
                c.started = true;
                Some(j)
            }
            None => {
                self.map.remove(key);
                None
            }
        }
    }

    pub fn waiting(&self, key: &str) -> usize {
        self.map.get(key).map_or(0, Chat::waiting)
    }

    pub fn busy_chats(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_per_chat_and_bounded() {
        let mut q = ChatQueues::new(2);
        assert_eq!(q.admit("a", 1), Ok(Admission::StartWorker));
        assert_eq!(q.waiting("a"), 0, "the first job is the one being answered");
        assert_eq!(q.admit("a", 2), Ok(Admission::Queued));
        assert_eq!(q.admit("b", 10), Ok(Admission::StartWorker));
        assert_eq!(q.admit("a", 3), Ok(Admission::Queued));
        assert_eq!(q.admit("a", 4), Err(4), "two already waiting");
        assert_eq!(q.next("a"), Some(1), "the worker takes the first job");
        assert_eq!(q.waiting("a"), 2);
        assert_eq!(q.admit("a", 4), Err(4), "still two waiting");
        assert_eq!(q.next("a"), Some(2));
        assert_eq!(
            q.admit("a", 5),
            Ok(Admission::Queued),
            "worker still owns the chat"
        );
        assert_eq!(q.next("a"), Some(3));
        assert_eq!(q.next("a"), Some(5));
        assert_eq!(q.next("a"), None);
        assert_eq!(
            q.admit("a", 6),
            Ok(Admission::StartWorker),
            "released: a new worker"
        );
        assert_eq!(q.busy_chats(), 2);
    }
}
