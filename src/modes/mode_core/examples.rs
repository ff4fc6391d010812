//! Examples learned from the household, as the core sees them ([`crate::modes::examples`]):
//! every answered turn of a session whose mode opts in is its chat's candidate until the
//! chat's next message; that message — praise or thanks ([`signals`]) — or a `/good`
//! keeps it. A candidate whose answer only its asker heard (a private chat, the
//! terminal) is never kept: any mode session can be joined by anyone, so a case from a
//! private chat would be shown to others. A new session gets the most similar kept cases
//! to its first words ([`pick`]) in its frozen prompt.
//!
//! The owner sees the active session's shared candidates on the dashboard
//! ([`ModeCore::shared_candidates`]) and may keep one there ([`Judged::Dashboard`]).
//!
//! Keeping a case is a small atomic file replace on this actor, rare (a thanks), and a
//! failure is a warning: a turn never fails for it.

use super::{ModeCore, TurnId};
use crate::modes::examples::{pick, signals, Case, CaseScene, ExampleStore, Judged};
use crate::modes::registry::RegisteredMode;
use crate::modes::session::Record;
use tracing::info;

/// A chat's last answered turn in a session whose mode learns examples.
pub(in crate::modes) struct Candidate {
    session_id: String,
    mode_id: String,
    keep: usize,
    /// Whether others heard the answer (a group chat, a room).
    shared: bool,
    case: Case,
}

/// What `/good` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Good {
    /// Kept, with this id.
    Kept(String),
    /// The chat's last turn was heard by its asker alone: never kept.
    Private,
    /// No answered turn of the active session, in a mode that learns, to keep.
    Nothing,
    /// It could not be written (the status's warnings say why).
    Failed,
}

/// How many characters of a candidate's words and answer [`CandidateView`] shows.
pub const VIEW_CHARS: usize = 200;

/// A chat's candidate as the owner sees it on the dashboard (only one that others heard).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CandidateView {
    pub mode_id: String,
    pub session_id: String,
    pub channel: String,
    pub chat_id: String,
    pub room: Option<String>,
    /// When the answered turn began.
    pub at: String,
    /// The user's words, shortened to [`VIEW_CHARS`].
    pub user: String,
    /// The answer, shortened to [`VIEW_CHARS`].
    pub answer: String,
}

impl ModeCore {
    /// Compare the household's examples with a session's first words by `words` (the
    /// caller's, so this module never imports the memory that depends on it).
    pub fn compare_examples_by(&mut self, words: Option<crate::modes::examples::pick::WordsFn>) {
        self.words = words;
    }

    pub fn examples_words(&self) -> Option<crate::modes::examples::pick::WordsFn> {
        self.words
    }

    /// Session `sid` was archived: its turns can no longer be kept.
    pub(super) fn drop_candidates_of(&mut self, sid: &str) {
        self.candidates.retain(|_, c| c.session_id != sid);
    }

    /// Turn `record` was recorded in session `sid` (`None`: the chat's normal history):
    /// keep the chat's candidate if these words praise or thank it, else make this turn
    /// the chat's candidate (or none).
    pub(super) fn learn_from(
        &mut self,
        sid: Option<&str>,
        record: &Record,
        shared: bool,
        room: Option<String>,
    ) {
        let key = (record.channel.clone(), record.chat_id.clone());
        let before = self.candidates.remove(&key);
        if let (Some(judged), Some(c)) = (signals::signal_of(&record.user), before) {
            if Some(c.session_id.as_str()) == sid {
                self.keep_case(c, judged);
            }
            return;
        }
        let Some(sid) = sid.filter(|_| record.error.is_none()) else {
            return;
        };
        let Some(s) = super::live_in(&mut self.active, &mut self.paused, sid) else {
            return;
        };
        let Some((mode_id, policy)) = s
            .mode
            .as_ref()
            .and_then(|m| Some((m.manifest.id.clone(), m.manifest.examples?)))
        else {
            return;
        };
        let case = Case {
            id: String::new(),
            user: record.user.clone(),
            answer: record.assistant.clone(),
            scene: CaseScene {
                channel: record.channel.clone(),
                chat_id: record.chat_id.clone(),
                room,
            },
            at: record.timestamp.clone(),
            judged: Judged::Good,
            session_id: sid.to_string(),
        }
        .bounded();
        let candidate = Candidate {
            session_id: sid.to_string(),
            mode_id,
            keep: policy.keep,
            shared,
            case,
        };
        self.candidates.insert(key, candidate);
    }

