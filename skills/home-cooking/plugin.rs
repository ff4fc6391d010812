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
    ) -> std::io::Result<()> {
        // written whether or not the archive's copy is there yet: `after_exit` never
        // replaces an existing copy, so the model's summary wins either way
        self.prepare(ctx)?;
        let copy = data_dir(ctx)
            .join("summaries")
            .join(format!("{session_id}.md"));
        fsutil::write_atomic(&copy, summary_text.as_bytes())
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
            .map(|t| excerpt(t, 60))
            .filter(|t| !t.is_empty())
            .or_else(|| s.records.first().map(|r| excerpt(&r.user, 40)))
            .unwrap_or_else(|| "（无对话）".into());
        let date = s.started_at.get(..10).unwrap_or(s.started_at);
        let line = format!(
            "- {date} · {} · {} 轮 · {} · {about} · 结束原因 {} · 总结 summaries/{}.md\n",
            s.session_id,
            s.records.len(),
            if speakers.is_empty() {
                "—".to_string()
            } else {
                speakers.join("、")
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
