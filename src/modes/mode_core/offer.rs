//! A mode offered by the backend, never by the model: when someone outside any mode
//! clearly starts a mode's activity ("我要开始做红烧肉了"), the model may ask for the offer
//! (`switch_mode` with `action: "offer"`), and the ModeManager decides here whether it is made —
//!
//! - the mode's `mode.json` has `"offer": {"words": […]}` and the person's own words of
//!   this turn say one of them plainly, now ([`crate::modes::switch::judge::said_now`]: not
//!   negated, not put off, not asked, not retold);
//! - no mode is active;
//! - this chat has not been offered a mode today (household time), remembered in
//!   `<workspace>/modes/offers.json` across restarts.
//!
//! Who may be offered (not a guest, only a sender who may switch modes in that chat) is
//! the tool's check; the question itself is fixed ([`question`], options [`YES`] /
//! [`NO`]) and goes through the `ask_user_choice` machinery. A clear yes ([`chose_yes`])
//! from the person who was asked, in that chat, within [`OFFER_FOR_MINUTES`], enters the
//! mode as that person's command ([`ModeCore::accept_offer`]): the answering turn is the
//! session's first record. Anything else drops the offer.

use super::{ModeCore, TurnId};
use crate::modes::manifest::ModeManifest;
use crate::modes::switch::SwitchAction;
use crate::modes::switched::{Refusal, SwitchError, Switched};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How long an offer stays answerable.
pub const OFFER_FOR_MINUTES: i64 = 5;
/// The option that accepts (the first) and the one that declines.
pub const YES: &str = "打开";
pub const NO: &str = "不用";
/// Chats remembered as offered today, at most (more are not offered: bounded).
pub const MAX_OFFERED_CHATS: usize = 1000;
/// The longest chat key remembered (a chat id is a peer's).
const MAX_CHAT_KEY: usize = 200;
const FILE: &str = "offers.json";

pub use crate::modes::manifest::{OfferPolicy, WordsProblem, MAX_WORDS, MAX_WORD_CHARS};

/// The most of a mode's description an offer's question carries (characters).
pub const MAX_OFFER_ABOUT_CHARS: usize = 40;

/// The fixed question of an offer, saying what the mode is for when its SKILL.md
/// describes it: "要打开做饭模式吗？（在厨房里一步一步带着家人做饭——…）" ([`about`]); a
/// mode without a description is offered with the bare "要打开做饭模式吗？".
pub fn question(display_name: &str, description: &str) -> String {
    match about(display_name, description) {
        Some(a) => format!("要打开{display_name}吗？（{a}）"),
        None => format!("要打开{display_name}吗？"),
    }
}

/// What a mode is for, short enough to say in its offer: the description's first
/// sentence, without the mode's own name in front ("做饭模式：…"), at most
/// [`MAX_OFFER_ABOUT_CHARS`] characters — cut after the last whole clause that fits (at
/// ，、；：— or a space), else at the limit with "…". `None` when there is nothing to say.
pub fn about(display_name: &str, description: &str) -> Option<String> {
    let d = description.trim();
    let d = d
        .strip_prefix(display_name)
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix(['：', ':']))
        .unwrap_or(d);
    let chars: Vec<char> = d.trim().chars().collect();
    // the first sentence (a '.' ends one only before a space or the end: not in "1.5")
    let end = (0..chars.len())
        .find(|&i| {
            matches!(chars[i], '。' | '！' | '？' | '!' | '?' | '\n' | '；' | ';')
                || (chars[i] == '.' && chars.get(i + 1).is_none_or(|c| c.is_whitespace()))
        })
        .unwrap_or(chars.len());
    let sentence = &chars[..end];
    let soft = |c: &char| matches!(c, '，' | ',' | '、' | '：' | ':' | '—' | '-' | '（' | '(');
    let trim = |s: &[char]| -> String {
        let s: String = s.iter().collect();
        s.trim_end_matches(|c: char| c.is_whitespace() || soft(&c))
            .trim()
            .to_string()
    };
    let out = if sentence.len() <= MAX_OFFER_ABOUT_CHARS {
        trim(sentence)
    } else {
        // the longest run of whole clauses that fits, if it says something
        let fits = &sentence[..=MAX_OFFER_ABOUT_CHARS];
        match fits.iter().rposition(|c| soft(c) || c.is_whitespace()) {
            Some(at) if trim(&sentence[..at]).chars().count() >= 4 => trim(&sentence[..at]),
            _ => format!("{}…", trim(&sentence[..MAX_OFFER_ABOUT_CHARS - 1])),
        }
    };
    (!out.is_empty()).then_some(out)
}

