//! The frozen part of a mode's system prompt, written to the session's `system_prompt.md`
//! when the mode is entered and never changed while the session lasts.

use crate::modes::carry::CarryOver;
use crate::modes::manifest::KnowledgeRoot;
use crate::modes::mode_core::SessionFacts;
use crate::modes::registry::RegisteredMode;
use crate::modes::switch::{self, SwitchAction};

/// Marks the block of the session's own facts; a frozen prompt without it (written by an
/// earlier version) leaves them to the dynamic tail.
pub const SESSION_BLOCK: &str = "\n[本次会话]\n";

/// How to read the `[资料]` snippets: said once in the frozen prompt of a mode with
/// knowledge; a tail says it only when its session's frozen prompt (written by an
/// earlier version) does not.
pub const SNIPPET_NOTE: &str =
    "（从本模式资料中按用户的话检索到的片段，可能不相关；以资料原文为准）";

/// A mode's `[OBJECTIVE]` when it does not depend on the user's words (no `{query}`): a
/// block of the frozen prompt, constant for the session, so it sits in the cached prefix
/// instead of every tail. `None` for a per-request objective.
pub fn frozen_objective(objective: &str) -> Option<String> {
    let o = objective.trim();
    (!o.is_empty() && !o.contains("{query}")).then(|| format!("\n[OBJECTIVE]\n{o}\n"))
}

/// The frozen part of a mode's system prompt: fixed mode notes, the session's own facts
/// (its id, folder and the plugin's data paths — constant while it lasts, so they sit in
/// the cached prefix, not in every tail), the context policy's labelled blocks, the
/// skill's own prompt, then — when there is one — the previous session's summary as a
/// marked "last time" block (never its dialogue).
pub fn frozen_mode_prompt(
    mode: &RegisteredMode,
    static_prompt: &str,
    carry: Option<&CarryOver>,
    facts: &SessionFacts,
) -> String {
    let m = &mode.manifest;
    let exit_verbs = switch::verbs_for(m, SwitchAction::Exit).join("/");
    let mut out = format!(
        "## 运行模式：{name}（{id}）\n\n\
         你现在处于“{name}”。这是全家共享的上下文空间，不属于某个频道或某个人：\n\
         - 本模式的每一轮对话都由后端完整记录，跨频道（语音、QQ、终端）和跨语音唤醒延续；\n\
         - 多位家庭成员可能交替说话：每条用户消息以“说话人：”开头；当前说话人、时间和频道在最新一条消息末尾的 [上下文] 块里；\n\
         - 与模式主题无关的话题照常回答；\n\
         - 只有当用户原话明确包含“{name}”和退出动作（{exit_verbs}）时，才调用 switch_mode(action=\"exit\", mode_id=\"{id}\")，可附一句简短 summary；\n\
         - 过往会话的索引和总结按需用 read_file 读取（路径见 [本次会话]），不要凭记忆编造。\n",
        name = m.display_name,
        id = m.id,
        exit_verbs = exit_verbs
    );
    out.push_str(SESSION_BLOCK);
    out.push_str(&format!(
        "会话: {} · 会话目录: {}\n",
        facts.session_id, facts.session_dir
    ));
    for (label, path) in &facts.paths {
        out.push_str(&format!("{label}: {path}\n"));
    }
    out.push_str("[/本次会话]\n");
    if let Some(ctx) = &m.context {
        if let Some(role) = &ctx.role {
            out.push_str(&format!("\n[ROLE]\n{}\n", role.trim()));
        }
        // a per-request objective (one with `{query}`) goes in each tail instead
        if let Some(block) = ctx.objective.as_deref().and_then(frozen_objective) {
            out.push_str(&block);
        }
        if !ctx.rules.is_empty() {
            out.push_str("\n[RULES]\n");
            for r in &ctx.rules {
                out.push_str(&format!("- {}\n", r.trim()));
            }
        }
        for k in &ctx.knowledge {
            let place = match k.root {
                KnowledgeRoot::Workspace => format!("工作区内的 {}", k.path),
                KnowledgeRoot::Skill => {
                    format!("技能目录内的 {}", mode.skill_dir.join(&k.path).display())
                }
            };
            out.push_str(&format!(
                "\n[KNOWLEDGE: {}]\n{place}（本模式的资料，只在本模式中可读；与用户的话相关的片段会放在用户消息的 [资料] 块里，需要更多时用 list_files / read_file 查阅）\n",
                k.name
            ));
        }
        if !ctx.knowledge.is_empty() {
            out.push_str(&format!("[资料] 块的说明：{SNIPPET_NOTE}\n"));
        }
    }
    out.push_str(&format!(
        "\n[SKILL: {}]\n{}\n",
        mode.skill_name,
        static_prompt.trim()
    ));
    out.push_str(&examples_block(&facts.examples));
    if let Some(c) = carry {
        out.push_str(&format!(
            "\n[上次: {id}]\n（上一次{name}会话 {id} 的总结，来源 {source}；只是参考，用户说“继续上次”时用得上，不要当成本次说过的话）\n{summary}\n[/上次]\n",
            id = c.session_id,
            name = m.display_name,
            source = c.source,
            // the model wrote it from the family's words: it must not end the block
            summary = super::defang(c.summary.trim())
        ));
    }
    out
}

/// The household's examples a session got, as a block of its frozen prompt (empty when
/// none): earlier turns of this mode the family praised or thanked, so the model sees
/// what served them. The family's words cannot end the block ([`super::defang`]).
pub fn examples_block(cases: &[crate::modes::examples::Case]) -> String {
    if cases.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n[EXAMPLES]\n（家里人在本模式里认可过的回答，只作参考：语气和做法可以借鉴，内容按这次的情况回答）\n",
    );
    for (i, c) in cases.iter().enumerate() {
        out.push_str(&format!(
            "例{n}\n问：{user}\n答：{answer}\n",
            n = i + 1,
            user = super::defang(c.user.trim()),
            answer = super::defang(c.answer.trim()),
        ));
    }
    out.push_str("[/EXAMPLES]\n");
    out
}
