//! Content words of a turn (the `topic` features), for Chinese and English.
//!
//! Segmentation is `jieba-rs`, the Rust port of jieba: Chinese has no spaces, so words
//! need a dictionary-based segmenter, and jieba is the one Chinese users know — it splits
//! everyday household speech (番茄炒蛋 / 晚饭 / 几个人) well, it needs no model files or
//! network, and it passes Latin text through as words, so English needs no second tool.
//! Kept: words of two or more CJK characters, Latin words of three or more letters
//! (lower-cased), minus stop words; at most `max` distinct words per turn, first come
//! first kept, so a long message cannot flood a fingerprint.
//!
//! **The dictionary** is not jieba's full one (349,045 words; 33 MB of RSS once built,
//! 0.36 s to build) but `assets/topic_dict.txt`, derived from it: every single
//! character, and the words of two to four characters with a frequency of at least 6
//! that are not person, place, organisation or other proper names, nor idioms (tags
//! `nr ns nt nrt nrfg nz i`) — 87,023 entries, 0.95 MB, about 5 MB of RSS once built and
//! 50–90 ms to build (release). Made with
//!
//! ```text
//! perl -CSD -lane 'print "$F[0] $F[1]" if length($F[0]) == 1 || (length($F[0]) <= 4 &&
//!   $F[1] >= 6 && ($F[2] // "") !~ /^(nr|ns|nt|nrt|nrfg|nz|i)$/)' jieba-rs-0.11.0/src/data/dict.txt
//! ```
//!
//! The source is jieba's dictionary (github.com/fxsjy/jieba, MIT licence) as shipped by
//! jieba-rs 0.11 (MIT licence). A plain top-N by frequency was measured first and is
//! worse for a household: jieba's frequencies come from news text, so 番茄 ranks 33,051st
//! and dishes such as 炒蛋 or 蛋花汤 have the minimum frequency. On 217 household,
//! memory-test and cooking-skill lines, the topic words of this dictionary match the full
//! one's for 179 lines (94 % of the words); the rest mostly split a compound the full
//! dictionary keeps (生日蛋糕 → 生日 蛋糕). The household table in the tests below passes
//! with both.
//!
//! The segmenter holds only the dictionary's entries that the texts it has cut contain
//! ([`super::topic_dict`]): the same words as the whole dictionary, without building its
//! trie (which cost a one-shot `homebot chat -m TEXT` most of its own time).

use super::topic_dict::cut;
use std::collections::BTreeSet;

/// Only the start of a message is segmented: its topic is there, and the cost stays bounded.
const MAX_SEGMENTED_CHARS: usize = 2000;

/// Function words and fillers that say nothing about a situation.
const STOP_WORDS: &[&str] = &[
    // Chinese
    "我们",
    "你们",
    "他们",
    "她们",
    "它们",
    "咱们",
    "自己",
    "什么",
    "怎么",
    "怎么样",
    "为什么",
    "这个",
    "那个",
    "这些",
    "那些",
    "这样",
    "那样",
    "这里",
    "那里",
    "哪里",
    "一下",
    "一个",
    "一些",
    "可以",
    "能不能",
    "可不可以",
    "是不是",
    "有没有",
    "没有",
    "不是",
    "就是",
    "还是",
    "但是",
    "因为",
    "所以",
    "如果",
    "然后",
    "已经",
    "现在",
    "刚才",
    "的话",
    "时候",
    "知道",
    "觉得",
    "应该",
    "需要",
    "帮我",
    "请问",
    "谢谢",
    "好的",
    "一点",
    "多少",
    "上次",
    "之前",
    "以后",
    "今天",
    "明天",
    "昨天",
    "还有",
    "或者",
    "而且",
    "不过",
    "只是",
    "这么",
    "那么",
    // English
    "the",
    "and",
    "for",
    "are",
    "but",
    "not",
    "you",
    "your",
    "with",
    "this",
    "that",
    "have",
    "has",
    "had",
    "was",
    "were",
    "what",
    "when",
    "where",
    "which",
    "who",
    "why",
    "how",
    "can",
    "could",
    "would",
    "should",
    "will",
    "just",
    "about",
    "from",
    "into",
    "they",
    "them",
    "there",
    "their",
    "then",
    "than",
    "some",
    "any",
    "all",
    "our",
    "out",
    "please",
    "thanks",
    "does",
    "did",
    "its",
    "it's",
    "i'm",
    "let",
    "tell",
    "know",
    "want",
];

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}

