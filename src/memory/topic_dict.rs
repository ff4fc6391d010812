//! The topic dictionary (`assets/topic_dict.txt`, see [`super::topic`]) read where it lies in the
//! binary, and a segmenter built per text from only the words that text contains.
//!
//! Building jieba's trie from all 87,023 entries cost a one-shot `homebot chat -m TEXT`
//! most of its own time (the first turn of every process pays it). jieba's choice of
//! words in a text depends only on the dictionary words that occur in it (their
//! frequencies) and on the dictionary's total frequency: so a [`Jieba`] holding just the
//! entries found in the text, plus one entry that cannot occur in it carrying the rest of
//! the total, segments that text exactly as the whole dictionary does (a test below
//! compares the two). The file is sorted by bytes, so an entry is found by binary search.

use jieba_rs::Jieba;
use std::collections::HashSet;

/// `word frequency` per line, sorted by the word's bytes, no word twice, words of one to
/// [`MAX_WORD_CHARS`] characters (tested below).
pub const DICTIONARY: &str = include_str!("../../assets/topic_dict.txt");
/// The sum of the dictionary's frequencies (tested below).
const TOTAL: usize = 55_145_287;
/// The longest word in the dictionary, in characters.
const MAX_WORD_CHARS: usize = 4;

/// The frequency of `word`, if the dictionary has it.
fn frequency(word: &str) -> Option<usize> {
    let b = DICTIONARY.as_bytes();
    // every line starting in lo..hi is still a candidate; lo is always a line start
    let (mut lo, mut hi) = (0, b.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let start = b[lo..mid]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(lo, |p| lo + p + 1);
        let end = b[start..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |p| start + p);
        let (w, f) = DICTIONARY[start..end].split_once(' ')?;
        match w.as_bytes().cmp(word.as_bytes()) {
            std::cmp::Ordering::Equal => return f.parse().ok(),
            std::cmp::Ordering::Less => lo = end + 1,
            std::cmp::Ordering::Greater => hi = start,
        }
    }
    None
}

/// A segmenter that cuts `text` (and any text inside it) as the whole dictionary would.
pub fn segmenter_for(text: &str) -> Jieba {
    let mut bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    bounds.push(text.len());
    let mut jieba = Jieba::empty();
    let mut seen = HashSet::new();
    let mut found = 0;
    for i in 0..bounds.len() - 1 {
        for j in i + 1..=(i + MAX_WORD_CHARS).min(bounds.len() - 1) {
            let w = &text[bounds[i]..bounds[j]];
            if !seen.insert(w) {
                continue;
            }
            if let Some(f) = frequency(w) {
                jieba.add_word(w, Some(f), None);
                found += f;
            }
        }
    }
    // the rest of the total, on a word the text does not contain (so it is never cut)
    let absent = ('\u{E000}'..='\u{F8FF}')
        .find(|c| !text.contains(*c))
        .expect("a text of at most a few thousand characters leaves a private-use character free");
    jieba.add_word(&absent.to_string(), Some(TOTAL - found), None);
    jieba
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_as_the_lookup_assumes() {
        let mut total = 0;
        let mut last = "";
        for line in DICTIONARY.lines() {
            let (w, f) = line.split_once(' ').expect("`word frequency`");
            assert!(w.as_bytes() > last.as_bytes(), "sorted, no repeats: {w}");
            assert!((1..=MAX_WORD_CHARS).contains(&w.chars().count()), "{w}");
            total += f.parse::<usize>().expect("a number");
            assert_eq!(frequency(w), f.parse().ok(), "{w}");
            last = w;
        }
        assert_eq!(total, TOTAL);
        assert_eq!(frequency("不在词典里的词"), None);
        assert_eq!(frequency(""), None);
    }

    /// The same words as the whole dictionary's segmenter, so the same topic features
    /// and the same memories recalled.
    #[test]
    fn cuts_as_the_whole_dictionary_does() {
        let whole = Jieba::with_dict(&mut DICTIONARY.as_bytes()).unwrap();
        let texts = [
            "我们今天晚饭做番茄炒蛋，你觉得怎么样？",
            "今晚晚饭做番茄炒蛋和紫菜蛋花汤",
            "冰箱里还有两个土豆和半颗白菜",
            "明天早上七点提醒我给孩子带午饭",
            "奶奶的降压药每天早上吃一片",
            "空调遥控器没电了，电池是几号的？",
            "下周三下午三点孩子开家长会",
            "今晚做饭用 air fryer 烤鸡翅",
            "Remind me to pick up the kids at five.",
            "生日蛋糕要提前一天订，记得写上祝福语：生日快乐！",
            "红烧肉少放盐，多放点糖色，小火炖一个半小时",
            "\u{E000}番茄\u{E001}炒蛋 123 abc",
            "",
        ];
        for t in texts {
            let a: Vec<&str> = whole.cut(t, true).into_iter().map(|x| x.word).collect();
            let b: Vec<String> = segmenter_for(t)
                .cut(t, true)
                .into_iter()
                .map(|x| x.word.to_string())
                .collect();
            assert_eq!(a, b, "{t}");
        }
        // every dictionary line in sequence, as one text
        let long: String = DICTIONARY
            .lines()
            .step_by(97)
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        let long: String = long.chars().take(2000).collect();
        let a: Vec<&str> = whole.cut(&long, true).into_iter().map(|x| x.word).collect();
        let b: Vec<String> = segmenter_for(&long)
            .cut(&long, true)
            .into_iter()
            .map(|x| x.word.to_string())
            .collect();
        assert_eq!(a, b);
    }
}
