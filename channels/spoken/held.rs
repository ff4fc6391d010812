//! Proactive messages held for a voice front end that cannot be spoken to now: a
//! satellite that is not connected, or Wyoming (Home Assistant only answers when asked).
//! They are said before the reply of that front end's next turn. Bounded: a few per front
//! end, a few dozen front ends, and each for at most [`MAX_AGE`] — a reminder heard hours
//! later is worse than none. In memory only: a restart forgets them.
//!
//! A message counts as said only once it was handed to the front end: a turn takes the
//! waiting messages as [`Taken`] and calls [`Taken::said`] after its answer went out. A
//! turn dropped in between (its connection gone, the gateway stopping) drops them
//! unsaid, and whoever waits for them hears so (and holds them again).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Why a message is not held for a front end.
#[derive(Debug, thiserror::Error)]
pub enum NotHeld {
    #[error("too many voice front ends have messages waiting")]
    TooManyFronts,
    #[error("too many messages are waiting for this front end's next turn")]
    FrontFull,
    /// The spoken kit's actor failed while holding it (its state was rebuilt).
    #[error(transparent)]
    Unavailable(#[from] crate::actor::Unavailable),
    #[error("the gateway is stopping")]
    Stopped,
}

const PER_FRONT: usize = 8;
const FRONTS: usize = 64;
pub const MAX_AGE: Duration = Duration::from_secs(2 * 3600);

#[derive(Default)]
pub struct Held {
    waiting: HashMap<String, VecDeque<Waiting>>,
    next: u64,
}

struct Waiting {
    id: u64,
    at: Instant,
    text: String,
    /// Told when the message was said; a sender nobody listens to any more (the reminder
    /// was cancelled, or its delivery gave up) means: do not say it.
    said: oneshot::Sender<()>,
}

impl Held {
    /// Hold `text` for `front`'s next turn; the id lets it be taken back (the fallback),
    /// the receiver hears when it was said.
    pub fn hold(
        &mut self,
        front: &str,
        text: String,
    ) -> Result<(u64, oneshot::Receiver<()>), NotHeld> {
        self.expire();
        if !self.waiting.contains_key(front) && self.waiting.len() >= FRONTS {
            return Err(NotHeld::TooManyFronts);
        }
        let q = self.waiting.entry(front.to_string()).or_default();
        if q.len() >= PER_FRONT {
            return Err(NotHeld::FrontFull);
        }
        self.next += 1;
        let (said, heard) = oneshot::channel();
        q.push_back(Waiting {
            id: self.next,
            at: Instant::now(),
            text,
            said,
        });
        tracing::info!(
            front,
            "voice front end not reachable now; the message waits for its next turn"
        );
        Ok((self.next, heard))
    }

    /// The messages waiting for `front`, oldest first, for a turn to say; they count as
    /// said when the turn calls [`Taken::said`].
    pub fn take(&mut self, front: &str) -> Taken {
        self.expire();
        let mut taken = Taken::default();
        for w in self.waiting.remove(front).unwrap_or_default() {
            // nobody waits for it any more: its reminder was cancelled or gave up
            if !w.said.is_closed() {
                taken.texts.push(w.text);
                taken.acks.push(w.said);
            }
        }
        taken
    }

    /// Take one message back if it is still waiting (nobody spoke to `front` meanwhile).
    pub fn take_back(&mut self, front: &str, id: u64) -> Option<String> {
        let q = self.waiting.get_mut(front)?;
        let i = q.iter().position(|w| w.id == id)?;
        let w = q.remove(i)?;
        if q.is_empty() {
            self.waiting.remove(front);
        }
        Some(w.text)
    }

    fn expire(&mut self) {
        self.waiting.retain(|_, q| {
            q.retain(|w| w.at.elapsed() < MAX_AGE && !w.said.is_closed());
            !q.is_empty()
        });
    }
}

/// Held messages a turn took to say first. Whoever waits for them is told they were said
/// only by [`Taken::said`]; dropped before that, they were not.
#[derive(Default)]
pub struct Taken {
    texts: Vec<String>,
    acks: Vec<oneshot::Sender<()>>,
}

impl Taken {
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Their words, oldest first, as one text to say.
    pub fn joined(&self) -> String {
        self.texts.join(" ")
    }

    /// Add what was taken for another front end (said together with these).
    pub fn extend(&mut self, other: Taken) {
        self.texts.extend(other.texts);
        self.acks.extend(other.acks);
    }

    /// They were handed to the front end: tell whoever waits for them (once; the words
    /// stay for the reply's text).
    pub fn said(&mut self) {
        for ack in self.acks.drain(..) {
            let _ = ack.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_until_taken_and_bounded() {
        let mut h = Held::default();
        let (_, mut first) = h.hold("kitchen", "提醒：关火".into()).unwrap();
        let (_, _second) = h.hold("kitchen", "提醒：下面条".into()).unwrap();
        let (_, given_up) = h.hold("kitchen", "提醒：取消了".into()).unwrap();
        drop(given_up); // its reminder was cancelled: not said
        assert!(h.take("bedroom").is_empty());
        let mut taken = h.take("kitchen");
        assert_eq!(taken.joined(), "提醒：关火 提醒：下面条");
        assert!(
            first.try_recv().is_err(),
            "not said before it is handed out"
        );
        taken.said();
        assert!(first.try_recv().is_ok(), "told it was said");
        assert!(h.take("kitchen").is_empty(), "said once");
        let (id, _rx) = h.hold("kitchen", "提醒：收衣服".into()).unwrap();
        assert_eq!(h.take_back("kitchen", id).as_deref(), Some("提醒：收衣服"));
        assert_eq!(h.take_back("kitchen", id), None, "taken back once");
        let mut keep = Vec::new();
        for i in 0..PER_FRONT {
            keep.push(h.hold("hall", format!("{i}")).unwrap());
        }
        assert!(h.hold("hall", "one more".into()).is_err());
        for i in 0..FRONTS - 1 {
            keep.push(h.hold(&format!("sat-{i}"), "x".into()).unwrap());
        }
        assert!(h.hold("one-too-many", "x".into()).is_err());
    }

    #[test]
    fn taken_by_a_turn_that_ends_before_saying_them_they_were_not_said() {
        let mut h = Held::default();
        let (_, mut waiting) = h.hold("kitchen", "提醒：关火".into()).unwrap();
        let taken = h.take("kitchen");
        assert!(!taken.is_empty());
        drop(taken); // the turn's task was dropped while it waited
        assert!(
            matches!(
                waiting.try_recv(),
                Err(oneshot::error::TryRecvError::Closed)
            ),
            "the waiter hears it was not said"
        );
    }
}
