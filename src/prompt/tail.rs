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
    if let Some(m) = &ticket.mode {
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
