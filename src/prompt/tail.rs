//! The current user message: the time, the speaker tag and the words, then a short
//! `[上下文]` block (the date, the channel and chat, the speaker, the room, whether it is
//! spoken) and the blocks sent to stay (knowledge snippets, the speaker's profile) — the
//! message later requests replay byte for byte under exact replay. What must not outlive
//! the turn (recalled memories, a strategy's blocks, a channel's hint) is a second
//! message after it, the *aside*, never replayed.

use crate::modes::TurnTicket;
use chrono::{DateTime, Datelike, FixedOffset};
use std::path::Path;

/// The mark of a spoken turn in its `[上下文]` line; the base prompt's speech rule is
/// keyed by it.
pub const SPOKEN: &str = "语音";

/// Per-request facts for the dynamic tail.
pub struct TailInfo<'a> {
    pub now: DateTime<FixedOffset>,
    pub channel: &'a str,
    pub chat_id: &'a str,
    pub speaker_id: &'a str,
    pub speaker_name: Option<&'a str>,
    /// The turn is spoken and its reply said aloud: the base prompt's speech rule holds.
    pub spoken: bool,
    /// A channel's own reply guidance, for this turn only (in the aside).
    pub channel_hint: Option<&'a str>,
    /// The room the speaker is in (a voice satellite's area), when known.
    pub room: Option<&'a str>,
    pub workspace: &'a Path,
}

/// One labelled block a feature adds to a request (retrieved knowledge, recalled
/// memories, …). Rendered `[label]\nbody\n[/label]`, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct TailSection {
    pub label: String,
    pub body: String,
}

/// The current turn's user content.
#[derive(Debug, Clone, PartialEq)]
pub struct Current {
    /// The message that stays: the time, tag and words, the `[上下文]` block, the kept
    /// sections. Recorded as the turn's `sent` and replayed byte for byte.
    pub message: String,
    /// The blocks for this turn only, sent as a message of their own after `message`.
    pub aside: Option<String>,
}

/// The current user content: `message` is the time, speaker tag and words — exactly the
/// bytes lean replay sends again for this turn — then, after a blank line, the
/// `[上下文]` block and the `kept` sections; `aside` holds the `aside` sections (and a
/// channel's hint, and an old session's facts), `None` when there are none.
pub fn current(
    ticket: &TurnTicket,
    info: &TailInfo<'_>,
    kept: &[TailSection],
    aside: &[TailSection],
    user_text: &str,
) -> Current {
    const WEEKDAYS: [&str; 7] = ["一", "二", "三", "四", "五", "六", "日"];
    let speaker = info.speaker_name.unwrap_or(info.speaker_id);
    let clock = info.now.format("%H:%M").to_string();
    let mut t = crate::history::said(Some(&clock), speaker, user_text);
    t.push_str(&format!(
        "\n\n[上下文]\n{} 星期{} · {} {}",
        info.now.format("%Y-%m-%d"),
        WEEKDAYS[info.now.weekday().num_days_from_monday() as usize],
        info.channel,
        info.chat_id
    ));
    match info.speaker_name {
        Some(name) => t.push_str(&format!(" · 说话人 {}（{name}）", info.speaker_id)),
        None => t.push_str(&format!(" · 说话人 {}", info.speaker_id)),
    }
    if let Some(room) = info.room {
        t.push_str(&format!(" · 房间 {room}"));
    }
    if info.spoken {
        t.push_str(" · ");
        t.push_str(SPOKEN);
    }
    t.push_str("\n[/上下文]");
    push_sections(&mut t, kept);

    let mut a = String::new();
    if let Some(h) = info.channel_hint {
        a.push_str(&format!("[回复要求]\n{}\n[/回复要求]", h.trim()));
    }
    if let Some(facts) = legacy_session_facts(ticket, info.workspace) {
        sep(&mut a);
        a.push_str(&facts);
    }
    push_sections(&mut a, aside);
    Current {
        message: t,
        aside: (!a.is_empty()).then_some(a),
    }
}

fn sep(s: &mut String) {
    if !s.is_empty() {
        s.push_str("\n\n");
    }
}

fn push_sections(t: &mut String, sections: &[TailSection]) {
    for s in sections {
        sep(t);
        t.push_str(&format!("[{}]\n{}\n[/{}]", s.label, s.body.trim(), s.label));
    }
}

