//! An endpoint's concurrency slots (`provider.max_concurrent`), turns first.
//!
//! A turn is someone waiting for an answer; a compaction or a session's summary is
//! background work nobody waits on. Both need a slot, but when the slots run short a
//! turn must not wait for background calls. So:
//! - turns queue in the semaphore, first come first served, and a released slot goes to
//!   the first of them;
//! - a background call never queues there, and takes a slot only while more than a
//!   quarter of the slots ([`Slots::reserve`]) are free, so the turns that arrive while
//!   it runs find one; otherwise it waits for the next release to look again.
//!
//! Measured at the limit (50 chats on 64 slots, whose compactions fell due together):
//! with one first-come queue for both, 2 % of the turns waited 20–35 ms for a slot
//! compactions held (docs/operations.md). Under a sustained queue of turns background
//! calls wait for it to clear; meanwhile the planner trims the history to the window.

use super::model::purpose;
use tokio::sync::{Notify, Semaphore, SemaphorePermit};

/// Who asks for a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// Someone waits for the answer.
    Turn,
    /// Compaction, summaries: yields to any waiting turn.
    Background,
}

impl Priority {
    /// The priority of a call made for `purpose` (see `CallMeta::purpose`): background
    /// only for the calls nobody waits on, named in [`purpose`]; every call a turn makes —
    /// a plan, a spec, a reflection's review, a step, a retry, and any purpose added later
    /// — is someone's turn.
    pub fn of(purpose: &str) -> Self {
        match purpose {
            purpose::COMPACTION | purpose::SUMMARY => Self::Background,
            _ => Self::Turn,
        }
    }
}

pub struct Slots {
    sem: Semaphore,
    /// Slots a background call leaves free for turns.
    reserve: usize,
    /// A slot was released: background callers look again.
    released: Notify,
}

/// A slot held; released when dropped.
pub struct Slot<'a> {
    permit: Option<SemaphorePermit<'a>>,
    slots: &'a Slots,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        // released first (to the first queued turn, if any), then background callers told
        drop(self.permit.take());
        self.slots.released.notify_waiters();
    }
}

impl Slots {
    pub fn new(max_concurrent: usize) -> Self {
        Self {
            sem: Semaphore::new(max_concurrent.max(1)),
            reserve: Self::reserve(max_concurrent),
            released: Notify::new(),
        }
    }

    /// The slots background calls leave free: a quarter (none below four slots, so a
    /// single slot still serves them).
    pub fn reserve(max_concurrent: usize) -> usize {
        max_concurrent / 4
    }

    /// Slots free now.
    pub fn available(&self) -> usize {
        self.sem.available_permits()
    }

    /// Wait for a slot as `priority` allows.
    pub async fn acquire(&self, priority: Priority) -> Slot<'_> {
        let permit = match priority {
            Priority::Turn => self.turn().await,
            Priority::Background => self.background().await,
        };
        Slot {
            permit: Some(permit),
            slots: self,
        }
    }

    async fn turn(&self) -> SemaphorePermit<'_> {
        self.sem
            .acquire()
            .await
            .expect("the provider's slots are never closed")
    }

    async fn background(&self) -> SemaphorePermit<'_> {
        loop {
            // registered before looking, so a release between the look and the wait is
            // not missed
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            // (a turn queued has no free slot to see: the semaphore hands it each release)
            if self.sem.available_permits() > self.reserve {
                if let Ok(p) = self.sem.try_acquire() {
                    return p;
                }
            }
            released.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_waiting_turn_goes_before_a_background_call_that_waited_longer() {
        let slots = Arc::new(Slots::new(1));
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let held = slots.acquire(Priority::Turn).await;
        let spawn = |p: Priority, name: &'static str| {
            let (slots, order) = (slots.clone(), order.clone());
            tokio::spawn(async move {
                let _s = slots.acquire(p).await;
                order.lock().unwrap().push(name);
                tokio::time::sleep(Duration::from_millis(10)).await;
            })
        };
        let background = spawn(Priority::Background, "compaction");
        tokio::time::sleep(Duration::from_millis(5)).await;
        let turn = spawn(Priority::Turn, "turn");
        // both are waiting now (paused time moves on only when every task waits)
        tokio::time::sleep(Duration::from_millis(1)).await;
        drop(held);
        turn.await.unwrap();
        background.await.unwrap();
        assert_eq!(*order.lock().unwrap(), ["turn", "compaction"]);
        assert_eq!(slots.available(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn background_calls_use_free_slots_and_wait_for_a_released_one() {
        let slots = Arc::new(Slots::new(2));
        let a = slots.acquire(Priority::Background).await;
        let b = slots.acquire(Priority::Background).await;
        assert_eq!(slots.available(), 0);
        let s = slots.clone();
        let third = tokio::spawn(async move {
            let _c = s.acquire(Priority::Background).await;
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!third.is_finished(), "no slot was free");
        drop(a);
        third.await.unwrap();
        drop(b);
        assert_eq!(slots.available(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn background_calls_leave_a_quarter_of_the_slots_to_turns() {
        let slots = Arc::new(Slots::new(8));
        let mut held = Vec::new();
        for _ in 0..6 {
            held.push(slots.acquire(Priority::Background).await);
        }
        assert_eq!(slots.available(), 2);
        let s = slots.clone();
        let seventh = tokio::spawn(async move {
            let _b = s.acquire(Priority::Background).await;
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!seventh.is_finished(), "the last two slots are the turns'");
        // a turn still gets one at once
        let t = tokio::time::timeout(Duration::ZERO, slots.acquire(Priority::Turn)).await;
        assert!(t.is_ok(), "a turn took a reserved slot without waiting");
        drop(t);
        held.pop();
        seventh.await.unwrap();
    }

    /// Every purpose a turn's calls carry (the strategies' steps and retries among them)
    /// waits as a turn; only compaction and summaries yield.
    #[test]
    fn only_compaction_and_summaries_are_background() {
        let of_a_turn = [
            "",
            "turn",
            "plan",
            "plan-retry",
            "spec",
            "spec-retry",
            "plan-step",
            "plan-summary",
            "reflect-draft",
            "reflect-review",
            "reflect-revision",
            "fast_path",
            "a purpose added later",
        ];
        for p in of_a_turn {
            assert_eq!(Priority::of(p), Priority::Turn, "{p:?}");
        }
        assert_eq!(Priority::of(purpose::COMPACTION), Priority::Background);
        assert_eq!(Priority::of(purpose::SUMMARY), Priority::Background);
        assert_eq!(purpose::COMPACTION, "compaction");
        assert_eq!(purpose::SUMMARY, "summary");
    }
}
