//! The cooking mode's plugin (`plugin.rs:CookingMode`).
//!
//! Keeps `<workspace>/cooking/`:
//! - `recipes/` — the family's own recipes (Markdown, written by people or by the model
//!   with `write_file` when asked to save one);
//! - `summaries/<session_id>.md` — a copy of each finished session's `summary.md`;
//! - `history.md` — the index of past cooking sessions, one line each, with session id
//!   and date, so "上周做的那个鱼是怎么做的" can be answered by reading it.

use crate::fsutil;
use crate::modes::plugin::{ArchivedSession, ContextPath, ModePlugin, PluginContext};
use crate::modes::session::excerpt;
use std::path::PathBuf;

pub struct CookingMode;

const HISTORY_HEADER: &str = "# 做饭历史\n\n每次做饭模式结束后自动追加一行：日期 · 会话 · 轮数 · 参与者 · 内容 · 总结文件。\n\n";

/// Characters of the model's summary a history line holds (dishes, people, outcome are
/// what the cooking skill's `summary_instructions` put first).
const ABOUT_CHARS: usize = 80;
/// Between the fields of a history line.
const SEP: &str = " · ";

/// `text` on one line without the field separator, so a line always splits alike.
fn clean(text: &str) -> String {
    text.replace(SEP.trim(), "，")
}

/// The model's summary as a history line's "content" field.
fn about_of(summary: &str) -> String {
    clean(&excerpt(summary, ABOUT_CHARS))
}

/// `history` with the content field of `session_id`'s line replaced by `about`; `None`
/// when no line names the session. A line is `- date · session · N 轮 · who · content ·
/// 结束原因 … · 总结 …`: the first four and the last two fields are kept.
fn with_about(history: &str, session_id: &str, about: &str) -> Option<String> {
    let mut found = false;
    let lines: Vec<String> = history
        .split_inclusive('\n')
        .map(|line| {
            let fields: Vec<&str> = line.trim_end_matches('\n').split(SEP).collect();
            if found || fields.len() < 7 || fields[1] != session_id {
                return line.to_string();
            }
            found = true;
            let n = fields.len();
            let mut out = fields[..4].join(SEP);
            out.push_str(SEP);
            out.push_str(about);
            out.push_str(SEP);
            out.push_str(&fields[n - 2..].join(SEP));
            if line.ends_with('\n') {
                out.push('\n');
            }
            out
        })
        .collect();
    found.then(|| lines.concat())
}

fn data_dir(ctx: &PluginContext<'_>) -> PathBuf {
    ctx.workspace.root().join("cooking")
}

impl ModePlugin for CookingMode {
    fn session_prefix(&self, _ctx: &PluginContext<'_>) -> String {
        "cook".into()
    }

    fn prepare(&self, ctx: &PluginContext<'_>) -> std::io::Result<()> {
        let dir = data_dir(ctx);
        fsutil::create_private_dirs(&dir.join("recipes"))?;
        fsutil::create_private_dirs(&dir.join("summaries"))?;
        let history = dir.join("history.md");
        if !history.exists() {
            fsutil::write_atomic(&history, HISTORY_HEADER.as_bytes())?;
        }
        Ok(())
    }

    fn writable_dirs(&self, ctx: &PluginContext<'_>) -> Vec<PathBuf> {
        vec![data_dir(ctx).join("recipes")]
    }

    fn runtime_context(&self, ctx: &PluginContext<'_>) -> Vec<ContextPath> {
        let dir = data_dir(ctx);
        vec![
            ContextPath {
                label: "做饭历史索引".into(),
                path: dir.join("history.md"),
            },
            ContextPath {
                label: "家庭菜谱".into(),
                path: dir.join("recipes"),
            },
            ContextPath {
                label: "往次总结".into(),
                path: dir.join("summaries"),
            },
        ]
    }

