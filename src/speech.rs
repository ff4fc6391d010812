//! Replies said aloud while the model still writes them: the sentence splitter, the
//! continue marker the voice rules ask for, and [`Answer`], which feeds one streamed
//! provider call to a turn's [`Partials`].
//!
//! The splitter cuts at 。！？!?；and newlines (with the closing quotes and brackets
//! after them), at an English full stop followed by a space or by nothing yet ("eggs. Are";
//! not "3.5": a point after a digit at the end of what has arrived waits for the next
//! character), at a comma once a piece has [`SOFT_CHARS`] characters, and anywhere at
//! [`HARD_CHARS`]. A cut at the end of what has arrived so far is made at once — the
//! next sentence may be seconds away. The continue marker (`[[继续]]`) is removed as
//! soon as it is whole, and a piece never ends inside something that may still become
//! one, so no part of it is ever said, however the deltas split it.

use crate::provider::DeltaSink;
use crate::turn::Partials;
use std::collections::VecDeque;
use std::sync::Mutex;

/// What the model writes after a question when it needs an answer (see the voice
/// rules); removed from everything said, and the reason the dialogue continues.
pub const CONTINUE_MARKERS: &[&str] = &["[[继续]]", "[[continue]]", "［［继续］］"];

/// A piece this long is cut at its next comma.
pub const SOFT_CHARS: usize = 60;
/// A piece this long is cut wherever it is (after the last space past [`SOFT_CHARS`]
/// if there is one): text without punctuation is still said, in bounded pieces.
pub const HARD_CHARS: usize = 120;

const ENDS: &[char] = &['。', '！', '？', '!', '?', '；', '\n'];
/// Belong to the sentence they follow.
const CLOSERS: &[char] = &[
    '”', '’', '"', '\'', '」', '』', '）', ')', '】', '》', '〉', '…',
];
const COMMAS: &[char] = &['，', '、', ',', ';'];

/// Where the first piece of `buf` ends (a byte offset), if it is complete: `at_end`
/// says nothing more will come. `buf` holds no whole marker (they are removed first).
pub fn next_cut(buf: &str, at_end: bool) -> Option<usize> {
    let mut chars = buf.char_indices().peekable();
    let mut n = 0usize;
    let mut last_space = None;
    let mut prev: Option<char> = None;
    while let Some((i, c)) = chars.next() {
        n += 1;
        let after = i + c.len_utf8();
        let next = chars.peek().map(|&(_, c)| c);
        let cut = if ENDS.contains(&c) {
            true
        } else if c == '.' {
            // an English sentence's end: a space follows, or nothing yet (said now: the
            // next sentence may be seconds away) — but a point after a digit may be a
            // number's ("3.5"), so that one waits for what follows
            match next {
                Some(d) => d.is_whitespace(),
                None => at_end || !prev.is_some_and(|p: char| p.is_ascii_digit()),
            }
        } else if COMMAS.contains(&c) && n >= SOFT_CHARS {
            match (c, next) {
                // "1,000" is one number; wait to see what follows an ASCII comma
                (',', None) => at_end,
                (',', Some(d)) => !d.is_ascii_digit(),
                _ => true,
            }
        } else {
            if c.is_whitespace() && n > SOFT_CHARS {
                last_space = Some(after);
            }
            if n >= HARD_CHARS {
                let at = last_space.unwrap_or(after);
                return Some(before_marker_prefix(buf, at)).filter(|&a| a > 0);
            }
            false
        };
        if cut {
            // the run of sentence ends and closing marks after it belongs to this piece
            let mut end = after;
            while let Some(&(j, d)) = chars.peek() {
                if !(ENDS.contains(&d) || CLOSERS.contains(&d)) {
                    break;
                }
                end = j + d.len_utf8();
                chars.next();
            }
            return Some(end);
        }
        prev = Some(c);
    }
    (at_end && !buf.is_empty()).then_some(buf.len())
}

/// `at`, moved back before a tail of `buf[..at]` that could begin a marker.
fn before_marker_prefix(buf: &str, at: usize) -> usize {
    let head = &buf[..at];
    CONTINUE_MARKERS
        .iter()
        .flat_map(|m| m.char_indices().skip(1).map(move |(k, _)| &m[..k]))
        .filter(|prefix| head.ends_with(prefix))
        .map(str::len)
        .max()
        .map_or(at, |k| at - k)
}

