//! The third verdict: words the guard cannot place. [`super::judge`] says whether a
//! sentence commands the switch; here its verdict is read once more, and only where the
//! user's words already name the mode *and* say the action's verb somewhere, for what a
//! person would not act on without asking back:
//!
//! - **a suggestion shaped as a question** — "打开做饭模式吧？", "要不开个做饭模式？",
//!   "咱们开做饭模式？": a proposal waiting for a yes;
//! - **retold or habitual speech** — "我妈说打开做饭模式", "我每天都开做饭模式": about a
//!   command, maybe meaning one;
//! - **the parts apart** — "做饭模式，开始吧": the name and the verb in clauses of their
//!   own, which the judge reads one at a time;
//! - **extra words around the command** — "今天打开做饭模式": the command's own clause
//!   says more than the command (what is left once the name, the verb and the words every
//!   command may carry — requests, now-words, particles, 把 … — are taken out); or a
//!   clause beside it names a time ("打开做饭模式下午做蛋糕"), so the command may be meant
//!   for then.
//!
//! Everything else keeps the judge's verdict: a command switches, a clear non-command
//! (negated, retracted, a how/what question, deferred to a time it can place, a state
//! asked about) is refused.

use super::clause::{blank, clean, contains_any, normalize, segments, Lexicon};
use super::judge::{judge, Verdict};
use super::words::{BOUNDARIES, PARTICLES, REQUESTS_EN, REQUESTS_ZH, VERB_TAILS};

/// What the guard makes of a `switch_mode` call's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Switch,
    /// A clear non-command, and why.
    Refuse(Verdict),
    /// Words it cannot place: ask the person.
    Ask(Unsure),
}

/// Why the words are unsure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsure {
    Suggestion,
    Retold,
    Apart,
    Extra,
}

/// Suggestions: a proposal before the verb ("要不开个…", "咱们开…") or a 吧 asked.
const SUGGESTS_ZH: &[&str] = &[
    "要不要",
    "要不",
    "不如",
    "咱们",
    "咱",
    "我们要",
    "是不是该",
    "该不该",
    "怎么样",
    "咋样",
];
const SUGGESTS_EN: &[&str] = &[
    "shall we",
    "should we",
    "shouldn't we",
    "why don't we",
    "why not",
    "maybe",
    "how about",
    "what about",
];
/// A negated suggestion ("shouldn't we exit…?") proposes what it negates.
const NEGATED_SUGGESTS: &[&str] = &["shouldn't we", "should not we", "why don't we", "why not"];
/// Habits: what is done regularly, not asked for now.
const HABITS_ZH: &[&str] = &[
    "每天",
    "每次",
    "每回",
    "总是",
    "老是",
    "经常",
    "平时",
    "一般都",
    "通常",
    "天天",
    "习惯",
];
const HABITS_EN: &[&str] = &["every day", "always", "usually", "every time", "often"];
/// Words any command may carry besides the name and the verb.
const COMMAND_WORDS_ZH: &[&str] = &[
    "现在",
    "马上",
    "立刻",
    "立即",
    "赶紧",
    "赶快",
    "快点",
    "快",
    "那就",
    "那",
    "就",
    "再",
    "先",
    "直接",
    "一下",
    "一下子",
    "下",
    "个",
    "把",
    "给",
    "帮",
    "我",
    "你",
    "们",
    "咱",
    "要",
    "想",
    "得",
    "该",
    "都",
    "也",
    "还是",
    "吧",
    "好",
    "行",
    "啦",
    "呗",
    "嘛",
    "哈",
    "呀",
    "啊",
    "哦",
    "了",
    "吗",
    "呢",
    "请",
    "麻烦",
    "可以",
    "能",
    "的",
    "起来",
    "一个",
    "模式",
    "它",
    "这",
    "来",
];
const COMMAND_WORDS_EN: &[&str] = &[
    "please", "now", "the", "right", "away", "can", "could", "would", "you", "let's", "lets",
    "let", "us", "me", "i", "want", "to", "go", "ahead", "and", "just", "ok", "okay", "mode",
    "for", "on", "off", "it", "thanks", "thank",
];

