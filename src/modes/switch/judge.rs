//! Does the user's own sentence *command* something? The parser behind the mode guard and
//! the `set_strategy` guard: one [`Lexicon`] (names, verbs, whole-command phrases, verbs
//! bound to a name) in, one [`Verdict`] out.
//!
//! The text is cleaned first (the assistant's name or a wake word in front, fillers such
//! as 嗯 / 那个 / 就是 taken out), then cut into segments (see [`super::clause`]). Only a
//! segment that holds a name counts, and in it the verb — a single-character one (开, 关
//! …) only right next to the name (see [`super::bound`]):
//!
//! 1. **Deferral.** A time later than now (晚点, 回头, 过会儿, 待会, 下次, 明天 …; later,
//!    tomorrow) or from now (十分钟后, 半小时以后, 过五分钟; in ten minutes), a not-yet
//!    word (先不, 还不, 暂时不, 不急 …) or an until-word (等我…, 等吃完…) before or after
//!    the verb, or as the whole of the segment right after the command
//!    ("关闭做饭模式｜等会儿再说"): it is for later, and nothing switches later by itself.
//!    Checked before negations, whose 不 / 别 the not-yet words contain.
//! 2. **Negation scope.** A negation anywhere before the verb in its segment negates it:
//!    不/不要/不能/不可以/不许/不准/禁止/请勿/别/没/不想…, "don't", "shouldn't", "not", "never"…
//!    A-not-A forms are not negations: 能不能 / 可不可以 / 行不行 are polite requests,
//!    要不要 / 会不会 / 是不是 / 有没有 are questions. A phrase of the lexicon is a whole
//!    command, negation included ("不用计划｜直接做").
//! 3. **Reports and hypotheses.** A reporting word before the verb (他说, 我觉得, 问, said,
//!    told, think…) or a conditional (如果, 要是, 万一, …的话, unless…) — it is about the
//!    command, not the command.
//! 4. **Questions.** An interrogative anywhere in the segment (为什么, 什么时候, 是什么,
//!    怎么, 哪, 多久, 会不会…; why, what, when, how, where, whether, if…), any A-not-A
//!    question (在不在, 贵不贵), a segment that opens with an English auxiliary ("will
//!    cooking mode end soon?") or a past marker (昨天, 刚才, 刚, 已经…) make it a question.
//!    A final 吗/呢/？ does too, unless it is a polite request: a request word *before the
//!    verb* (可以, 能, 能不能, 请, 帮我, 麻烦…; "can you", "please", "let's") or a request
//!    form at the end (好吗, 行吗, 可以吗) — "可以结束做饭模式了吗" asks for it;
//!    "做饭模式结束了吗" and "打开做饭模式家里人能看到吗" ask about it.
//! 5. **Not a command.** The name used as a modifier ("做饭模式的按钮"), and a perfective
//!    了/过 after the verb (关掉了 included) or after the name that follows it, report a
//!    state: "做饭模式结束了", "打开过做饭模式", "我把做饭模式关了". A 了 commands only
//!    when a request word before the verb asks for it ("给我把做饭模式开了", "做饭模式
//!    可以关了") or when it ends a disposal said to homebot — 把 + the name + the verb, with
//!    nothing before 把 but adverbs or requests ("把做饭模式关了", "赶紧把做饭模式关了").
//!    With 吗 / 没有 it asks ("做饭模式关了吗").
//! 6. **Not now, by its time.** Once the rules above find nothing, three more deferrals:
//!    - a time of day (今晚, 晚上, 下午, 中午, 早上 …; tonight, this evening) before or
//!      after the verb, or as the segment right after the command: "今晚打开做饭模式" is a
//!      plan for tonight ("晚上好" is a greeting, taken out with the wake words; 今天 is
//!      not a time of day here, it includes now);
//!    - 再 before the verb with something before it in the text — a precondition or a
//!      time: "吃完饭再关闭做饭模式", "等等再关…", "晚上再开…", "吃完了｜再关…" ("X 再 V"
//!      is "V after X"). Alone, or after nothing but now-words, requests, 把 or the name,
//!      再 is "again": "再打开做饭模式", "现在再打开做饭模式", "做饭模式再关一下";
//!    - the switch as the time of something else: the verb (and the name after it)
//!      followed by 前, 后, 之前, 之后, 以后, 时 … — "退出做饭模式前记得保存", "关闭做饭
//!      模式之后提醒我关火" — a subordinate clause, not a command (with a question word it
//!      is the question rule's: "打开做饭模式以后要干嘛").
//!
//!    A finished precondition with 了 and no 再 commands: "吃完了，关闭做饭模式"; a time
//!    in a clause of its own after the command does too: "打开做饭模式｜十分钟后提醒我翻面".
//! 7. **Retraction.** A later segment that takes it back (算了, 不用了, 不对, 取消, "never
//!    mind", "forget it", or a negated verb of the same command) cancels it.
//!
//! When in doubt it refuses; the caller's refusal says how to ask.