    /// `/good` in chat `channel`/`chat_id`: keep its last answered turn of the active
    /// session.
    pub fn mark_good(&mut self, channel: &str, chat_id: &str) -> Good {
        self.keep_candidate(channel, chat_id, Judged::Good)
    }

    /// Keep chat `channel`/`chat_id`'s last answered turn of the active session, as
    /// `judged` (`/good`: the chat's own word; [`Judged::Dashboard`]: the owner's).
    pub fn keep_candidate(&mut self, channel: &str, chat_id: &str, judged: Judged) -> Good {
        let key = (channel.to_string(), chat_id.to_string());
        let active = self.active.as_ref().map(|s| s.session_id.clone());
        match self.candidates.get(&key) {
            Some(c) if Some(&c.session_id) == active.as_ref() => {}
            _ => return Good::Nothing,
        }
        let c = self.candidates.remove(&key).expect("checked above");
        if !c.shared {
            return Good::Private;
        }
        match self.keep_case(c, judged) {
            Some(id) => Good::Kept(id),
            None => Good::Failed,
        }
    }

    /// The candidates of the active session that others heard (a private chat's never
    /// leaves the core), newest first, their words and answers shortened: what the owner
    /// may keep from the dashboard.
    pub fn shared_candidates(&self) -> Vec<CandidateView> {
        let Some(active) = self.active.as_ref().map(|s| s.session_id.as_str()) else {
            return Vec::new();
        };
        let mut out: Vec<CandidateView> = (self.candidates.values())
            .filter(|c| c.shared && c.session_id == active)
            .map(|c| CandidateView {
                mode_id: c.mode_id.clone(),
                session_id: c.session_id.clone(),
                channel: c.case.scene.channel.clone(),
                chat_id: c.case.scene.chat_id.clone(),
                room: c.case.scene.room.clone(),
                at: c.case.at.clone(),
                user: crate::modes::session::excerpt(&c.case.user, VIEW_CHARS),
                answer: crate::modes::session::excerpt(&c.case.answer, VIEW_CHARS),
            })
            .collect();
        out.sort_by(|a, b| (&b.at, &a.channel, &a.chat_id).cmp(&(&a.at, &b.channel, &b.chat_id)));
        out
    }

    /// Keep `c` as judged, unless only its asker heard it. The case's id, if kept.
    fn keep_case(&mut self, c: Candidate, judged: Judged) -> Option<String> {
        if !c.shared {
            info!(mode = %c.mode_id, session = %c.session_id, "example not kept: a private chat");
            return None;
        }
        let store = ExampleStore::new(&self.ws);
        let case = Case { judged, ..c.case };
        match store.add(&c.mode_id, case, c.keep) {
            Ok((id, warning)) => {
                if let Some(w) = warning {
                    self.warn(w);
                }
                info!(mode = %c.mode_id, session = %c.session_id, case = %id, ?judged, "example kept");
                Some(id)
            }
            Err(e) => {
                self.warn(format!(
                    "could not keep an example in {}: {e}",
                    store.path(&c.mode_id).display()
                ));
                None
            }
        }
    }

    /// The kept cases a new session of `mode` gets: up to its `use`, the most similar to
    /// the words and the scene of turn `first` (the turn that enters it), if any.
    pub(super) fn examples_for(
        &mut self,
        mode: &RegisteredMode,
        first: Option<TurnId>,
    ) -> Vec<Case> {
        let Some(policy) = mode.manifest.examples else {
            return Vec::new();
        };
        let (cases, warning) = ExampleStore::new(&self.ws).load(&mode.manifest.id);
        if let Some(w) = warning {
            self.warn(w);
        }
        let entry = first.and_then(|t| self.turns.get(&t));
        let words = entry
            .map(|e| e.text.as_str())
            .filter(|t| !t.trim().is_empty());
        let scene = entry.map(|e| CaseScene {
            channel: e.who.channel.clone(),
            chat_id: e.chat_id.clone(),
            room: e.room.clone(),
        });
        pick::pick(&cases, words, scene.as_ref(), policy.use_n, self.words)
    }
}

/// A new session's `examples.json`: the cases its frozen prompt got.
pub(super) fn write_session_examples(
    dir: &std::path::Path,
    cases: &[Case],
) -> Result<(), super::ModeError> {
    let path = dir.join(crate::modes::examples::SESSION_EXAMPLES_FILE);
    let json = serde_json::to_vec_pretty(cases).expect("cases always serialize");
    crate::fsutil::write_atomic(&path, &json).map_err(super::io("write", &path))
}
