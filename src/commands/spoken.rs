//! Commands said in words: "你为什么这么说" is `/why` when the whole message is that
//! question about the last answer, and nothing else. The words are cleaned as the
//! spoken switch cleans them (the ways of addressing homebot and fillers out, lower
//! case); a message that says more ("你为什么这么说，糖不是最后放吗"), asks about
//! someone else ("他为什么这么说") or about a thing ("为什么红烧肉要炒糖色") goes to the
//! model as any message does.

use crate::modes::switch::clause::clean;
use crate::turn::Command;

/// The command `text` says in words, if it says one.
pub fn command_in(text: &str) -> Option<Command> {
    asks_why(text).then_some(Command::Why)
}

const WHO: &[&str] = &["你", "您"];
const WHEN: &[&str] = &["刚才", "刚刚", "之前", "上次", "方才"];
const WHY: &[&str] = &["为什么", "为啥", "凭什么", "怎么会", "怎么", "干嘛", "干吗"];
const AUX: &[&str] = &["会", "要"];
const SO: &[&str] = &["这么", "这样", "那么", "那样"];
const SAY: &[&str] = &["回答", "建议", "推荐", "说", "答", "讲", "回"];
const TO_ME: &[&str] = &["我"];
const GROUNDS: &[&str] = &["依据", "根据", "理由", "原因"];
const IS_WHAT: &[&str] = &["是什么", "是啥", "在哪", "在哪里"];
const ANSWER: &[&str] = &["回答", "答案"];
const TAIL: &[char] = &[
    '呢', '啊', '呀', '哪', '嘛', '哦', '？', '?', '。', '.', '！', '!', '~', '～', ' ',
];
/// What is left at the start when an address is taken out ("homebot，…").
const LEAD: &[char] = &['，', ',', '、', ':', '：'];
const EN: &[&str] = &[
    "why did you say that",
    "why did you say so",
    "why do you say that",
    "why do you say so",
    "why would you say that",
    "why did you answer that",
    "why did you answer like that",
    "why did you answer that way",
    "why that answer",
    "why this answer",
    "why did you say this",
    "what was that answer based on",
];

/// The whole message asks why the last answer was what it was.
pub fn asks_why(text: &str) -> bool {
    if text.chars().count() > 40 {
        return false;
    }
    let t = clean(text);
    let t = t
        .trim_matches(|c| TAIL.contains(&c) || LEAD.contains(&c))
        .trim();
    if EN.contains(&t) {
        return true;
    }
    let t: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    why_so_said(&t) || grounds_of_it(&t)
}

/// 你（刚才）为什么（会）这么说（我）: the parts in this order, each of the optional
/// ones at most once; the subject may also come after the question word (为什么你这么说).
fn why_so_said(t: &str) -> bool {
    let mut r = t;
    r = opt(r, WHEN);
    r = opt(r, WHO);
    r = opt(r, WHEN);
    let Some(after) = one(r, WHY) else {
        return false;
    };
    r = opt(after, WHO);
    r = opt(r, WHEN);
    r = opt(r, AUX);
    let Some(after) = one(r, SO) else {
        return false;
    };
    let Some(after) = one(after, SAY) else {
        return false;
    };
    opt(after, TO_ME).is_empty()
}

/// 你这么说的依据是什么 / （这个）回答的理由是什么.
fn grounds_of_it(t: &str) -> bool {
    let r = opt(t, WHO);
    let r = match one(r, SO).and_then(|a| one(a, SAY)) {
        Some(a) => a,
        None => match one(r, ANSWER) {
            Some(a) => a,
            None => return false,
        },
    };
    let r = r.strip_prefix('的').unwrap_or(r);
    one(r, GROUNDS).and_then(|a| one(a, IS_WHAT)) == Some("")
}

fn one<'a>(t: &'a str, words: &[&str]) -> Option<&'a str> {
    words.iter().find_map(|w| t.strip_prefix(w))
}

fn opt<'a>(t: &'a str, words: &[&str]) -> &'a str {
    one(t, words).unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_about_the_last_answer() {
        for t in [
            "你为什么这么说",
            "你为什么这么说？",
            "为什么这么说呢",
            "你刚才为什么这样回答",
            "为什么你会这么说啊",
            "homebot，你为啥这么讲",
            "嗯，你怎么会这么说",
            "你凭什么这么说",
            "为什么这样回答我",
            "你这么说的依据是什么",
            "回答的理由是啥",
            "这个回答的依据是什么？",
            "Why did you say that?",
            "homebot why did you answer like that",
        ] {
            assert!(asks_why(t), "{t}");
        }
    }

    #[test]
    fn anything_more_or_else_is_a_message() {
        for t in [
            "为什么",
            "why?",
            "为什么红烧肉要炒糖色",
            "你为什么这么说，糖不是最后放吗",
            "他为什么这么说",
            "我为什么这么说",
            "你为什么这么说红烧肉",
            "你这么说",
            "不要问为什么这么说",
            "为什么这么做",
            "why did you say that the oven was on",
            "你为什么这么说你为什么这么说你为什么这么说你为什么这么说你为什么这么说",
        ] {
            assert!(!asks_why(t), "{t}");
        }
    }
}