use super::bound::from_now_at;
use super::clause::{
    blank, clean, contains_any, find_all, normalize, segments, Clause, Lexicon, Role,
};
use super::words::*;

/// Why the best segment did not command it, most decisive first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Command,
    /// Taken back by a later segment.
    Retracted,
    /// For later, or not yet ("晚点再关…", "先不关…", "关闭…｜等会儿", "今晚打开…",
    /// "吃完饭再关…", "退出…前记得保存").
    Deferred,
    Negated,
    /// A how-to question ("怎么打开…").
    HowQuestion,
    /// Any other question, a report of a state, or the name used as a modifier.
    Question,
    /// Someone's words or opinion retold, or a hypothesis ("他说打开…", "如果…").
    Reported,
    /// The name is there, the verb is not (in the same segment).
    NoVerb,
    NotNamed,
}

/// Judge the whole text against one lexicon.
pub fn judge(text: &str, lex: &Lexicon) -> Verdict {
    let segs = segments(&clean(&normalize(text)), lex);
    let mut best = Verdict::NotNamed;
    for (i, s) in segs.iter().enumerate() {
        if !lex.named_in(&s.text) {
            continue;
        }
        let mut v = judge_segment(s, i > 0, lex);
        if v == Verdict::Command && segs.get(i + 1).is_some_and(|next| defers(next, lex)) {
            v = Verdict::Deferred;
        }
        if v == Verdict::Command && segs[i + 1..].iter().any(|later| retracts(later, lex)) {
            v = Verdict::Retracted;
        }
        if v == Verdict::Command {
            return v;
        }
        best = best.min(v);
    }
    best
}

/// Does `text` say one of `words` (normalized) as a plain statement of now — not
/// negated, put off, retold or asked? "我要开始做红烧肉了" says 开始做; "我不想开始做饭",
/// "明天我来做饭", "他说他来做饭" and "你会开始做饭吗" do not. (It gates the offer of a
/// mode: the model cannot offer one whose words were not said.)
pub fn said_now(text: &str, words: &[String]) -> bool {
    let lex = Lexicon {
        names: words.to_vec(),
        ..Default::default()
    };
    segments(&clean(&normalize(text)), &lex).iter().any(|s| {
        let t = &s.text;
        asks(s) == Asks::No
            && words.iter().any(|w| {
                find_all(t, w).into_iter().any(|pos| {
                    let before = &t[..pos];
                    !negated_before(before)
                        && !reported_before(before)
                        && !deferred(before)
                        && !deferred(&t[pos + w.len()..])
                })
            })
    })
}

/// Byte spans where the command's verb stands in `t`: its verbs, and its phrases where
/// only a tail follows them.
fn verb_spans(t: &str, lex: &Lexicon) -> Vec<(usize, usize, Role)> {
    lex.marks(t)
        .into_iter()
        .filter(|m| match m.role {
            Role::Name => false,
            Role::Verb => true,
            Role::Phrase => only_tail(&t[m.end()..]),
        })
        .map(|m| (m.at, m.len, m.role))
        .collect()
}

/// Is `rest` nothing but [`PHRASE_TAILS`]?
fn only_tail(rest: &str) -> bool {
    let mut r = rest.trim();
    'strip: while !r.is_empty() {
        for tail in PHRASE_TAILS {
            if let Some(after) = r.strip_prefix(tail) {
                r = after.trim_start();
                continue 'strip;
            }
        }
        return false;
    }
    true
}

fn retracts(c: &Clause, lex: &Lexicon) -> bool {
    if contains_any(&c.text, RETRACTIONS) {
        return true;
    }
    verb_spans(&c.text, lex)
        .into_iter()
        .any(|(pos, _, _)| negated_before(&blank(&c.text[..pos], &lex.phrases)))
}