/// Remove every whole continue marker from `s`.
pub fn strip_markers(s: &mut String) {
    for m in CONTINUE_MARKERS {
        if s.contains(m) {
            *s = s.replace(m, "");
        }
    }
}

/// Text in, whole pieces out, as deltas arrive.
#[derive(Debug, Default)]
pub struct Splitter {
    buf: String,
}

impl Splitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a delta; the pieces it completed, in order.
    pub fn push(&mut self, delta: &str) -> Vec<String> {
        self.buf.push_str(delta);
        strip_markers(&mut self.buf);
        self.cut(false)
    }

    /// The stream ended: what is left, as the last pieces.
    pub fn finish(&mut self) -> Vec<String> {
        self.cut(true)
    }

    fn cut(&mut self, at_end: bool) -> Vec<String> {
        let mut pieces = Vec::new();
        let mut start = 0;
        while let Some(len) = next_cut(&self.buf[start..], at_end) {
            pieces.push(self.buf[start..start + len].to_string());
            start += len;
        }
        self.buf.drain(..start);
        pieces
    }
}

/// One provider call of a turn whose answer is said as it comes: complete pieces go to
/// the turn's [`Partials`] while no tool call has begun in the response. The tool loop
/// tells it how the call ended ([`Answer::ended`]): the last piece of a final answer is
/// sent then; what a response that called a tool had said is marked an aside.
///
/// A retried attempt starts over: pieces it says again are not sent twice; if it says
/// something else, what the failed attempt said becomes an aside.
pub struct Answer<'a> {
    sink: &'a Partials,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    split: Splitter,
    /// A tool call began: nothing more of this response is said.
    stopped: bool,
    /// Pieces this call offered to the sink, in order.
    offered: Vec<String>,
    /// Pieces a failed attempt offered that the retry has not said again yet.
    replay: VecDeque<String>,
}

impl<'a> Answer<'a> {
    pub fn new(sink: &'a Partials) -> Self {
        Self {
            sink,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .expect("no code panics while holding the answer's lock")
    }

    fn offer(&self, st: &mut State, piece: String) {
        if let Some(again) = st.replay.pop_front() {
            if again == piece {
                return; // said already, by the attempt that failed
            }
            st.replay.clear();
            st.offered.clear();
            self.sink.aside();
        }
        self.sink.say(&piece);
        st.offered.push(piece);
    }

    /// The call is over: `final_answer` when its response is the turn's answer (no tool
    /// calls), false when it called tools or failed.
    pub fn ended(&self, final_answer: bool) {
        let mut st = self.state();
        if final_answer && !st.stopped {
            for piece in st.split.finish() {
                self.offer(&mut st, piece);
            }
        } else {
            self.sink.aside();
        }
    }
}

impl DeltaSink for Answer<'_> {
    fn text(&self, piece: &str) {
        let mut st = self.state();
        if st.stopped {
            return;
        }
        for p in st.split.push(piece) {
            self.offer(&mut st, p);
        }
    }

    fn tool_call(&self) {
        self.state().stopped = true;
    }