/// The guard's verdict on `text` for one action's lexicon.
pub fn decide(text: &str, lex: &Lexicon) -> Decision {
    let cleaned = clean(&normalize(text));
    // "turn cooking mode off": the English verb around the name, put back together
    if let Some(joined) = phrasal(&cleaned, lex) {
        return decide(&joined, lex);
    }
    let verdict = judge(text, lex);
    let said = whole(&cleaned);
    if !(lex.named_in(&said) && has_verb(&said, lex)) {
        return settle(verdict);
    }
    match verdict {
        Verdict::Command => match command_clause(&cleaned, lex) {
            Some(c) if extra(&c, lex) => Decision::Ask(Unsure::Extra),
            Some(c) if timed_elsewhere(&cleaned, &c, lex) => Decision::Ask(Unsure::Extra),
            _ if habitual(&said) => Decision::Ask(Unsure::Retold),
            _ => Decision::Switch,
        },
        Verdict::Question if suggests(&cleaned) => Decision::Ask(Unsure::Suggestion),
        // "开个做饭模式怎么样？": 怎么 here asks what one thinks of it, not how
        Verdict::HowQuestion if ends_with_what_about(&cleaned) => Decision::Ask(Unsure::Suggestion),
        Verdict::Negated if NEGATED_SUGGESTS.iter().any(|w| cleaned.contains(w)) => {
            Decision::Ask(Unsure::Suggestion)
        }
        Verdict::Reported if !conditional(&said) => Decision::Ask(Unsure::Retold),
        Verdict::NoVerb if apart(&cleaned, lex) => Decision::Ask(Unsure::Apart),
        v => Decision::Refuse(v),
    }
}

fn settle(v: Verdict) -> Decision {
    match v {
        Verdict::Command => Decision::Switch,
        v => Decision::Refuse(v),
    }
}

/// The text with its clause boundaries taken out (the judge then reads it as one clause).
fn whole(cleaned: &str) -> String {
    cleaned
        .chars()
        .filter(|c| {
            !matches!(
                c,
                '，' | '。' | ',' | '.' | '！' | '!' | '；' | ';' | '、' | '…' | '～' | '~'
            )
        })
        .collect()
}

/// "turn cooking mode off" → "turn off cooking mode" (and on, switch … off/on).
fn phrasal(cleaned: &str, lex: &Lexicon) -> Option<String> {
    for head in ["turn", "switch", "shut"] {
        for n in &lex.names {
            for tail in ["off", "on"] {
                let split = format!("{head} {n} {tail}");
                if cleaned.contains(&split) {
                    return Some(cleaned.replace(&split, &format!("{head} {tail} {n}")));
                }
            }
        }
    }
    None
}

/// The name in one clause and the verb in another: the clauses read as one command, or
/// a clause with the verb and no name reads as one with the name put in front.
fn apart(cleaned: &str, lex: &Lexicon) -> bool {
    if judge(&whole(cleaned), lex) == Verdict::Command {
        return true;
    }
    let Some(name) = lex.names.first() else {
        return false;
    };
    segments(cleaned, lex)
        .iter()
        .filter(|s| !lex.named_in(&s.text) && has_verb(&s.text, lex))
        .any(|s| judge(&format!("{name}{}", s.text), lex) == Verdict::Command)
}

fn has_verb(t: &str, lex: &Lexicon) -> bool {
    lex.verbs
        .iter()
        .chain(&lex.bound)
        .any(|v| t.contains(v.as_str()))
}

/// The clause that commands: the first segment that names the mode and is judged a command.
fn command_clause(cleaned: &str, lex: &Lexicon) -> Option<String> {
    segments(cleaned, lex)
        .into_iter()
        .map(|s| s.text)
        .find(|t| lex.named_in(t) && judge(t, lex) == Verdict::Command)
}