/// Whether an answer to the offer is a clear yes: the first option by number or name,
/// or a plain assent (好, 好的, 要, 可以, 行, 嗯, ok, yes …), with filler and
/// punctuation around. Strict on purpose: anything else drops the offer.
pub fn chose_yes(answer: &str) -> bool {
    let t = plain(answer);
    matches!(t.as_str(), "1" | "一" | "第一个" | "第1个" | "第一")
        || assents(&t)
        || ENTER_YES.contains(&t.as_str())
}

/// What the backend's question asks when the words of a switch were unsure
/// (`switch::unsure`): to enter a mode, to leave it, or — the paused parent named while a
/// sub-mode runs — to go back to it ("要回到做饭模式吗？", which ends the sub-mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirming {
    Enter,
    Exit,
    Return,
}

impl Confirming {
    /// The question for `action`; `returns` when the mode entered is the paused parent.
    pub fn new(action: SwitchAction, returns: bool) -> Self {
        match (action, returns) {
            (SwitchAction::Enter, false) => Confirming::Enter,
            (SwitchAction::Enter, true) => Confirming::Return,
            (SwitchAction::Exit, _) => Confirming::Exit,
        }
    }

    /// "要打开做饭模式吗？", "要退出做饭模式吗？", "要回到做饭模式吗？".
    pub fn question(self, display_name: &str) -> String {
        let verb = match self {
            Confirming::Enter => "打开",
            Confirming::Exit => "退出",
            Confirming::Return => "回到",
        };
        format!("要{verb}{display_name}吗？")
    }

    /// The option that says yes (the first; the other is [`NO`]).
    pub fn yes(self) -> &'static str {
        match self {
            Confirming::Enter => YES,
            Confirming::Exit => "退出",
            Confirming::Return => "回到",
        }
    }

    /// Whether `answer` is a clear yes: a plain assent, or the question's own verb (开吧
    /// to enter; 退出吧, 关吧 to exit; 回到, 回去吧 to go back) — never another's.
    pub fn said_yes(self, answer: &str) -> bool {
        let t = plain(answer);
        let own = match self {
            Confirming::Enter => ENTER_YES,
            Confirming::Exit => EXIT_YES,
            Confirming::Return => RETURN_YES,
        };
        assents(&t) || own.contains(&t.as_str())
    }
}

/// The action's own verbs, as a yes.
const ENTER_YES: &[&str] = &[
    "打开", "开", "开启", "进入", "启动", "open", "enter", "turnon",
];
const EXIT_YES: &[&str] = &[
    "退出", "退", "关", "关闭", "关掉", "结束", "停", "停止", "exit", "close", "turnoff",
];
/// Going back (the verbs of `modes::paused::RETURN_VERBS` as a short answer).
const RETURN_YES: &[&str] = &[
    "回到", "回", "回去", "回来", "返回", "切回", "换回", "goback", "back", "return",
];

fn assents(t: &str) -> bool {
    matches!(
        t,
        "好" | "好好"
            | "要"
            | "需要"
            | "可以"
            | "行"
            | "是"
            | "对"
            | "嗯"
            | "嗯嗯"
            | "没问题"
            | "ok"
            | "okay"
            | "yes"
            | "yeah"
            | "sure"
    )
}

