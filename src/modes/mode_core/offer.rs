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

/// The fixed question of an offer.
pub fn question(display_name: &str) -> String {
    format!("要打开{display_name}吗？")
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

/// Whether an answer to the backend's question about a switch its words left unsure
/// ("要退出做饭模式吗？") is a clear yes: a plain assent, or the action's own verb (开吧
/// to enter; 退出吧, 关吧 to exit) — never the other action's.
pub fn chose_yes_to(action: SwitchAction, answer: &str) -> bool {
    let t = plain(answer);
    assents(&t)
        || match action {
            SwitchAction::Enter => ENTER_YES.contains(&t.as_str()),
            SwitchAction::Exit => EXIT_YES.contains(&t.as_str()),
        }
}

/// The action's own verbs, as a yes.
const ENTER_YES: &[&str] = &[
    "打开", "开", "开启", "进入", "启动", "open", "enter", "turnon",
];
const EXIT_YES: &[&str] = &[
    "退出", "退", "关", "关闭", "关掉", "结束", "停", "停止", "exit", "close", "turnoff",
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

/// The backend's question when the words of a switch were unsure.
pub fn confirm_question(action: SwitchAction, display_name: &str) -> String {
    match action {
        SwitchAction::Enter => format!("要打开{display_name}吗？"),
        SwitchAction::Exit => format!("要退出{display_name}吗？"),
    }
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
        let offered = Offered {
            mode_id: m.id.clone(),
            display_name: m.display_name.clone(),
        };
        self.remember_offer(now, chat_key)?;
        Ok(offered)
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
        let offered = Offered {
            mode_id: m.id.clone(),
            display_name: m.display_name.clone(),
        };
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
mod tests {
    use super::*;

    fn offered_on(id: &str, words: &str, priority: i32) -> ModeManifest {
        ModeManifest::parse(&format!(
            r#"{{"id":"{id}","display_name":"{id}模式","priority":{priority},"offer":{{"words":["{words}"]}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn after_an_answer_that_fits_two_modes_the_larger_priority_is_offered() {
        let tmp = tempfile::tempdir().unwrap();
        let skills = tmp.path().join("skills");
        // cooking matches the answer better (four words), baking has the larger priority
        for (id, prio, words) in [
            ("baking", 5, r#""下锅","小火","出锅""#),
            ("cooking", 0, r#""下锅","小火","出锅","装盘""#),
        ] {
            let d = skills.join(id);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("SKILL.md"), format!("---\nname: {id}\n---\n")).unwrap();
            let json = format!(
                r#"{{"id":"{id}","display_name":"{id}模式","priority":{prio},"offer":{{"words":["开始做"],"answer":{{"words":[{words}]}}}}}}"#
            );
            std::fs::write(d.join("mode.json"), json).unwrap();
        }
        let reg = crate::modes::ModeRegistry::load(&[skills], &[]);
        assert!(reg.issues().is_empty(), "{:?}", reg.issues());
        let now = Utc::now();
        let ws = crate::workspace::Workspace::open(&tmp.path().join("ws")).unwrap();
        let mut core = ModeCore::open(
            ws,
            std::sync::Arc::new(reg),
            "Asia/Shanghai".parse().unwrap(),
            now,
            crate::prompt::frozen_mode_prompt,
        )
        .unwrap();
        let answer = "1. 先把鸡蛋下锅\n2. 小火慢煎\n3. 出锅装盘";
        let offered = core.offer_after_answer(now, "qq:1", answer).unwrap();
        assert_eq!(offered.mode_id, "baking");
        // by the words too: "开始做" fits both, the model asked for cooking
        let offered = core.offer(now, "cooking", "qq:2", "我开始做了").unwrap();
        assert_eq!(offered.mode_id, "baking");
    }

    #[test]
    fn when_the_words_fit_two_modes_the_larger_priority_is_offered() {
        let cooking = offered_on("cooking", "做蛋糕", 0);
        let baking = offered_on("baking", "做蛋糕", 5);
        let homework = offered_on("homework", "写作业", 9);
        let all = [cooking.clone(), baking.clone(), homework.clone()];
        let said = "我要开始做蛋糕了";
        assert_eq!(preferred(&cooking, &all, said).id, "baking");
        assert_eq!(preferred(&baking, &all, said).id, "baking");
        // a mode whose words were not said is never offered, whatever its priority
        assert_eq!(preferred(&cooking, &all, "我要做饭了").id, "cooking");
        // words put off fit no mode: the one asked for stays (and its own check refuses)
        assert_eq!(preferred(&cooking, &all, "明天再做蛋糕").id, "cooking");
        // a tie keeps the one the model asked for
        let even = offered_on("baking", "做蛋糕", 0);
        assert_eq!(
            preferred(&cooking, &[cooking.clone(), even], said).id,
            "cooking"
        );
        assert!(says_offer_words(&baking, said) && !says_offer_words(&homework, said));
    }

    #[test]
    fn a_yes_to_a_switch_question_is_an_assent_or_its_own_verb() {
        for yes in [
            "对",
            "是的",
            "好",
            "嗯",
            "行",
            "可以",
            "退出吧",
            "关吧",
            "关掉",
            "ok",
            "Yes!",
        ] {
            assert!(chose_yes_to(SwitchAction::Exit, yes), "{yes}");
        }
        for yes in ["开吧", "打开", "好的", "嗯嗯"] {
            assert!(chose_yes_to(SwitchAction::Enter, yes), "{yes}");
        }
        // the other action's verb, a no, or more than a yes
        for no in [
            "开吧",
            "打开",
            "不用",
            "不要",
            "先不",
            "等会儿",
            "关火",
            "好不好",
            "",
        ] {
            assert!(!chose_yes_to(SwitchAction::Exit, no), "{no}");
        }
        for no in ["关吧", "退出", "不", "再说吧"] {
            assert!(!chose_yes_to(SwitchAction::Enter, no), "{no}");
        }
        assert_eq!(
            confirm_question(SwitchAction::Exit, "做饭模式"),
            "要退出做饭模式吗？"
        );
    }

    #[test]
    fn only_a_clear_yes_accepts() {
        for yes in [
            "好",
            "好的",
            "好啊！",
            "1",
            "打开",
            "打开吧",
            "嗯",
            "可以",
            "要",
            "ok",
            "Yes.",
        ] {
            assert!(chose_yes(yes), "{yes}");
        }
        for no in [
            "不用",
            "2",
            "不要",
            "好像不用",
            "先不",
            "等会",
            "",
            "打开冰箱",
            "好不好",
        ] {
            assert!(!chose_yes(no), "{no}");
        }
    }

    #[test]
    fn the_words_are_bounded() {
        let p = |w: &[&str]| OfferPolicy {
            words: w.iter().map(|s| s.to_string()).collect(),
            answer: None,
        };
        assert!(p(&["开始做"]).check().is_ok());
        assert_eq!(p(&[]).check(), Err(WordsProblem::Count));
        assert_eq!(p(&[" "]).check(), Err(WordsProblem::Length));
        assert_eq!(p(&[&"长".repeat(21)]).check(), Err(WordsProblem::Length));
    }

    #[test]
    fn the_words_must_be_said_plainly_and_now() {
        let words = vec!["开始做".to_string(), "我来做饭".to_string()];
        for said in ["我要开始做红烧肉了", "今晚我来做饭", "好，我来做饭吧"] {
            assert!(
                crate::modes::switch::judge::said_now(said, &words),
                "{said}"
            );
        }
        for not in [
            "我不想开始做饭",
            "明天我来做饭",
            "他说他来做饭",
            "你会开始做饭吗",
            "今天天气怎么样",
            "晚点再开始做",
        ] {
            assert!(!crate::modes::switch::judge::said_now(not, &words), "{not}");
        }
    }
}
