//! The dynamic tail: per-request facts inside the current user message, after the user's
//! words, never in the system prompt — and never replayed: a later request shows the turn
//! as its speaker tag and words only ([`crate::history::said`]).

use crate::modes::TurnTicket;
use chrono::{DateTime, Datelike, FixedOffset, Timelike};
use std::path::Path;

/// Per-request facts for the dynamic tail.
pub struct TailInfo<'a> {
    pub now: DateTime<FixedOffset>,
    pub channel: &'a str,
    pub chat_id: &'a str,
    pub speaker_id: &'a str,
    pub speaker_name: Option<&'a str>,
    /// Channel-specific reply guidance (e.g. voice: short, no markdown).
    pub channel_hint: Option<&'a str>,
    /// The room the speaker is in (a voice satellite's area), when known.
    pub room: Option<&'a str>,
    pub workspace: &'a Path,
}

/// One labelled block of the dynamic tail that a feature adds for this request only
/// (retrieved knowledge, recalled memories, …). Rendered `[label]\nbody\n[/label]`
/// after the `[上下文]` block, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct TailSection {
    pub label: String,
    pub body: String,
}

/// The current user message: the speaker tag and the user's words — exactly the bytes
/// later requests replay for this turn — then, after a blank line, the `[上下文]` block
/// and the `sections`, each `\n\n`-separated. So a request is a byte prefix of the next
/// up to this turn's words, and the tail is paid for once, in its own turn.
pub fn dynamic_tail(
    ticket: &TurnTicket,
    info: &TailInfo<'_>,
    sections: &[TailSection],
    user_text: &str,
) -> String {
    const WEEKDAYS: [&str; 7] = ["一", "二", "三", "四", "五", "六", "日"];
    let part = match info.now.hour() {
        0..=4 => "深夜",
        5..=10 => "早上",
        11..=12 => "中午",
        13..=17 => "下午",
        _ => "晚上",
    };
    let rel = |p: &Path| {
        p.strip_prefix(info.workspace)
            .unwrap_or(p)
            .display()
            .to_string()
    };
    let speaker = info.speaker_name.unwrap_or(info.speaker_id);
    let mut t = crate::history::said(speaker, user_text);
    t.push_str("\n\n[上下文]\n");
    t.push_str(&format!(
        "时间: {}（星期{}，{}）\n",
        info.now.to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
        WEEKDAYS[info.now.weekday().num_days_from_monday() as usize],
        part
    ));
    t.push_str(&format!(
        "频道: {} · 会话: {}\n",
        info.channel, info.chat_id
    ));
    match info.speaker_name {
        Some(name) => t.push_str(&format!("说话人: {}（{}）\n", info.speaker_id, name)),
        None => t.push_str(&format!("说话人: {}\n", info.speaker_id)),
    }
    if let Some(room) = info.room {
        t.push_str(&format!("房间: {room}\n"));
    }
    // the session's own facts are in its frozen prompt (sessions begun by an earlier
    // version have them here)
    let facts_frozen = ticket
        .mode
        .as_ref()
        .is_some_and(|m| m.system_prompt.contains(super::frozen::SESSION_BLOCK));
    if let Some(m) = ticket.mode.as_ref().filter(|_| !facts_frozen) {
        t.push_str(&format!(
            "当前模式: {}（{}）· 会话 {} · 会话目录 {}\n",
            m.display_name,
            m.mode_id,
            m.session_id,
            rel(&m.session_dir)
        ));
        for c in &m.context_paths {
            t.push_str(&format!("{}: {}\n", c.label, rel(&c.path)));
        }
    }
    if let Some(h) = info.channel_hint {
        t.push_str(&format!("回复要求: {h}\n"));
    }
    t.push_str("[/上下文]");
    for s in sections {
        t.push_str(&format!(
            "\n\n[{}]\n{}\n[/{}]",
            s.label,
            s.body.trim(),
            s.label
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn the_session_s_facts_are_in_the_tail_only_when_its_frozen_prompt_lacks_them() {
        let info = TailInfo {
            now: chrono::DateTime::parse_from_rfc3339("2026-10-22T20:00:00+08:00").unwrap(),
            channel: "qq",
            chat_id: "group:1",
            speaker_id: "mom",
            speaker_name: Some("妈妈"),
            channel_hint: None,
            workspace: Path::new("/ws"),
            room: Some("厨房"),
        };
        let frozen = format!(
            "## 运行模式{}会话: cook-1\n[/本次会话]\n",
            super::super::frozen::SESSION_BLOCK
        );
        let t = dynamic_tail(&ticket(&frozen), &info, &[], "少放盐");
        assert!(t.starts_with("妈妈：少放盐\n\n[上下文]\n时间: "), "{t}");
        assert!(!t.contains("cook-1") && !t.contains("recipes"), "{t}");
        assert!(t.contains("说话人: mom（妈妈）\n房间: 厨房\n"), "{t}");
        // a session begun by an earlier version: its frozen prompt has no such block
        let t = dynamic_tail(&ticket("## 运行模式：做饭模式"), &info, &[], "少放盐");
        assert!(
            t.contains("当前模式: 做饭模式（cooking）· 会话 cook-1 · 会话目录 modes/sessions/cooking/cook-1\n家庭菜谱: cooking/recipes\n"),
            "{t}"
        );
    }
}
