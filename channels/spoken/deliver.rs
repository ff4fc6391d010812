//! A spoken turn's answer delivered as it comes (`provider.stream = true`): while the
//! model writes it, each whole sentence (or a few) goes out as a `partial` frame, shaped
//! for speech like the reply; then the `reply` frame carries the whole text and
//! `dialogue_state`, plus `rest`: what of that text the partial frames did not carry
//! (usually nothing; the whole text when the turn ended otherwise than the partials said,
//! e.g. an error after the first sentence). Messages held for the front end (a reminder
//! waiting for this satellite) are said first, as a partial of their own, as they lead
//! the reply's text. A native satellite (`channels::voice`) and Home Assistant's agent
//! (`channels::home_assistant::agent`) deliver their turns through it.
//!
//! Each piece after the first carries its own separator ([`joiner`]): a space before an
//! English sentence that follows another, nothing between Chinese ones — so a front end
//! joins the partials and `rest` as they come, unchanged, in either language.
//!
//! A cancelled turn (a `stop`, a barge-in, the caller gone) sends no partial frame any
//! more, and its reply frame says `cancelled`.

use super::frames::{ReplyFrame, SpokenOut};
use super::held::Taken;
use super::reply::{compose, shape_reply};
use super::Spoken;
use crate::kernel::PendingReply;
use crate::turn::Partial;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What a satellite was told of a reply before its reply frame.
#[derive(Default)]
struct Told {
    /// A partial frame was sent.
    started: bool,
    /// The held messages said before the first partial (they lead the reply's text).
    held: Taken,
    /// What was said that the reply's text begins with: the held messages, then the
    /// answer's partials since the last aside.
    heard: Vec<String>,
    /// How many of `heard` are held messages.
    held_count: usize,
}
impl Spoken {
    /// Send a spoken turn's partial frames to `out` as they come, then its reply frame;
    /// what was held for `front` is said first (and counts as said once handed to `out`).
    pub async fn deliver(
        &self,
        pending: PendingReply,
        partials: Option<mpsc::UnboundedReceiver<Partial>>,
        cancel: CancellationToken,
        front: &str,
        session: &str,
        out: &mpsc::Sender<String>,
    ) {
        let mut told = Told::default();
        let reply = match partials {
            None => pending.reply().await,
            Some(mut rx) => {
                let reply = pending.reply();
                tokio::pin!(reply);
                loop {
                    tokio::select! {
                        biased;
                        r = &mut reply => {
                            // everything the turn sent came before its reply
                            while let Ok(p) = rx.try_recv() {
                                self.partial(p, &mut told, &cancel, front, session, out).await;
                            }
                            break r;
                        }
                        Some(p) = rx.recv() => {
                            self.partial(p, &mut told, &cancel, front, session, out).await;
                        }
                    }
                }
            }
        };
        let cancelled = reply.outcome == crate::turn::Outcome::Cancelled;
        let held = if told.started {
            std::mem::take(&mut told.held)
        } else {
            self.take_held(front).await
        };
        let mut r = compose(&reply, held);
        // after partial frames, `rest`: what of the text they did not carry
        let rest = told.started.then(|| {
            if cancel.is_cancelled() {
                String::new() // the satellite asked for silence
            } else {
                let rest = unsaid(&r.text, &told.heard);
                let before = told.heard.last().map_or("", String::as_str);
                format!("{}{rest}", joiner(before, rest))
            }
        });
        let frame = SpokenOut::Reply(ReplyFrame {
            session_id: session.to_string(),
            text: std::mem::take(&mut r.text),
            dialogue_state: r.state,
            error: r.failed,
            cancelled,
            rest,
        });
        if out.send(frame.encode()).await.is_ok() {
            // handed to the satellite's writer (when they led a partial, said already)
            r.held.said();
        }
    }

    async fn partial(
        &self,
        p: Partial,
        told: &mut Told,
        cancel: &CancellationToken,
        front: &str,
        session: &str,
        out: &mpsc::Sender<String>,
    ) {
        if cancel.is_cancelled() {
            return;
        }
        let text = match p {
            Partial::Aside => {
                told.heard.truncate(told.held_count);
                return;
            }
            Partial::Text(t) => shape_reply(&t).0,
        };
        if text.is_empty() {
            return;
        }
        let frame = |text: String| SpokenOut::Partial {
            session_id: session.to_string(),
            text,
        };
        if !told.started {
            told.started = true;
            told.held = self.take_held(front).await;
            if !told.held.is_empty() {
                let held = told.held.joined();
                if out.send(frame(held.clone()).encode()).await.is_ok() {
                    told.held.said();
                }
                told.heard.push(held);
                told.held_count = 1;
            }
        }
        let before = told.heard.last().map_or("", String::as_str);
        let sep = joiner(before, &text);
        let _ = out.send(frame(format!("{sep}{text}")).encode()).await;
        told.heard.push(text);
    }
}