    fn retry(&self) {
        let mut st = self.state();
        st.split = Splitter::new();
        st.stopped = false;
        st.replay = st.offered.iter().cloned().collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::Partial;

    fn split(deltas: &[&str]) -> Vec<String> {
        let mut s = Splitter::new();
        let mut out: Vec<String> = deltas.iter().flat_map(|d| s.push(d)).collect();
        out.extend(s.finish());
        out
    }

    #[test]
    fn english_sentences_are_cut_at_a_full_stop_and_a_space() {
        assert_eq!(
            split(&["Sure, three eggs.", " Are they beaten?"]),
            ["Sure, three eggs.", " Are they beaten?"]
        );
        // a point between digits, and one whose next character has not arrived yet
        let mut s = Splitter::new();
        assert!(s.push("It takes 3.").is_empty());
        assert!(s.push("5 minutes").is_empty());
        assert_eq!(
            s.push(". Then stir."),
            ["It takes 3.5 minutes.", " Then stir."],
            "a full stop at the end of what arrived is said at once"
        );
        assert!(s.finish().is_empty());
        assert_eq!(split(&["Wait... what?"]), ["Wait...", " what?"]);
    }

    #[test]
    fn sentences_are_cut_as_they_complete() {
        let long_clause = "这是一段很长很长的句子".repeat(6); // 66 characters
        let table: Vec<(Vec<&str>, Vec<String>)> = vec![
            (vec!["好的。"], vec!["好的。".into()]),
            (
                vec!["先打三个鸡蛋。", "再切两个番茄！", "好了吗？"],
                vec![
                    "先打三个鸡蛋。".into(),
                    "再切两个番茄！".into(),
                    "好了吗？".into(),
                ],
            ),
            // one delta holding several sentences; a delta ending mid-sentence
            (
                vec!["盐少放；糖多", "放一点。最后", "出锅"],
                vec!["盐少放；".into(), "糖多放一点。".into(), "最后出锅".into()],
            ),
            // the run of ends and closing quotes stays with its sentence
            (
                vec!["他说：“好了吗？！”然后走了。"],
                vec!["他说：“好了吗？！”".into(), "然后走了。".into()],
            ),
            (vec!["Ready? Go!"], vec!["Ready?".into(), " Go!".into()]),
            // newlines end pieces; markdown lines each one
            (
                vec!["第一步：\n- 打蛋\n- 切番茄"],
                vec!["第一步：\n".into(), "- 打蛋\n".into(), "- 切番茄".into()],
            ),
            // a comma cuts only past ~60 characters
            (vec!["番茄，鸡蛋，葱。"], vec!["番茄，鸡蛋，葱。".into()]),
            (
                vec![&long_clause, "，然后", "下锅。"],
                vec![format!("{long_clause}，"), "然后下锅。".into()],
            ),
            // "1,000" is one number even past the soft limit
            (
                vec![&long_clause, "1,", "000 克。"],
                vec![format!("{long_clause}1,000 克。")],
            ),
            // a decimal point is no sentence end
            (vec!["放 1.5 勺盐。"], vec!["放 1.5 勺盐。".into()]),
            // no text, no pieces
            (vec![], vec![]),
            (vec!["", ""], vec![]),
        ];
        for (deltas, want) in table {
            assert_eq!(split(&deltas), want, "{deltas:?}");
        }
    }

    #[test]
    fn the_continue_marker_is_never_part_of_a_piece() {
        let table: Vec<(Vec<&str>, Vec<&str>)> = vec![
            (vec!["蛋液打好了吗？[[继续]]"], vec!["蛋液打好了吗？"]),
            // split across deltas at every place
            (vec!["打好了吗？[", "[继续]]"], vec!["打好了吗？"]),
            (vec!["打好了吗？[[继", "续]]"], vec!["打好了吗？"]),
            (vec!["打好了吗？[[继续]", "]"], vec!["打好了吗？"]),
            (
                vec!["打好了吗？", "[", "[", "继", "续", "]", "]"],
                vec!["打好了吗？"],
            ),
            // inside a sentence, and the other spellings
            (vec!["好的[[继", "续]]，就这样。"], vec!["好的，就这样。"]),
            (vec!["Ready?[[continue]]"], vec!["Ready?"]),
            (vec!["好了吗？［［继续］］"], vec!["好了吗？"]),
            // a bracket that never becomes a marker is text
            (vec!["见[注意]一栏。"], vec!["见[注意]一栏。"]),
        ];
        for (deltas, want) in table {
            assert_eq!(split(&deltas), want, "{deltas:?}");
        }
    }

    #[test]
    fn text_without_punctuation_is_cut_at_the_hard_limit_never_inside_a_marker() {
        let words = "没有标点的话".repeat(30); // 180 characters
        let pieces = split(&[&words]);
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0].chars().count(), HARD_CHARS);
        assert_eq!(pieces.concat(), words);
        // the hard limit falls inside a marker that is still arriving
        let head = "字".repeat(HARD_CHARS - 2);
        let pieces = split(&[&head, "[[继", "续]]还有。"]);
        assert_eq!(pieces.concat(), format!("{head}还有。"));
        assert!(pieces.iter().all(|p| !p.contains('[')), "{pieces:?}");
        // after a space past the soft limit, when there is one
        let english = format!("{} tail words here", "word ".repeat(30));
        let pieces = split(&[&english]);
        assert!(pieces[0].ends_with(' '), "{pieces:?}");
        assert_eq!(pieces.concat(), english);
    }

    #[test]
    fn one_delta_of_many_sentences_gives_each_its_piece() {
        // (a splitter that copied the rest of the buffer at every cut would take hours)
        let big = "好。".repeat(300_000);
        let pieces = split(&[&big]);
        assert_eq!(pieces.len(), 300_000);
        assert!(pieces.iter().all(|p| p == "好。"));
    }

    fn received(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Partial>) -> Vec<Partial> {
        std::iter::from_fn(|| rx.try_recv().ok()).collect()
    }

    fn t(s: &str) -> Partial {
        Partial::Text(s.into())
    }

    #[test]
    fn only_the_final_answer_is_said_and_a_tool_round_is_an_aside() {
        let (p, mut rx) = Partials::new(4000);
        // a round that says a sentence, begins a tool call, then writes more
        let a = Answer::new(&p);
        a.text("我查一下。然后");
        a.tool_call();
        a.text("再说。");
        a.ended(false);
        // a round whose text ends in a tool call before any sentence is whole
        let a = Answer::new(&p);
        a.text("稍等");
        a.tool_call();
        a.ended(false);
        // the final answer; its last piece has no end mark
        let a = Answer::new(&p);
        a.text("菜谱上写着两个番茄。");
        a.text("大火炒两分钟");
        a.ended(true);
        assert_eq!(
            received(&mut rx),
            [
                t("我查一下。"),
                Partial::Aside,
                t("菜谱上写着两个番茄。"),
                t("大火炒两分钟")
            ]
        );
        assert_eq!(p.said(), "我查一下。菜谱上写着两个番茄。大火炒两分钟");
    }

    #[test]
    fn both_stream_dialects_tell_where_the_tool_call_begins() {
        use serde_json::json;
        // Anthropic: a text block, then a tool_use block whose start is the signal
        let (p, mut rx) = Partials::new(4000);
        let a = Answer::new(&p);
        let mut asm = crate::provider::anthropic_stream::StreamAssembler::default();
        for e in [
            json!({"type": "message_start", "message": {"model": "m", "content": [], "usage": {"input_tokens": 5}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "我查一下。然后"}}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "list_files", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "再说。"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ] {
            asm.push(&e.to_string(), Some(&a)).unwrap();
        }
        let r = asm.finish().unwrap();
        a.ended(r.tool_calls.is_empty());
        assert_eq!(received(&mut rx), [t("我查一下。"), Partial::Aside]);
        // OpenAI-compatible: content deltas, then a tool_calls delta
        let (p, mut rx) = Partials::new(4000);
        let a = Answer::new(&p);
        let mut asm = crate::provider::openai_stream::StreamAssembler::default();
        for c in [
            json!({"choices": [{"index": 0, "delta": {"content": "好的。稍"}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "list_files", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "等。"}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ] {
            asm.push(&c.to_string(), Some(&a)).unwrap();
        }
        let r = asm.finish().unwrap();
        a.ended(r.tool_calls.is_empty());
        assert_eq!(received(&mut rx), [t("好的。"), Partial::Aside]);
    }

    #[test]
    fn a_retried_attempt_says_nothing_twice() {
        // the retry says the same: its repeated sentence is skipped
        let (p, mut rx) = Partials::new(4000);
        let a = Answer::new(&p);
        a.text("第一句。第二");
        a.retry();
        a.text("第一句。第二句。");
        a.ended(true);
        assert_eq!(received(&mut rx), [t("第一句。"), t("第二句。")]);
        // the retry says something else: the first attempt's words become an aside
        let (p, mut rx) = Partials::new(4000);
        let a = Answer::new(&p);
        a.text("第一句。");
        a.retry();
        a.text("另一句。");
        a.ended(true);
        assert_eq!(
            received(&mut rx),
            [t("第一句。"), Partial::Aside, t("另一句。")]
        );
    }
}
