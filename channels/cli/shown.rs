//! What a terminal shows of a turn's answer: with a streaming provider, the partials as
//! they come (the model's text as it is, lines and all), then only what of the reply
//! they did not carry — the spoken kit's `unsaid`, as a satellite says it — or, when the
//! reply is not what they began (an error after the first sentence, a spec that did not
//! parse), the whole reply on a line of its own. Without partials, the reply.

use crate::channels::spoken::deliver::joiner;
use crate::channels::spoken::unsaid;
use crate::turn::Partial;
use std::io::Write;

/// One answer as the terminal prints it.
pub struct Shown<W: Write> {
    out: W,
    /// Printed before the answer (`homebot> ` in the interactive chat).
    prefix: &'static str,
    started: bool,
    /// The texts printed since the last aside: what the reply is expected to begin with.
    heard: Vec<String>,
}

impl<W: Write> Shown<W> {
    pub fn new(out: W, prefix: &'static str) -> Self {
        Self {
            out,
            prefix,
            started: false,
            heard: Vec::new(),
        }
    }

    /// A partial: printed now.
    pub fn partial(&mut self, p: Partial) {
        match p {
            Partial::Aside => self.heard.clear(),
            Partial::Text(t) => {
                if !self.started {
                    self.started = true;
                    let _ = self.out.write_all(self.prefix.as_bytes());
                }
                let _ = self.out.write_all(t.as_bytes());
                let _ = self.out.flush();
                self.heard.push(t);
            }
        }
    }

    /// The reply's text: what of it is still to print, then `end`.
    pub fn reply(&mut self, text: &str, end: &str) {
        if !self.started && text.is_empty() {
            return; // nothing to show
        }
        let shown = if !self.started {
            format!("{}{text}", self.prefix)
        } else {
            let rest = unsaid(text, &self.heard);
            let whole = self.heard.is_empty() || std::ptr::eq(rest, text);
            if whole {
                format!("\n{text}")
            } else {
                let last = self.heard.last().map_or("", String::as_str);
                format!("{}{rest}", joiner(last, rest))
            }
        };
        let _ = write!(self.out, "{shown}{end}");
        let _ = self.out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(parts: &[Partial], reply: &str) -> String {
        let mut out = Vec::new();
        let mut s = Shown::new(&mut out, "homebot> ");
        for p in parts {
            s.partial(p.clone());
        }
        s.reply(reply, "\n");
        String::from_utf8(out).unwrap()
    }

    fn t(s: &str) -> Partial {
        Partial::Text(s.into())
    }

    #[test]
    fn the_reply_adds_only_what_the_partials_did_not_show() {
        // no partials: the reply
        assert_eq!(shown(&[], "好的。"), "homebot> 好的。\n");
        // all shown
        assert_eq!(
            shown(&[t("先打蛋。"), t("再切番茄。")], "先打蛋。再切番茄。"),
            "homebot> 先打蛋。再切番茄。\n"
        );
        // a spec's lines, then the card's end
        assert_eq!(
            shown(
                &[t("需求规格：年夜饭\n"), t("需求：\n"), t("- 荤素\n")],
                "需求规格：年夜饭\n需求：\n- 荤素\n将依次完成：\n1. 荤素\n（回复“确认”开始执行）"
            ),
            "homebot> 需求规格：年夜饭\n需求：\n- 荤素\n将依次完成：\n1. 荤素\n（回复“确认”开始执行）\n"
        );
        // English pieces keep their spaces
        assert_eq!(
            shown(&[t("Sure.")], "Sure. Three eggs."),
            "homebot> Sure. Three eggs.\n"
        );
        // the reply is not what was shown: it follows on a line of its own
        assert_eq!(
            shown(
                &[t("需求规格：年夜饭\n"), Partial::Aside],
                "抱歉，没能解析。"
            ),
            "homebot> 需求规格：年夜饭\n\n抱歉，没能解析。\n"
        );
        assert_eq!(
            shown(&[t("先打蛋。")], "抱歉，出错了。"),
            "homebot> 先打蛋。\n抱歉，出错了。\n"
        );
    }
}