/// What goes between two pieces said one after the other: a space between two pieces of
/// a spaced script (English: "three eggs." + "Are they beaten?"), nothing where either
/// side is Chinese (or another unspaced script, or full-width punctuation), nothing
/// before the first piece or where a side already has a space.
pub fn joiner(before: &str, next: &str) -> &'static str {
    let (Some(a), Some(b)) = (before.chars().next_back(), next.chars().next()) else {
        return "";
    };
    // CJK radicals onward: CJK, kana, Hangul, full-width forms and punctuation
    let unspaced = |c: char| c >= '\u{2E80}';
    if a.is_whitespace() || b.is_whitespace() || unspaced(a) || unspaced(b) {
        ""
    } else {
        " "
    }
}

/// Closing punctuation and spaces: said with the sentence before them.
fn trailing(c: char) -> bool {
    c.is_whitespace() || "。.！？!?；;，,、：:…”’」』）)】》〉\"'".contains(c)
}

/// What of `text` is left to say once the texts in `heard` were said, in order:
/// compared by letters and digits only (shaping a sentence alone may space or mark it
/// differently than the whole). `text` whole when `heard` is not its beginning.
pub fn unsaid<'a>(text: &'a str, heard: &[String]) -> &'a str {
    let mut want = heard
        .iter()
        .flat_map(|h| h.chars())
        .filter(|c| c.is_alphanumeric())
        .peekable();
    if want.peek().is_none() {
        return text;
    }
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if want.peek().is_none() {
            break;
        }
        if !c.is_alphanumeric() {
            continue;
        }
        if want.next() != Some(c) {
            return text;
        }
        end = i + c.len_utf8();
    }
    if want.peek().is_some() {
        return text; // more was said than the reply holds
    }
    text[end..].trim_start_matches(trailing).trim_end()
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_joined_as_their_script_wants() {
        assert_eq!(joiner("", "Sure."), "");
        assert_eq!(joiner("Sure, three eggs.", "Are they beaten?"), " ");
        assert_eq!(joiner("先打蛋。", "再切番茄。"), "");
        assert_eq!(joiner("OK.", "先打蛋。"), "");
        assert_eq!(joiner("先打蛋。", "OK."), "");
        assert_eq!(joiner("Done ", "next"), "");
        let pieces = ["Sure, three eggs.", "Are they beaten?"];
        let mut said = String::new();
        for p in pieces {
            said.push_str(joiner(&said, p));
            said.push_str(p);
        }
        assert_eq!(said, "Sure, three eggs. Are they beaten?");
    }

    #[test]
    fn what_is_left_after_the_partials() {
        let h = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let table: &[(&str, &[&str], &str)] = &[
            // all said
            ("先打蛋。再切番茄。", &["先打蛋。", "再切番茄。"], ""),
            // the last sentence came with the reply only
            ("先打蛋。再切番茄", &["先打蛋。"], "再切番茄"),
            // spaces and marks differ between the pieces and the whole
            (
                "第一步： · 打蛋 · 切番茄",
                &["第一步：", "· 打蛋", "· 切番茄"],
                "",
            ),
            ("Ready? Go now.", &["Ready?"], "Go now."),
            ("Sure. Three eggs.", &["Sure."], "Three eggs."),
            // a closing quote said with its sentence or not: either way not again
            ("他说：“好。”然后走了。", &["他说：“好。"], "然后走了。"),
            // an opening mark of the rest stays
            ("好的。（小心烫）", &["好的。"], "（小心烫）"),
            // the reply is not what was said (an error after the first sentence)
            (
                "抱歉，模型服务出错了。",
                &["先打蛋。"],
                "抱歉，模型服务出错了。",
            ),
            // more was said than the reply holds
            ("先打蛋。", &["先打蛋。", "再切番茄。"], "先打蛋。"),
            // nothing was said
            ("先打蛋。", &[], "先打蛋。"),
            // a held reminder first, then the answer
            ("提醒：关火 先打蛋。", &["提醒：关火", "先打蛋。"], ""),
        ];
        for (text, heard, rest) in table {
            assert_eq!(unsaid(text, &h(heard)), *rest, "{text} / {heard:?}");
        }
    }
}
