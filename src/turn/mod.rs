//! What channels send into the kernel and what comes back. A turn's typed facts — its
//! audience, modality, trust and memory peer — are in [`facts`]; how it ended, in
//! [`outcome`].

pub mod command;
pub mod facts;
pub mod outcome;

pub use command::Command;
pub use facts::{Audience, Facts, Modality, Trust};
pub use outcome::{Failure, Outcome, Refusal, TurnError};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// One user message from a channel, with who sent it and where to answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Turn {
    /// `cli`, `qq`, `voice`, …
    pub channel: String,
    /// The conversation inside the channel (a QQ group, a voice session, a terminal).
    pub chat_id: String,
    /// Who spoke: a member id when known, else the channel's own id, else `guest`.
    pub speaker_id: String,
    pub text: String,
    /// Whether this sender may enter / exit run modes here (a channel's permission rule).
    #[serde(default = "yes")]
    pub may_switch_modes: bool,
    /// Channel-specific reply guidance for the dynamic tail (e.g. voice: short, no markdown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_hint: Option<String>,
    /// Where a proactive message for this chat goes: the target of the channel's outbound
    /// door (a satellite id, `group:<id>`, …). `None`: the chat id itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// The room the speaker is in (a voice satellite's area), said in the dynamic tail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    /// Scene memory for this turn only (`auto` / `none`); `None`: the channel's policy
    /// (`[memory.channels]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scene_policy: Option<crate::config::ScenePolicy>,
    /// Explicit scene keys (`chan:qq/peer:group_1027`) given by a channel or a single
    /// injection; empty: derived from the channel and chat. At most four are used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenes: Vec<String>,
    /// Where the reply goes sentence by sentence while the model writes it (a native
    /// voice satellite starts speaking early); `None`: the reply comes whole. Never sent
    /// over the control socket.
    #[serde(skip)]
    pub partials: Option<Partials>,
    /// What the channel states about this turn. Never taken from the wire: a turn read
    /// from the control socket has the least facts ([`Facts::default`]) until the socket,
    /// the terminal's channel, stamps its own.
    #[serde(skip)]
    pub facts: Facts,
    /// Words the channel's peer adds for this turn only (a Home Assistant automation's
    /// `extra_system_prompt`): data from outside the household, sent in the turn's aside
    /// as a marked block, never in the system message. Bounded by the channel. Never
    /// taken from the control socket.
    #[serde(skip)]
    pub peer_note: Option<String>,
}

fn yes() -> bool {
    true
}

impl Turn {
    /// A turn of `channel`'s chat `chat_id`, with the facts its channel states (each
    /// channel has its own constructor that states them: `channels::qq::turn`, …).
    pub fn new(
        channel: impl Into<String>,
        chat_id: impl Into<String>,
        speaker_id: impl Into<String>,
        text: impl Into<String>,
        facts: Facts,
    ) -> Self {
        Self {
            channel: channel.into(),
            chat_id: chat_id.into(),
            speaker_id: speaker_id.into(),
            text: text.into(),
            may_switch_modes: true,
            reply_hint: None,
            reply_to: None,
            room: None,
            scene_policy: None,
            scenes: Vec::new(),
            partials: None,
            facts,
            peer_note: None,
        }
    }

    /// The turn's facts, as its channel stated them.
    pub fn facts(&self) -> &Facts {
        &self.facts
    }

    /// Where proactive messages for this turn's chat go (see `reply_to`).
    pub fn reply_target(&self) -> &str {
        self.reply_to.as_deref().unwrap_or(&self.chat_id)
    }

    /// Key of the per-chat FIFO and of the normal-operation history.
    pub fn chat_key(&self) -> String {
        format!("{}:{}", self.channel, self.chat_id)
    }
}

/// The kernel's answer to a turn: the words for the user and how the turn ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Reply {
    pub text: String,
    /// How the turn ended; `text` explains it to the user when it is not `Answered`.
    #[serde(default)]
    pub outcome: Outcome,
    /// The reply asks something the chat's next message answers (an `ask_user_choice`
    /// question, a plan waiting for confirmation): voice keeps listening.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub awaits_answer: bool,
}

impl Reply {
    pub fn new(text: impl Into<String>, outcome: Outcome) -> Self {
        Self {
            text: text.into(),
            outcome,
            awaits_answer: false,
        }
    }
    pub fn ok(text: impl Into<String>) -> Self {
        Self::new(text, Outcome::Answered)
    }
    pub fn failed(text: impl Into<String>, error: Failure, detail: impl Into<String>) -> Self {
        Self::new(text, Outcome::failed(error, detail))
    }
    pub fn refused(text: impl Into<String>, reason: Refusal, detail: impl Into<String>) -> Self {
        Self::new(text, Outcome::refused(reason, detail))
    }
    pub fn cancelled(text: impl Into<String>) -> Self {
        Self::new(text, Outcome::Cancelled)
    }
    /// What went wrong, when the turn was not answered (see [`Outcome::problem`]).
    pub fn problem(&self) -> Option<String> {
        self.outcome.problem()
    }
    pub fn is_answered(&self) -> bool {
        self.outcome.is_answered()
    }
}

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