/// Judge one segment; `earlier` says whether other segments come before it in the text
/// (a precondition for 再: "吃完了｜再关闭做饭模式").
fn judge_segment(c: &Clause, earlier: bool, lex: &Lexicon) -> Verdict {
    let t = &c.text;
    let verbs = verb_spans(t, lex);
    if verbs.is_empty() {
        return Verdict::NoVerb;
    }
    let names: Vec<(usize, usize)> = lex
        .names
        .iter()
        .flat_map(|n| find_all(t, n).into_iter().map(move |p| (p, n.len())))
        .collect();
    // the name as a modifier: "做饭模式的按钮"
    if names
        .iter()
        .any(|&(p, l)| t[p + l..].trim_start().starts_with('的'))
    {
        return Verdict::Question;
    }
    if contains_any(t, HOW_ZH) || contains_any(t, HOW_EN) {
        return Verdict::HowQuestion;
    }
    let asked = asks(c);
    let mut verdict = Verdict::NoVerb;
    for &(pos, len, role) in &verbs {
        // a phrase of the lexicon before the verb is a command of its own, not a negation
        let before = blank(&t[..pos], &lex.phrases);
        let after = &t[pos + len..];
        let v = if deferred(&before) || deferred(after) {
            Verdict::Deferred
        } else if negated_before(&before) {
            Verdict::Negated
        } else if reported_before(&before) || contains_any(t, CONDITIONAL_ANYWHERE_ZH) {
            Verdict::Reported
        } else if asked.is_question(t, pos)
            || (role == Role::Verb && reports_state(t, pos, len, &names))
        {
            Verdict::Question
        } else if at_a_time_of_day(&before)
            || at_a_time_of_day(after)
            || after_something(&before, earlier, lex)
            || times_something_else(after, &lex.names)
        {
            Verdict::Deferred
        } else {
            Verdict::Command
        };
        if v == Verdict::Command {
            return v;
        }
        verdict = verdict.min(v);
    }
    verdict
}

/// A negation before the verb, in its segment (A-not-A forms are not negations).
pub(super) fn negated_before(before: &str) -> bool {
    let b = blank(before, A_NOT_A_REQUESTS);
    let b = blank(&b, A_NOT_A_QUESTIONS);
    contains_any(&b, NEGATIONS_ZH) || contains_any(&b, NEGATIONS_EN)
}

/// Someone's words or opinion, or a hypothesis, before the verb.
fn reported_before(before: &str) -> bool {
    let b = blank(before, REPORT_OPENERS_ZH);
    contains_any(&b, REPORTS_ZH)
        || contains_any(&b, REPORTS_EN)
        || contains_any(&b, CONDITIONALS_ZH)
        || contains_any(&b, CONDITIONALS_EN)
}

fn polite(t: &str) -> bool {
    contains_any(t, A_NOT_A_REQUESTS)
        || contains_any(t, REQUESTS_ZH)
        || REQUESTS_EN.iter().any(|r| t.starts_with(r))
}

/// How a segment asks, if it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asks {
    No,
    /// An interrogative, an A-not-A question or a past marker: a question whatever else.
    Surely,
    /// A final 吗/呢/？ or a perfective question (了吗): a question unless it is a
    /// polite request.
    Unless,
}

impl Asks {
    /// Is the segment `t`, with its verb at `pos`, a question? "可以结束做饭模式了吗" and
    /// "打开做饭模式好吗" ask for it politely (a request word before the verb, or a
    /// request form at the end); "做饭模式结束了吗" and "打开做饭模式家里人能看到吗" ask
    /// about it.
    fn is_question(self, t: &str, pos: usize) -> bool {
        match self {
            Asks::No => false,
            Asks::Surely => true,
            Asks::Unless => {
                !(polite(&t[..pos]) || POLITE_ENDINGS_ZH.iter().any(|e| t.ends_with(e)))
            }
        }
    }
}