/// Up to `max` distinct content words of `text`, in order of first appearance.
pub fn topic_words(text: &str, max: usize) -> Vec<String> {
    if max == 0 {
        return Vec::new();
    }
    let head: String = text.chars().take(MAX_SEGMENTED_CHARS).collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for tok in cut(&head) {
        let w = tok.word.trim().to_lowercase();
        let cjk = w.chars().filter(|c| is_cjk(*c)).count();
        let latin = w.chars().all(|c| c.is_ascii_alphabetic() || c == '\'');
        let keep = (cjk >= 2 && cjk == w.chars().count()) || (latin && w.len() >= 3);
        if !keep || STOP_WORDS.contains(&w.as_str()) || !seen.insert(w.clone()) {
            continue;
        }
        out.push(w);
        if out.len() >= max {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_and_english_content_words_without_stop_words() {
        let w = topic_words("我们今天晚饭做番茄炒蛋，你觉得怎么样？", 10);
        assert!(w.contains(&"晚饭".to_string()), "{w:?}");
        assert!(w.iter().any(|x| x.contains("番茄")), "{w:?}");
        assert!(
            !w.iter()
                .any(|x| x == "我们" || x == "怎么样" || x == "今天"),
            "{w:?}"
        );
        let e = topic_words(
            "What should we cook for Dinner tonight with the tomatoes?",
            10,
        );
        assert!(e.contains(&"dinner".to_string()), "{e:?}");
        assert!(e.contains(&"tomatoes".to_string()), "{e:?}");
        assert!(
            !e.contains(&"the".to_string()) && !e.contains(&"we".to_string()),
            "{e:?}"
        );
    }

    /// Household sentences and the content words their topic must keep (and, for a
    /// word the segmentation may split differently, a part of it that must appear).
    #[test]
    fn household_sentences_keep_their_content_words() {
        let table: &[(&str, &[&str])] = &[
            ("番茄炒蛋", &["番茄", "炒蛋"]),
            (
                "今晚晚饭做番茄炒蛋和紫菜蛋花汤",
                &["晚饭", "番茄", "炒蛋", "紫菜"],
            ),
            ("晚饭吃什么", &["晚饭"]),
            ("几个人吃饭？", &["几个", "吃饭"]),
            ("红烧肉少放盐", &["红烧肉", "*盐"]),
            ("冰箱里还有两个土豆和半颗白菜", &["冰箱", "土豆", "白菜"]),
            ("明天早上七点提醒我给孩子带午饭", &["提醒", "孩子", "午饭"]),
            ("奶奶的降压药每天早上吃一片", &["奶奶", "降压药"]),
            ("爸爸不吃香菜，做菜别放香菜", &["爸爸", "香菜"]),
            ("清蒸鲈鱼蒸几分钟？", &["清蒸", "鲈鱼"]),
            (
                "空调遥控器没电了，电池是几号的？",
                &["空调", "遥控器", "电池"],
            ),
            ("可乐鸡翅需要腌多久？", &["可乐", "鸡翅"]),
            ("家里的路由器密码是多少？", &["路由器", "密码"]),
            ("下周三下午三点孩子开家长会", &["孩子", "家长会"]),
            ("以后在群里回消息简短点", &["群里", "简短"]),
            ("记住：我们家做饭按三个人的量", &["做饭"]),
            ("今晚做饭用 air fryer 烤鸡翅", &["做饭", "air", "fryer"]),
            (
                "Remind me to pick up the kids at five.",
                &["remind", "kids"],
            ),
        ];
        for (text, want) in table {
            let got = topic_words(text, 8);
            for w in *want {
                let ok = match w.strip_prefix('*') {
                    Some(tail) => got.iter().any(|g| g.ends_with(tail)),
                    None => got.iter().any(|g| g == w),
                };
                assert!(ok, "{text}: {w} not in {got:?}");
            }
            for g in &got {
                assert!(!STOP_WORDS.contains(&g.as_str()), "{text}: {got:?}");
            }
        }
    }

    #[test]
    fn the_number_of_words_is_bounded() {
        let long = "番茄 土豆 茄子 黄瓜 白菜 萝卜 豆腐 鸡蛋 牛肉 猪肉 ".repeat(500);
        assert_eq!(topic_words(&long, 4).len(), 4);
        assert_eq!(topic_words(&long, 0).len(), 0);
        // repeated words count once
        assert_eq!(topic_words("番茄 番茄 番茄", 4), vec!["番茄".to_string()]);
    }
}