/// Does another clause beside the command's own name a time so that the command's own
/// time is left open? Before the command ("待会儿蒸馒头，开启做饭模式": a plan first), or
/// run on after it with nothing between ("打开做饭模式下午做蛋糕"); a clause after the
/// command's own punctuation tells what the mode is for ("进入做饭模式吧，今晚三个人吃").
/// Not a question ("…今晚吃什么" plans now), not a reminder's time ("…十分钟后提醒我翻面")
/// and not another occasion ("关闭做饭模式下次再做鱼", "退出做饭模式明天再做").
fn timed_elsewhere(cleaned: &str, command: &str, lex: &Lexicon) -> bool {
    let Some(at) = cleaned.find(command) else {
        return false;
    };
    let end = at + command.len();
    segments(cleaned, lex)
        .iter()
        .filter(|s| s.text != command && !s.asked)
        .filter(|s| !contains_any(&s.text, NOT_THE_COMMANDS_TIME))
        .filter(|s| super::judge::names_a_time(&s.text))
        .any(|s| match cleaned[end..].find(s.text.as_str()) {
            Some(gap) => !cleaned[end..end + gap].contains(BOUNDARIES),
            None => true,
        })
}

/// A clause with one of these has a time of its own, not the command's.
const NOT_THE_COMMANDS_TIME: &[&str] = &[
    "什么",
    "啥",
    "吗",
    "提醒",
    "叫我",
    "下次",
    "下回",
    "再",
    "remind",
    "next time",
];

/// Does the command's clause say more than the command?
fn extra(clause: &str, lex: &Lexicon) -> bool {
    let mut rest = clause.to_string();
    let mut known: Vec<&str> = lex
        .names
        .iter()
        .chain(&lex.verbs)
        .chain(&lex.bound)
        .chain(&lex.phrases)
        .map(String::as_str)
        .collect();
    known.extend(VERB_TAILS);
    known.extend(REQUESTS_ZH);
    // longest first, so a word inside a longer one does not break it
    known.sort_by_key(|w| std::cmp::Reverse(w.len()));
    rest = blank(&rest, &known);
    let mut zh: Vec<&str> = COMMAND_WORDS_ZH.to_vec();
    zh.sort_by_key(|w| std::cmp::Reverse(w.len()));
    rest = blank(&rest, &zh);
    let cjk_left = rest
        .chars()
        .filter(|c| is_cjk(*c) && !PARTICLES.contains(c))
        .count();
    let en_left = rest
        .split(|c: char| !c.is_ascii_alphabetic() && c != '\'')
        .filter(|w| !w.is_empty())
        .filter(|w| !COMMAND_WORDS_EN.contains(w) && !REQUESTS_EN.contains(w))
        .count();
    cjk_left >= 2 || en_left >= 2
}

fn is_cjk(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c)
}

fn suggests(cleaned: &str) -> bool {
    let t = cleaned.trim_end_matches(['？', '?', ' ']);
    SUGGESTS_ZH.iter().any(|w| t.contains(w))
        || SUGGESTS_EN.iter().any(|w| t.contains(w))
        || (t.ends_with('吧') && cleaned.trim_end().ends_with(['？', '?']))
}

fn ends_with_what_about(cleaned: &str) -> bool {
    let t = cleaned.trim_end_matches(['？', '?', ' ', '呢', '啊', '呀']);
    let Some(before) = t.strip_suffix("怎么样").or_else(|| t.strip_suffix("咋样")) else {
        return false;
    };
    // "打开做饭模式会怎么样" asks what happens
    !before.ends_with(['会', '了', '得', '能', '要', '又'])
}

fn habitual(said: &str) -> bool {
    HABITS_ZH.iter().any(|w| said.contains(w)) || HABITS_EN.iter().any(|w| said.contains(w))
}

fn conditional(said: &str) -> bool {
    use super::words::{CONDITIONALS_EN, CONDITIONALS_ZH, CONDITIONAL_ANYWHERE_ZH};
    CONDITIONALS_ZH.iter().any(|w| said.contains(w))
        || CONDITIONAL_ANYWHERE_ZH.iter().any(|w| said.contains(w))
        || CONDITIONALS_EN.iter().any(|w| said.contains(w))
}