fn asks(c: &Clause) -> Asks {
    let t = &c.text;
    let stripped = blank(t, A_NOT_A_REQUESTS);
    let interrogative = contains_any(&stripped, INTERROGATIVES_ZH)
        || contains_any(t, INTERROGATIVES_EN)
        || AUX_EN.iter().any(|a| {
            t.starts_with(&format!("{a} ")) && !REQUESTS_EN.iter().any(|r| t.starts_with(r))
        });
    if interrogative || a_not_a(&stripped) {
        return Asks::Surely;
    }
    if contains_any(t, PAST_MARKERS_ZH) || contains_any(t, PAST_MARKERS_EN) {
        return Asks::Surely; // about what happened, not a request
    }
    let perfective = contains_any(t, PERFECTIVE_QUESTIONS);
    let final_particle = QUESTION_FINALS_ZH.iter().any(|p| t.ends_with(p));
    if c.asked || final_particle || perfective {
        Asks::Unless
    } else {
        Asks::No
    }
}

/// An A-not-A question of any verb or adjective: 在不在, 贵不贵, 保存不保存, 关没关
/// (the polite requests 能不能, 可不可以 … are blanked out before).
fn a_not_a(t: &str) -> bool {
    let c: Vec<char> = t.chars().collect();
    (1..c.len().saturating_sub(1)).any(|i| {
        matches!(c[i], '不' | '没')
            && ((c[i - 1] == c[i + 1] && c[i - 1] != '_')
                || (i >= 2 && i + 2 < c.len() && c[i - 2..i] == c[i + 1..i + 3]))
    })
}

/// A perfective 了/过 right after the verb (and its tail: 关掉了), or after a name that
/// follows it, reports a state ("做饭模式结束了", "打开过做饭模式", "我把做饭模式关了") —
/// unless a request word before the verb asks for it ("做饭模式可以结束了", "给我把做饭
/// 模式开了"), or 了 ends a disposal said to homebot: 把 + the name + the verb, with
/// nothing before 把 ("把做饭模式关了"). A question ("…关了吗") is the question rule's.
fn reports_state(t: &str, pos: usize, len: usize, names: &[(usize, usize)]) -> bool {
    let aspect_at = |from: usize| {
        let s = t[from..].trim_start();
        let s = VERB_TAILS
            .iter()
            .find_map(|w| s.strip_prefix(w))
            .unwrap_or(s);
        s.trim_start()
            .chars()
            .next()
            .filter(|c| PERFECTIVE.contains(c))
    };
    let aspect = aspect_at(pos + len).or_else(|| {
        names
            .iter()
            .filter(|&&(p, _)| p >= pos + len)
            .find_map(|&(p, l)| aspect_at(p + l))
    });
    match aspect {
        None => false,
        Some('了') if disposal(t, pos, names) => false,
        Some(_) => !polite(&t[..pos]),
    }
}

/// 把 + a name before the verb at `pos`, with nothing before 把 but adverbs or requests
/// (赶紧, 给我 …) and nothing else between the name and the verb.
fn disposal(t: &str, pos: usize, names: &[(usize, usize)]) -> bool {
    let only_adverbs = |s: &str| {
        let mut s = s.trim();
        while let Some(r) = BOUND_BETWEEN.iter().find_map(|w| s.strip_prefix(w)) {
            s = r.trim_start();
        }
        s.is_empty()
    };
    names.iter().any(|&(p, l)| {
        t.get(p + l..pos).is_some_and(only_adverbs)
            && t[..p]
                .trim_end()
                .strip_suffix('把')
                .is_some_and(only_adverbs)
    })
}

/// A deferral word: for later, or not yet, or a time from now.
fn deferred(part: &str) -> bool {
    [LATER_ZH, NOT_YET_ZH, UNTIL_ZH, LATER_EN]
        .iter()
        .any(|words| contains_any(part, words))
        || from_now(part)
}

/// Does `part` name a time other than now (later, a time of day, a time from now)? A
/// clause beside a command that does leaves the command's time open ("打开做饭模式｜下午做
/// 蛋糕": now, or for the afternoon?).
pub fn names_a_time(part: &str) -> bool {
    deferred(part) || at_a_time_of_day(part)
}

/// A time of day (今晚, 晚上, 下午 …; tonight): a plan for then, not a command for now.
fn at_a_time_of_day(part: &str) -> bool {
    contains_any(part, TIME_OF_DAY_ZH) || contains_any(part, TIME_OF_DAY_EN)
}

