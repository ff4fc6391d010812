//! Getting text to a group or a person, the state side: one ordered delivery queue per
//! target, so replies go out in arrival order, each completely (all its parts) before
//! the next. [`Deliveries`] (owned by the QQ actor) holds the queues; each queue's worker
//! (`outbox`) sends what it takes, one at a time.
//!
//! Bounded: a target's queue holds at most [`queue_cap`] deliveries (when full, a reply
//! is dropped with a warning, an announcement refused as busy), and a chat gets one
//! "please wait" refusal per burst ([`RefusalLimiter`]) — a flood of messages into a
//! full chat queue must not turn into minutes of refusals. An idle queue retires
//! ([`Deliveries::retire`]) when its worker says so, unless a delivery slipped in.

use super::rpc::ActionError;
use super::target::Target;
use crate::actor::TaskGuard;
use crate::kernel::PendingReply;
use std::collections::{HashMap, HashSet};
use tokio::sync::{mpsc, oneshot};

/// Room for announcements beside the replies.
const OUTBOUND_ROOM: usize = 4;

/// How many deliveries may wait in one target's queue: the chat's turns the kernel admits
/// (`max_queued_per_chat` waiting plus one running), twice over for answered turns whose
/// replies still wait for the throttle, plus the refusal and some announcements.
pub fn queue_cap(max_queued_per_chat: usize) -> usize {
    (max_queued_per_chat + 1) * 2 + 1 + OUTBOUND_ROOM
}

/// One reply or announcement for a target.
pub struct Delivery {
    /// The account that sends it.
    pub self_id: String,
    pub target: Target,
    pub reply: PendingReply,
    /// Told how it went (the outbound door waits for it).
    pub done: Option<oneshot::Sender<Result<(), ActionError>>>,
    /// Keeps a graceful shutdown waiting until this has gone out.
    pub _guard: TaskGuard,
}

/// One "please wait" refusal per burst. A burst starts with a chat's first refused
/// message, which gets the refusal; the chat's later refused messages get none, until its
/// delivery queue drains (the reply to every message it accepted has been taken up for
/// sending, the refusal included); the next refused message starts a new burst. A
/// sustained flood that never lets the queue drain gets one refusal in all.
#[derive(Default)]
pub struct RefusalLimiter {
    /// Chats refused in their current burst. A chat leaves when its queue drains, and it
    /// has one while it is here (the refusal itself is a delivery): bounded by the queues.
    refused: HashSet<String>,
}

impl RefusalLimiter {
    /// Whether `chat` may get a refusal now (if so, its burst counts as refused).
    pub fn allow(&mut self, chat: &str) -> bool {
        if self.refused.contains(chat) {
            return false;
        }
        self.refused.insert(chat.to_string());
        true
    }

    /// `chat`'s delivery queue drained: its burst, if any, is over.
    pub fn drained(&mut self, chat: &str) {
        self.refused.remove(chat);
    }
}

/// Why a delivery did not join its queue.
#[derive(Debug)]
pub struct QueueFull;

/// A queue that was just opened: its worker is to be started.
pub struct NewQueue {
    pub key: String,
    pub id: u64,
    pub rx: mpsc::Receiver<Delivery>,
}

struct Queue {
    id: u64,
    tx: mpsc::Sender<Delivery>,
}

/// The delivery queues by target key, and the refusals of the current bursts.
#[derive(Default)]
pub struct Deliveries {
    queues: HashMap<String, Queue>,
    next: u64,
    refusals: RefusalLimiter,
}

impl Deliveries {
    /// Put a delivery on its target's queue; a queue opened for it is returned, for its
    /// worker to be started.
    pub fn enqueue(
        &mut self,
        key: String,
        job: Delivery,
        cap: usize,
    ) -> Result<Option<NewQueue>, QueueFull> {
        let job = match self.queues.get(&key) {
            Some(q) => match q.tx.try_send(job) {
                Ok(()) => return Ok(None),
                Err(mpsc::error::TrySendError::Full(_)) => return Err(QueueFull),
                // its worker is gone: open a new queue
                Err(mpsc::error::TrySendError::Closed(job)) => job,
            },
            None => job,
        };
        let (tx, rx) = mpsc::channel::<Delivery>(cap);
        tx.try_send(job)
            .expect("a new queue has room: its capacity is at least one");
        self.next += 1;
        self.queues.insert(key.clone(), Queue { id: self.next, tx });
        Ok(Some(NewQueue {
            key,
            id: self.next,
            rx,
        }))
    }

    /// Whether the reply to a message refused in `key` may go out (one per burst).
    pub fn refusal_allowed(&mut self, key: &str) -> bool {
        self.refusals.allow(key)
    }

    /// `key`'s queue drained: a burst of refusals there is over.
    pub fn drained(&mut self, key: &str) {
        self.refusals.drained(key);
    }

    /// Queue `id` of `key` has been idle: close it unless a delivery slipped in (its
    /// worker then ends once it has taken what is left, which is nothing).
    pub fn retire(&mut self, key: &str, id: u64) {
        let idle = self
            .queues
            .get(key)
            .is_some_and(|q| q.id == id && q.tx.capacity() == q.tx.max_capacity());
        if idle {
            self.queues.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_refusal_per_chat_per_burst() {
        let mut l = RefusalLimiter::default();
        assert!(l.allow("group:1"));
        assert!(!l.allow("group:1"));
        assert!(l.allow("group:2"), "per chat");
        l.drained("group:2");
        assert!(
            !l.allow("group:1"),
            "another chat's drain ends nothing here"
        );
        l.drained("group:1");
        assert!(l.allow("group:1"), "a new burst after the drain");
        assert!(!l.allow("group:1"));
        // drained chats are forgotten
        l.drained("group:1");
        l.drained("group:2");
        assert!(l.refused.is_empty());
    }
}
