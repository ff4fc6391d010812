//! `Partials`: the sentences of a reply said before it is done (a voice turn's), capped in
//! count and length, and the asides between them.

use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// What a turn says before its reply is complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Partial {
    /// One or more whole sentences of the answer as the model writes it, to be said now.
    Text(String),
    /// The texts since the previous `Aside` (or the turn's start) were said, but are not
    /// part of the reply's text: the model went on to call a tool after them, or the
    /// attempt that wrote them failed and its retry wrote something else.
    Aside,
}

/// A turn's partial-text sink: the agent hands it whole sentences of the answer while
/// the model streams it; the channel that made it reads them from its receiver.
///
/// Bounded, since the model controls what goes in: at most `max_chars` characters in
/// all (the reply cap) and [`Partials::max_count`] texts; past either, nothing more is
/// sent and the rest of the answer comes with the reply only. Sending never waits.
#[derive(Clone)]
pub struct Partials {
    inner: Arc<PartialsInner>,
}

struct PartialsInner {
    tx: mpsc::UnboundedSender<Partial>,
    max_chars: usize,
    max_count: usize,
    sent: Mutex<Sent>,
}

#[derive(Default)]
struct Sent {
    /// Every text sent, in order (the record of a cancelled turn says what was heard).
    text: String,
    chars: usize,
    count: usize,
    /// Texts sent since the last `Aside`.
    since_aside: usize,
    full: bool,
}

impl std::fmt::Debug for Partials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sent = self.lock();
        f.debug_struct("Partials")
            .field("count", &sent.count)
            .field("chars", &sent.chars)
            .field("max_chars", &self.inner.max_chars)
            .finish()
    }
}

impl Partials {
    /// A sink of at most `max_chars` characters (in all), and its receiver.
    pub fn new(max_chars: usize) -> (Self, mpsc::UnboundedReceiver<Partial>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let p = Self {
            inner: Arc::new(PartialsInner {
                tx,
                max_chars,
                max_count: Self::max_count(max_chars),
                sent: Mutex::default(),
            }),
        };
        (p, rx)
    }

    /// The most texts a sink of `max_chars` sends: one per 20 characters of the cap, at
    /// least 8 (200 for the default reply cap of 4000).
    pub fn max_count(max_chars: usize) -> usize {
        (max_chars / 20).max(8)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sent> {
        self.inner
            .sent
            .lock()
            .expect("no code panics while holding the partials lock")
    }

    /// Send `text` (whole sentences); false when it was not sent: nothing speakable in
    /// it (only spaces or punctuation), the caps are reached, or nobody listens.
    pub fn say(&self, text: &str) -> bool {
        if !text.chars().any(char::is_alphanumeric) {
            return false;
        }
        let mut sent = self.lock();
        let chars = text.chars().count();
        if sent.full
            || sent.count >= self.inner.max_count
            || sent.chars + chars > self.inner.max_chars
        {
            sent.full = true;
            return false;
        }
        if self.inner.tx.send(Partial::Text(text.to_string())).is_err() {
            return false;
        }
        sent.text.push_str(text);
        sent.chars += chars;
        sent.count += 1;
        sent.since_aside += 1;
        true
    }

    /// The texts sent since the last aside were not the answer (see [`Partial::Aside`]);
    /// nothing is sent if none were.
    pub fn aside(&self) {
        let mut sent = self.lock();
        if sent.since_aside > 0 {
            sent.since_aside = 0;
            let _ = self.inner.tx.send(Partial::Aside);
        }
    }

    /// Everything sent so far, in order.
    pub fn said(&self) -> String {
        self.lock().text.clone()
    }

    /// How many texts were sent.
    pub fn count(&self) -> usize {
        self.lock().count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partials_stop_at_the_caps_and_remember_what_was_said() {
        let (p, mut rx) = Partials::new(100);
        assert!(p.say("第一句。"));
        assert!(!p.say("  "), "nothing to say");
        assert!(!p.say("。”"), "punctuation only");
        p.aside();
        p.aside(); // one aside for the texts before it
        assert!(p.say("第二句。"));
        assert!(!p.say(&"长".repeat(100)), "past the character cap");
        assert!(!p.say("短。"), "once full, nothing more");
        assert_eq!(p.said(), "第一句。第二句。");
        assert_eq!(p.count(), 2);
        let got: Vec<Partial> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(
            got,
            [
                Partial::Text("第一句。".into()),
                Partial::Aside,
                Partial::Text("第二句。".into())
            ]
        );
        // the count cap: 8 texts for a small reply cap
        let (p, _rx) = Partials::new(100);
        let sent = (0..20).filter(|i| p.say(&format!("{i}。"))).count();
        assert_eq!(sent, Partials::max_count(100));
        assert_eq!(sent, 8);
    }
}