/// The answer without punctuation, in lower case, one filler off each end ("嗯" alone
/// stays a yes).
fn plain(answer: &str) -> String {
    let t: String = answer
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect::<String>()
        .to_lowercase();
    let mut t = t.as_str();
    for filler in ["我选", "选择", "选", "那就", "就", "嗯"] {
        t = t
            .strip_prefix(filler)
            .filter(|r| !r.is_empty())
            .unwrap_or(t);
    }
    for filler in ["吧", "的", "啊", "呀", "哦", "嘛", "了"] {
        t = t
            .strip_suffix(filler)
            .filter(|r| !r.is_empty())
            .unwrap_or(t);
    }
    t.to_string()
}

/// Whether `words` say one of `m`'s `offer.words` plainly and now.
fn says_offer_words(m: &ModeManifest, words: &str) -> bool {
    let Some(policy) = &m.offer else {
        return false;
    };
    let phrases: Vec<String> = policy
        .words
        .iter()
        .map(|w| crate::modes::switch::clause::normalize(w))
        .collect();
    crate::modes::switch::judge::said_now(words, &phrases)
}

/// The mode offered when the model asked for `asked` and the words say its offer words:
/// of all the modes whose offer words they say, the one of the largest `priority` (a
/// tie keeps the one asked for, then the smaller id).
fn preferred<'a>(
    asked: &'a ModeManifest,
    modes: impl IntoIterator<Item = &'a ModeManifest>,
    words: &str,
) -> &'a ModeManifest {
    modes
        .into_iter()
        .filter(|m| m.priority > asked.priority && says_offer_words(m, words))
        .max_by(|a, b| a.priority.cmp(&b.priority).then_with(|| b.id.cmp(&a.id)))
        .unwrap_or(asked)
}

/// An offer the ModeManager agreed to make.
#[derive(Debug, Clone, PartialEq)]
pub struct Offered {
    pub mode_id: String,
    pub display_name: String,
    /// What the mode is for (its SKILL.md `description`, maybe empty): the question says it.
    pub description: String,
}

/// Why no offer is made (for the model: it answers as usual).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoOffer {
    #[error("not offered: unknown mode {0:?}")]
    UnknownMode(String),
    #[error("not offered: {0}'s mode.json does not let homebot offer it")]
    NotOfferable(String),
    #[error("not offered: the user's own words do not start the activity of {0} (they must say one of its words, plainly and now); answer as usual")]
    NotSaid(String),
    #[error("not offered: the answer is no mode's work")]
    NotTheWork,
    #[error("not offered: a mode is active already")]
    ModeActive,
    #[error("not offered: this chat was offered a mode today already (at most once a day); answer as usual")]
    AlreadyToday,
    #[error("not offered: the offers of today could not be remembered ({0}); answer as usual")]
    NotRemembered(String),
}

/// What `offers.json` holds: the household day and the chats offered a mode on it.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Day {
    day: String,
    chats: Vec<String>,
}

impl ModeCore {
    /// Decide an offer of `mode_id` to `chat_key` whose speaker said `words` this turn;
    /// `Ok` records it as this chat's offer of the day.
    pub fn offer(
        &mut self,
        now: DateTime<Utc>,
        mode_id: &str,
        chat_key: &str,
        words: &str,
    ) -> Result<Offered, NoOffer> {
        self.check_expiry(now);
        let Some(mode) = self.registry.get(mode_id) else {
            return Err(NoOffer::UnknownMode(mode_id.chars().take(64).collect()));
        };
        let m = &mode.manifest;
        if m.offer.is_none() {
            return Err(NoOffer::NotOfferable(m.display_name.clone()));
        }
        if !says_offer_words(m, words) {
            return Err(NoOffer::NotSaid(m.display_name.clone()));
        }
        let m = preferred(m, self.registry.modes().iter().map(|r| &r.manifest), words);
        if self.active.is_some() {
            return Err(NoOffer::ModeActive);
        }
        let offered = self.offered(m);
        self.remember_offer(now, chat_key)?;
        Ok(offered)
    }