/// A session begun by an earlier version has its own facts (id, folder, data paths)
/// only here, not in its frozen prompt.
fn legacy_session_facts(ticket: &TurnTicket, workspace: &Path) -> Option<String> {
    let m = ticket.mode.as_ref()?;
    if m.system_prompt.contains(super::frozen::SESSION_BLOCK) {
        return None;
    }
    let rel = |p: &Path| p.strip_prefix(workspace).unwrap_or(p).display().to_string();
    let mut t = format!(
        "[本次会话]\n当前模式: {}（{}）· 会话 {} · 会话目录 {}\n",
        m.display_name,
        m.mode_id,
        m.session_id,
        rel(&m.session_dir)
    );
    for c in &m.context_paths {
        t.push_str(&format!("{}: {}\n", c.label, rel(&c.path)));
    }
    t.push_str("[/本次会话]");
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens::Counts;
    use crate::modes::{ContextPath, ModeSnapshot};
    use std::path::PathBuf;

    fn ticket(system_prompt: &str) -> TurnTicket {
        TurnTicket {
            turn_id: 1,
            mode: Some(ModeSnapshot {
                mode_id: "cooking".into(),
                display_name: "做饭模式".into(),
                session_id: "cook-1".into(),
                session_dir: PathBuf::from("/ws/modes/sessions/cooking/cook-1"),
                system_prompt: system_prompt.into(),
                context_paths: vec![ContextPath {
                    label: "家庭菜谱".into(),
                    path: PathBuf::from("/ws/cooking/recipes"),
                }],
            }),
            history: Default::default(),
            began_at: chrono::DateTime::parse_from_rfc3339("2026-10-22T20:00:00+08:00").unwrap(),
            chat: None,
        }
    }

    fn info() -> TailInfo<'static> {
        TailInfo {
            now: chrono::DateTime::parse_from_rfc3339("2026-10-22T18:05:00+08:00").unwrap(),
            channel: "qq",
            chat_id: "group:5550001",
            speaker_id: "mom",
            speaker_name: Some("妈妈"),
            spoken: false,
            channel_hint: None,
            workspace: Path::new("/ws"),
            room: Some("厨房"),
        }
    }

    #[test]
    fn the_message_holds_the_time_the_date_and_who_in_a_short_block() {
        let frozen = format!(
            "## 运行模式{}会话: cook-1\n[/本次会话]\n",
            super::super::frozen::SESSION_BLOCK
        );
        let c = current(&ticket(&frozen), &info(), &[], &[], "少放盐");
        assert_eq!(
            c.message,
            "18:05 妈妈：少放盐\n\n[上下文]\n2026-10-22 星期四 · qq group:5550001 · 说话人 mom（妈妈） · 房间 厨房\n[/上下文]"
        );
        assert_eq!(c.aside, None);
        // a plain turn's block stays within 40 tokens, both ways of counting
        let block = &c.message[c.message.find("[上下文]").unwrap()..];
        let n = Counts::of(block);
        assert!(n.tokenizer <= 40 && n.conservative <= 40, "{n:?}");
        // spoken: the mark the base prompt's speech rule is keyed by
        let spoken = TailInfo {
            spoken: true,
            channel: "voice",
            chat_id: "kitchen-7f3a",
            ..info()
        };
        let c = current(&ticket(&frozen), &spoken, &[], &[], "开火了吗");
        assert!(
            c.message.ends_with(" · 房间 厨房 · 语音\n[/上下文]"),
            "{}",
            c.message
        );
    }

    #[test]
    fn what_stays_is_in_the_message_and_what_does_not_is_the_aside() {
        let frozen = format!(
            "{}会话: cook-1\n[/本次会话]\n",
            super::super::frozen::SESSION_BLOCK
        );
        let kept = [TailSection {
            label: "资料".into(),
            body: "— 菜谱.md:\n番茄炒蛋".into(),
        }];
        let aside = [TailSection {
            label: "场景记忆".into(),
            body: "- [#3] 少放盐".into(),
        }];
        let hinted = TailInfo {
            channel_hint: Some("回答不超过一行"),
            ..info()
        };
        let c = current(&ticket(&frozen), &hinted, &kept, &aside, "怎么做");
        assert!(
            c.message
                .ends_with("[/上下文]\n\n[资料]\n— 菜谱.md:\n番茄炒蛋\n[/资料]"),
            "{}",
            c.message
        );
        assert!(!c.message.contains("场景记忆") && !c.message.contains("回复要求"));
        assert_eq!(
            c.aside.as_deref(),
            Some(
                "[回复要求]\n回答不超过一行\n[/回复要求]\n\n[场景记忆]\n- [#3] 少放盐\n[/场景记忆]"
            )
        );
        // a session begun by an earlier version: its facts come aside, every turn
        let c = current(
            &ticket("## 运行模式：做饭模式"),
            &info(),
            &[],
            &[],
            "少放盐",
        );
        assert!(!c.message.contains("cook-1"), "{}", c.message);
        assert_eq!(
            c.aside.as_deref(),
            Some("[本次会话]\n当前模式: 做饭模式（cooking）· 会话 cook-1 · 会话目录 modes/sessions/cooking/cook-1\n家庭菜谱: cooking/recipes\n[/本次会话]")
        );
    }
}