/// 再 in `before` (the verb's segment up to the verb), with a precondition or a time
/// before it: in an `earlier` segment, or before 再 in this one once now-words, requests,
/// 把 and the names are taken out ("吃完饭再关…" defers; "再打开…", "现在再打开…",
/// "做饭模式再关一下" are "again").
fn after_something(before: &str, earlier: bool, lex: &Lexicon) -> bool {
    let Some(at) = before.rfind(AGAIN) else {
        return false;
    };
    let prior = blank(&blank(&before[..at], &lex.names), NOW_BEFORE_AGAIN);
    earlier || prior.chars().any(|c| !(c == '_' || c.is_whitespace()))
}

/// Is the verb, with `after` following it, the time of something else — its tail and
/// the name after it, then 前 / 后 / 之后 / 以后 / 时 … ("退出做饭模式前记得保存", "做饭
/// 模式关掉之后提醒我")?
fn times_something_else(after: &str, names: &[String]) -> bool {
    let mut r = after.trim_start();
    if let Some(rest) = VERB_TAILS.iter().find_map(|w| r.strip_prefix(w)) {
        r = rest.trim_start();
    }
    if let Some(rest) = names.iter().find_map(|n| r.strip_prefix(n.as_str())) {
        r = rest.trim_start();
    }
    TEMPORAL_CLAUSE_ZH.iter().any(|w| r.starts_with(w))
}

/// Does `part` hold a time from now anywhere (十分钟后, 过五分钟; in ten minutes)?
fn from_now(part: &str) -> bool {
    part.char_indices()
        .any(|(i, _)| from_now_at(&part[i..]).is_some())
        || from_now_en(part)
}

/// "in" / "after" / "within" and a unit of time at most three words on ("in ten
/// minutes", "in half an hour", "after 10 mins").
fn from_now_en(part: &str) -> bool {
    let words: Vec<&str> = part
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().enumerate().any(|(i, w)| {
        FROM_NOW_EN.contains(w)
            && words[i + 1..]
                .iter()
                .take(3)
                .any(|u| DURATION_UNITS_EN.contains(u))
    })
}

/// Is `next`, the segment right after a command, only a deferral of it ("等会儿",
/// "晚点再说", "晚上再说", "十分钟后", "先不要", "later", "tonight")? A not-yet word
/// counts whatever follows it; a time counts only with nothing after it but [`DEFERRAL_TAILS`] and the command's own
/// words ("明天再做" is a plan of its own, not a deferral).
fn defers(next: &Clause, lex: &Lexicon) -> bool {
    let t = next.text.as_str();
    if NOT_YET_ZH.iter().chain(UNTIL_ZH).any(|w| t.starts_with(w)) {
        return true;
    }
    let Some(rest) = LATER_ZH
        .iter()
        .chain(LATER_EN)
        .chain(TIME_OF_DAY_ZH)
        .chain(TIME_OF_DAY_EN)
        .find_map(|w| t.strip_prefix(w))
        .or_else(|| from_now_at(t).map(|n| &t[n..]))
    else {
        return false;
    };
    let own: Vec<&str> = DEFERRAL_TAILS
        .iter()
        .copied()
        .chain(lex.verbs.iter().map(String::as_str))
        .chain(lex.bound.iter().map(String::as_str))
        .chain(lex.names.iter().map(String::as_str))
        .collect();
    let mut r = rest.trim_start();
    'strip: while !r.is_empty() {
        for w in &own {
            if let Some(after) = r.strip_prefix(w) {
                r = after.trim_start();
                continue 'strip;
            }
        }
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negation_scope_skips_a_not_a_forms() {
        assert!(negated_before("不可以"));
        assert!(negated_before("我不想让你"));
        assert!(negated_before("you shouldn't "));
        assert!(!negated_before("能不能帮我"));
        assert!(!negated_before("please "));
        assert!(!negated_before("cannotx ")); // not a word of its own
    }

    #[test]
    fn reports_and_hypotheses_are_not_requests() {
        assert!(reported_before("他说"));
        assert!(reported_before("如果我"));
        assert!(reported_before("she told me to "));
        assert!(!reported_before("请问可以"));
        assert!(!reported_before("帮我"));
    }

    #[test]
    fn a_phrase_counts_only_with_nothing_but_a_tail_after_it() {
        assert!(only_tail("吧"));
        assert!(only_tail("一下就行了"));
        assert!(only_tail(""));
        assert!(!only_tail("红烧肉吧"));
    }
}
