//! `/strategy`: show or switch (`CommandError` when refused), the journal read back
//! (`/strategy log`), and the description of what is in force.

use super::state::{Preset, Thinking, WorkKind};
use super::{ActiveMode, Source, Strategies};
use crate::config::StrategyKind;

/// Longest custom instruction, in characters.
pub const MAX_CUSTOM_CHARS: usize = 1000;

/// Why `/strategy …` (or the `set_strategy` tool) changed nothing; the text is the
/// household's answer.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("你在这里没有切换策略的权限。(not allowed to switch the strategy here)")]
    NotAllowed,
    #[error("没有叫 {0:?} 的策略。可选: build, plan, spec, reflect, assist, custom；预设: quick, standard, careful")]
    Unknown(String),
    #[error("自定义指令太长了（上限 {max} 字）。", max = MAX_CUSTOM_CHARS)]
    CustomTooLong,
    /// Words after a strategy other than `custom` (the strategy's word).
    #[error("用法: /strategy {0}（只有 custom 后面跟指令）")]
    Trailing(String),
    #[error("用法: /strategy custom <指令>，例如 /strategy custom 回答前先说一句“收到”")]
    NoCustom,
    #[error("策略没能保存：{0}")]
    NotSaved(std::io::Error),
}

impl Strategies {
    /// `/strategy [NAME | PRESET | custom TEXT]`: show, or switch (when `may_switch`).
    pub async fn command(
        &self,
        arg: &str,
        may_switch: bool,
        mode: ActiveMode<'_>,
    ) -> Result<String, CommandError> {
        let arg = arg.trim();
        if arg.is_empty() {
            return Ok(self.describe(mode).await);
        }
        if !may_switch {
            return Err(CommandError::NotAllowed);
        }
        let (word, rest) = match arg.split_once(char::is_whitespace) {
            Some((w, r)) => (w, r.trim()),
            None => (arg, ""),
        };
        let session = mode.map(|(_, s)| s.to_string());
        let preset = Preset::parse(word);
        let kind = preset
            .map(Preset::strategy)
            .or_else(|| StrategyKind::parse(word));
        let Some(kind) = kind else {
            return Err(CommandError::Unknown(word.to_string()));
        };
        if kind == StrategyKind::Custom {
            if rest.chars().count() > MAX_CUSTOM_CHARS {
                return Err(CommandError::CustomTooLong);
            }
        } else if !rest.is_empty() {
            return Err(CommandError::Trailing(word.to_string()));
        }
        let before = self.snapshot().await;
        let has_custom = before.custom_instruction.is_some();
        let work_kind = match kind {
            StrategyKind::Plan => Some(WorkKind::Plan),
            StrategyKind::Spec => Some(WorkKind::Spec),
            _ => None,
        };
        let dropped = before
            .pending_work
            .as_ref()
            .is_some_and(|w| Some(w.kind) != work_kind);
        if kind == StrategyKind::Custom && rest.is_empty() && !has_custom {
            return Err(CommandError::NoCustom);
        }
        self.update(|st| {
            st.strategy = Some(kind);
            st.set_in_session = session;
            if preset.is_some() {
                // a strategy's name changes the strategy only: the preset's thinking
                // depth and tool-round cap stay: a patch of the strategy, not a new configuration
                st.preset = preset;
            }
            if kind == StrategyKind::Custom && !rest.is_empty() {
                st.custom_instruction = Some(rest.to_string());
            }
            if dropped {
                // a plan waiting under another strategy would run on a stray "确认"
                st.pending_work = None;
            }
        })
        .await
        .map_err(CommandError::NotSaved)?;
        let note = if dropped {
            "（待确认的计划已作废。）"
        } else {
            ""
        };
        Ok(format!("已切换策略。{note}{}", self.describe(mode).await))
    }

    /// `/strategy log`: the last entries of the journal, of one chat or of all.
    pub async fn log(&self, chat: Option<(String, String)>) -> std::io::Result<String> {
        let ws = self.inner.workspace.clone();
        let entries = tokio::task::spawn_blocking(move || {
            let chat = chat.as_ref().map(|(c, i)| (c.as_str(), i.as_str()));
            super::journal::recent(&ws, 10, chat)
        })
        .await
        .map_err(std::io::Error::other)??;
        if entries.is_empty() {
            return Ok("还没有计划、评审或选择的记录。".into());
        }
        let lines: Vec<String> = entries.iter().map(super::journal::render).collect();
        Ok(format!(
            "最近的策略记录（{}）：\n{}",
            super::journal::FILE,
            lines.join("\n")
        ))
    }

    /// The `/strategy` text.
    pub async fn describe(&self, mode: ActiveMode<'_>) -> String {
        let st = self.snapshot().await;
        let e = self.effective_in(&st, mode);
        let from = match e.source {
            Source::Config => "配置默认".to_string(),
            Source::Command => "由家里人设置".to_string(),
            Source::Mode => format!("当前模式 {} 的默认", mode.map(|m| m.0).unwrap_or("?")),
        };
        let mut s = format!("当前策略: {}（{from}）", e.kind);
        if let Some(p) = e.preset {
            let thinking = match p.thinking() {
                Thinking::None => "快速",
                Thinking::Standard => "标准",
                Thinking::Deep => "深入",
            };
            s.push_str(&format!(" · 预设: {}（思考深度：{thinking}", p.name()));
            if let Some(r) = p.max_tool_rounds() {
                s.push_str(&format!("，工具往返至多 {r} 轮"));
            }
            s.push('）');
        }
        if let Some(c) = &st.custom_instruction {
            s.push_str(&format!("\n自定义指令: {c}"));
        }
        if let Some(w) = &st.pending_work {
            s.push_str(&format!(
                "\n待确认的{}: {}（{} 步，{} 在 {}:{} 提出）",
                if w.kind == WorkKind::Plan {
                    "计划"
                } else {
                    "规格"
                },
                w.goal,
                w.steps.len(),
                w.speaker_id,
                w.channel,
                w.chat_id
            ));
        }
        s.push_str("\n可选: build, plan, spec, reflect, assist, custom <指令>；预设: quick, standard, careful");
        s
    }
}