    /// The offer of mode `m`, with its description from the registry.
    fn offered(&self, m: &ModeManifest) -> Offered {
        Offered {
            mode_id: m.id.clone(),
            display_name: m.display_name.clone(),
            description: self
                .registry
                .get(&m.id)
                .map(|r| r.description.clone())
                .unwrap_or_default(),
        }
    }

    /// Decide an offer made after a normal chat's `answer` ([`crate::modes::answer_signs`]):
    /// of the modes whose `offer.answer` the answer matches, the one of the largest
    /// `priority`, then the best match, on the limits of any offer
    /// (no mode active, once per chat per day) but without the user's words.
    pub fn offer_after_answer(
        &mut self,
        now: DateTime<Utc>,
        chat_key: &str,
        answer: &str,
    ) -> Result<Offered, NoOffer> {
        self.check_expiry(now);
        if self.active.is_some() {
            return Err(NoOffer::ModeActive);
        }
        let best = self
            .registry
            .modes()
            .iter()
            .filter_map(|mode| {
                let signs = mode.manifest.offer.as_ref()?.answer.as_ref()?;
                Some((signs.matches(answer)?, &mode.manifest))
            })
            .max_by(|a, b| {
                (a.1.priority.cmp(&b.1.priority))
                    .then_with(|| a.0.cmp(&b.0))
                    .then_with(|| b.1.id.cmp(&a.1.id))
            });
        let Some((_, m)) = best else {
            return Err(NoOffer::NotTheWork);
        };
        let offered = self.offered(m);
        self.remember_offer(now, chat_key)?;
        Ok(offered)
    }

    /// Record `chat_key` as offered a mode today (household time), in `offers.json`; a
    /// chat offered one today already is refused.
    fn remember_offer(&mut self, now: DateTime<Utc>, chat_key: &str) -> Result<(), NoOffer> {
        let today = self.local(now).date_naive().to_string();
        let path = self.ws.modes_dir().join(FILE);
        let mut day: Day = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .filter(|d: &Day| d.day == today)
            .unwrap_or_else(|| Day {
                day: today,
                chats: Vec::new(),
            });
        if chat_key.len() > MAX_CHAT_KEY
            || day.chats.iter().any(|c| c == chat_key)
            || day.chats.len() >= MAX_OFFERED_CHATS
        {
            return Err(NoOffer::AlreadyToday);
        }
        day.chats.push(chat_key.to_string());
        let bytes = serde_json::to_vec_pretty(&day).expect("the offers of a day serialize");
        crate::fsutil::create_private_dirs(&self.ws.modes_dir())
            .and_then(|()| crate::fsutil::write_atomic(&path, &bytes))
            .map_err(|e| NoOffer::NotRemembered(e.to_string()))
    }

    /// The asker's yes to an offer: enter `mode_id` as their command; the answering turn
    /// `turn_id` becomes the session's first record. (Whether the answer was a yes, from
    /// the asker, in time, is the caller's check: the offer lives with the question.)
    pub fn accept_offer(
        &mut self,
        now: DateTime<Utc>,
        mode_id: &str,
        turn_id: TurnId,
    ) -> Result<Switched, SwitchError> {
        self.check_expiry(now);
        let Some(mode) = self.registry.get(mode_id).cloned() else {
            return Err(Refusal::UnknownMode {
                id: mode_id.to_string(),
                available: self.registry.ids(),
            }
            .into());
        };
        let entered = self.entered_by_turn(crate::modes::entered::EnteredHow::Offer, turn_id);
        self.enter(now, mode, Some(turn_id), &entered)
    }
}

#[cfg(test)]
#[path = "offer_tests.rs"]
mod tests;
