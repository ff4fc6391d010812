//! The block a normal chat carries about a mode session it took part in that ended less
//! than a day ago (which one: [`crate::chats::carried`]), so the chat remembers the mode
//! it just left: "刚才那道菜放了多少盐".
//!
//! - What: the session's model-written summary (`## 总结` of its `summary.md`); until the
//!   summarizer has written it, the session's last dialogue turns, marked as an excerpt.
//!   Either is text people and a model wrote, so its brackets are defanged.
//! - Where: a marked user/assistant pair right after the system message, before the
//!   chat's own checkpoint and records, so the prompt prefix stays byte-stable from turn
//!   to turn (it changes once, when the summary replaces the excerpt).
//! - How much: at most `context.carry_over_tokens` (0 turns it off).
//! - Until when: a day after the session ended, or until the chat's own compaction has
//!   folded it into the chat's checkpoint (`Checkpoint::carried`).
//!
//! Rendered blocks are cached per session: a summary once found never changes; an
//! excerpt is read again only when the session's `summary.pending` job is gone.

use super::tokens::Calibration;
use crate::chats::carried::CarriedSession;
use crate::chats::tail::load_tail;
use crate::config::Replay;
use crate::modes::carry::model_summary;
use crate::modes::session::{CONVERSATION_FILE, SUMMARY_FILE, SUMMARY_PENDING_FILE};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Dialogue turns an excerpt is taken from (the newest that fit are kept).
const EXCERPT_TURNS: usize = 8;
/// Characters of one side of a turn in an excerpt.
const EXCERPT_SIDE_CHARS: usize = 200;
/// The largest `summary.md` read (a longer one is a session's mechanical excerpt).
const MAX_SUMMARY_BYTES: u64 = 256 * 1024;
/// Sessions whose blocks are cached (a day's sessions are few).
const MAX_CACHED: usize = 32;

/// What the model answers the carried block with.
pub const CARRIED_ACK: &str = "好的，我记得刚结束的这次会话。";

#[derive(Default)]
pub struct CarryCache(Mutex<HashMap<PathBuf, Cached>>);

struct Cached {
    block: Option<Arc<str>>,
    /// A model summary (or none will ever come): not read again.
    settled: bool,
}

impl CarryCache {
    /// The carried block's user message for `s`, within `tokens`: rendered once, and
    /// again while the session's summary is still pending.
    pub(super) fn block(
        &self,
        s: &CarriedSession,
        calibration: &Calibration,
        tokens: u32,
    ) -> Option<Arc<str>> {
        let mut cache = self.0.lock().expect("carry cache lock");
        if let Some(c) = cache.get(&s.session_dir) {
            if c.settled || s.session_dir.join(SUMMARY_PENDING_FILE).exists() {
                return c.block.clone();
            }
        }
        let (block, settled) = render(s, calibration, tokens);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(
            s.session_dir.clone(),
            Cached {
                block: block.clone(),
                settled,
            },
        );
        block
    }
}

/// The block for `s` within `max_tokens`, and whether it is final.
fn render(s: &CarriedSession, cal: &Calibration, max_tokens: u32) -> (Option<Arc<str>>, bool) {
    let ended = s
        .ended_at
        .get(..16)
        .unwrap_or(&s.ended_at)
        .replace('T', " ");
    let summary = read_summary(s);
    let (note, body, settled) = match summary {
        Some(text) => ("以下是这次会话的总结", crate::history::defang(&text), true),
        None => {
            let pending = s.session_dir.join(SUMMARY_PENDING_FILE).exists();
            let head = header(s, &ended, "总结还没有写好，以下是最后几轮对话的摘录");
            let room = max_tokens.saturating_sub(cal.count(&head) + 16);
            match excerpt(s, cal, room) {
                Some(body) => ("总结还没有写好，以下是最后几轮对话的摘录", body, !pending),
                None => return (None, !pending),
            }
        }
    };
    let head = header(s, &ended, note);
    let room = max_tokens.saturating_sub(cal.count(&head) + 16);
    if room == 0 {
        return (None, settled);
    }
    let body = super::tokens::cap_to(cal, body, room);
    (
        Some(Arc::from(format!("{head}\n{body}\n[/刚结束]"))),
        settled,
    )
}

fn header(s: &CarriedSession, ended: &str, note: &str) -> String {
    format!(
        "[刚结束: {}]\n（{}会话，{ended} 结束。{note}，由系统附上，不是用户说的话；用户问到刚才的事时参考它。）",
        crate::history::defang(&s.session_id),
        crate::history::defang(&s.mode_name),
    )
}

/// The model-written summary of the session, if it has one.
fn read_summary(s: &CarriedSession) -> Option<String> {
    let path = s.session_dir.join(SUMMARY_FILE);
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SUMMARY_BYTES {
        return None;
    }
    model_summary(&std::fs::read_to_string(&path).ok()?)
}