    fn summary_updated(
        &self,
        ctx: &PluginContext<'_>,
        session_id: &str,
        summary_text: &str,
        model: &str,
    ) -> std::io::Result<()> {
        // written whether or not the archive's copy is there yet: `after_exit` never
        // replaces an existing copy, so the model's summary wins either way
        self.prepare(ctx)?;
        let dir = data_dir(ctx);
        let copy = dir.join("summaries").join(format!("{session_id}.md"));
        fsutil::write_atomic(&copy, summary_text.as_bytes())?;
        // the session's line in history.md says what the model's summary says (until now
        // it held the session's first words); only that line changes
        let history = dir.join("history.md");
        let Ok(current) = std::fs::read_to_string(&history) else {
            return Ok(()); // not indexed yet: `after_exit` writes the line
        };
        match with_about(&current, session_id, &about_of(model)) {
            Some(next) if next != current => fsutil::write_atomic(&history, next.as_bytes()),
            _ => Ok(()),
        }
    }

    fn after_exit(&self, ctx: &PluginContext<'_>, s: &ArchivedSession<'_>) -> std::io::Result<()> {
        self.prepare(ctx)?;
        let dir = data_dir(ctx);
        let copy = dir.join("summaries").join(format!("{}.md", s.session_id));
        if !copy.exists() {
            fsutil::write_atomic(&copy, s.summary_text.as_bytes())?;
        }
        let history = dir.join("history.md");
        let current = std::fs::read_to_string(&history).unwrap_or_else(|_| HISTORY_HEADER.into());
        if current.contains(s.session_id) {
            return Ok(()); // already indexed (archive resumed after a crash)
        }
        let mut speakers: Vec<&str> = Vec::new();
        for r in s.records {
            if !speakers.contains(&r.speaker_id.as_str()) {
                speakers.push(&r.speaker_id);
            }
        }
        let about = s
            .llm_summary
            .map(about_of)
            .filter(|t| !t.is_empty())
            .or_else(|| s.records.first().map(|r| clean(&excerpt(&r.user, 40))))
            .unwrap_or_else(|| "（无对话）".into());
        let date = s.started_at.get(..10).unwrap_or(s.started_at);
        let line = format!(
            "- {date} · {} · {} 轮 · {} · {about} · 结束原因 {} · 总结 summaries/{}.md\n",
            s.session_id,
            s.records.len(),
            if speakers.is_empty() {
                "—".to_string()
            } else {
                clean(&speakers.join("、"))
            },
            s.exit_reason,
            s.session_id,
        );
        let mut next = current;
        if !next.ends_with('\n') {
            next.push('\n');
        }
        next.push_str(&line);
        fsutil::write_atomic(&history, next.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HISTORY: &str = "# 做饭历史\n\n\
        - 2026-11-30 · cook-a · 3 轮 · mom · 打开做饭模式 · 结束原因 expired · 总结 summaries/cook-a.md\n\
        - 2026-12-01 · cook-b · 5 轮 · mom、dad · 打开做饭模式，今晚 · 结束原因 expired · 总结 summaries/cook-b.md\n";

    #[test]
    fn the_models_summary_replaces_only_its_sessions_content_field() {
        let summary = "做了番茄炒蛋和青椒肉丝，三个人吃 · 少放盐；\n蛋炒老了一点。";
        let next = with_about(HISTORY, "cook-b", &about_of(summary)).unwrap();
        let lines: Vec<&str> = next.lines().collect();
        assert_eq!(lines[..3], HISTORY.lines().collect::<Vec<_>>()[..3]);
        assert_eq!(
            lines[3],
            "- 2026-12-01 · cook-b · 5 轮 · mom、dad · 做了番茄炒蛋和青椒肉丝，三个人吃 ， 少放盐； 蛋炒老了一点。 · 结束原因 expired · 总结 summaries/cook-b.md"
        );
        // idempotent, and the line still splits into the same seven fields
        assert_eq!(
            with_about(&next, "cook-b", &about_of(summary)).unwrap(),
            next
        );
        assert_eq!(lines[3].split(SEP).count(), 7);
        assert!(with_about(HISTORY, "cook-z", "x").is_none());
        // a long summary is cut
        let long = about_of(&"番茄".repeat(100));
        assert_eq!(long.chars().count(), ABOUT_CHARS + 1);
    }
}