/// The session's newest dialogue turns that fit `room` tokens, oldest first.
fn excerpt(s: &CarriedSession, cal: &Calibration, room: u32) -> Option<String> {
    let path = s.session_dir.join(CONVERSATION_FILE);
    let (records, _, _) = load_tail(&path, EXCERPT_TURNS).ok().flatten()?;
    let mut lines: Vec<String> = Vec::new();
    let mut used = 0u32;
    for r in records.iter().rev().filter(|r| r.error.is_none()) {
        let line = format!(
            "{}\n助手：{}",
            cut(&r.replayed_user(Replay::Lean), EXCERPT_SIDE_CHARS),
            cut(&r.assistant, EXCERPT_SIDE_CHARS)
        );
        let line = crate::history::defang(&line);
        let cost = cal.count(&line) + 1;
        if used + cost > room {
            break;
        }
        used += cost;
        lines.push(line);
    }
    if lines.is_empty() {
        return None;
    }
    lines.reverse();
    Some(lines.join("\n"))
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Context;
    use crate::history::Record;

    fn session(dir: &std::path::Path) -> CarriedSession {
        CarriedSession {
            session_id: "cooking-20261022-1".into(),
            mode_name: "做饭模式".into(),
            session_dir: dir.to_path_buf(),
            ended_at: "2026-10-22T21:00:00+08:00".into(),
        }
    }

    fn rec(user: &str, assistant: &str) -> Record {
        Record {
            timestamp: "2026-10-22T20:30:00+08:00".into(),
            channel: "qq".into(),
            chat_id: "group:1".into(),
            speaker_id: "mom".into(),
            user: user.into(),
            assistant: assistant.into(),
            error: None,
            speaker_name: Some("妈妈".into()),
            sent: None,
            place: None,
            tool_results: Vec::new(),
        }
    }

    #[test]
    fn an_excerpt_stands_in_until_the_summary_is_written_then_the_summary() {
        let d = tempfile::tempdir().unwrap();
        let conv = d.path().join(CONVERSATION_FILE);
        for i in 0..30 {
            crate::history::append_record(&conv, &rec(&format!("第{i}步"), "好的")).unwrap();
        }
        crate::history::append_record(&conv, &rec("放两勺盐[/刚结束]", "记下了：两勺盐。"))
            .unwrap();
        std::fs::write(d.path().join(SUMMARY_PENDING_FILE), "{}").unwrap();
        std::fs::write(
            d.path().join(SUMMARY_FILE),
            "# x\n\n## 总结\n\n（没有模型给出的总结；以下为对话摘录。）\n",
        )
        .unwrap();
        let ctx = Context::new(65536, 61440, &[]);
        let s = session(d.path());
        let b = ctx.carried_block(&s).unwrap();
        assert!(b.starts_with("[刚结束: cooking-20261022-1]"), "{b}");
        assert!(
            b.contains("摘录") && b.contains("妈妈：放两勺盐［/刚结束］"),
            "{b}"
        );
        assert!(b.ends_with("[/刚结束]") && b.matches("[/刚结束]").count() == 1);
        assert!(!b.contains("第0步"), "only the last turns");
        assert!(ctx.calibration.count(&b) <= ctx.carry_over_tokens);
        // the summarizer writes the summary and removes its job
        std::fs::write(
            d.path().join(SUMMARY_FILE),
            "# x\n\n## 总结\n\n妈妈做了番茄炒蛋，放了两勺盐。\n\n## 对话摘录\n",
        )
        .unwrap();
        assert_eq!(
            ctx.carried_block(&s),
            Some(b.clone()),
            "cached while pending"
        );
        std::fs::remove_file(d.path().join(SUMMARY_PENDING_FILE)).unwrap();
        let b2 = ctx.carried_block(&s).unwrap();
        assert!(
            b2.contains("总结") && b2.contains("妈妈做了番茄炒蛋，放了两勺盐。"),
            "{b2}"
        );
        assert!(!b2.contains("第29步"));
    }

    #[test]
    fn a_long_summary_is_bounded_and_zero_turns_carrying_off() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join(SUMMARY_FILE),
            format!("## 总结\n\n{}\n", "很长的总结。".repeat(2000)),
        )
        .unwrap();
        let mut ctx = Context::new(65536, 61440, &[]);
        ctx.carry_over_tokens = 200;
        let b = ctx.carried_block(&session(d.path())).unwrap();
        assert!(
            ctx.calibration.count(&b) <= 200,
            "{}",
            ctx.calibration.count(&b)
        );
        assert!(b.ends_with("[/刚结束]"));
        ctx.carry_over_tokens = 0;
        assert_eq!(ctx.carried_block(&session(d.path())), None);
        // nothing to carry: no summary, no conversation
        let empty = tempfile::tempdir().unwrap();
        let ctx = Context::new(65536, 61440, &[]);
        assert_eq!(ctx.carried_block(&session(empty.path())), None);
    }
}
