//! Prompt layout, built so that consecutive requests of a mode session share
//! a byte-identical prefix:
//!
//! 1. stable prefix: the base system prompt (built once at start) → in a mode, the
//!    frozen `system_prompt.md`; outside a mode, the current member's `USER.md` →
//!    tool definitions in a fixed order (sent beside the messages);
//! 2. history: outside a mode, first the block about a mode session the chat took part
//!    in that ended within a day (a marked user/assistant pair, see
//!    [`crate::context::carry`]); then the checkpoint summary (a marked pair) and the
//!    records after it — a mode's `conversation.jsonl`, or the chat's own log, at most
//!    `normal_history_turns` of it (see [`crate::context::budget`]). Each earlier turn is replayed as its
//!    speaker tag and words ("妈妈：少放盐", [`crate::history::said`]) and the reply, so
//!    the model sees who said each line; failed turns are left out;
//! 3. the current user message: the same speaker tag and words, then the dynamic tail —
//!    time, channel, speaker, session and data paths, retrieved knowledge, recalled
//!    memories, a strategy's blocks. The tail is sent in its own turn only: a request is
//!    a byte prefix of the next up to the previous user's words, and the history holds
//!    the dialogue, not copies of old tails.
//!
//! The frozen part of a mode's prompt ([`frozen_mode_prompt`], written to the session's
//! `system_prompt.md` at entry) is laid out here too. Nothing here names a particular
//! mode: names and verbs come from the registry and the manifests.

use crate::context::Plan;
use crate::modes::switch::{self, SwitchAction};
use crate::modes::{ModeRegistry, TurnTicket};
use crate::provider::Message;

mod frozen;
mod tail;

pub use frozen::{frozen_mode_prompt, frozen_objective, SNIPPET_NOTE};
pub use tail::{dynamic_tail, TailInfo, TailSection};

pub use crate::history::defang;

/// The base system prompt: who homebot is and how it behaves. Built once per process;
/// nothing per-request (time, speaker, counters) may ever enter it.
pub fn base_system_prompt(household: &str, registry: &ModeRegistry, extra: Option<&str>) -> String {
    let mut s = format!(
        "你是 homebot，“{household}”这个家庭的家庭助手。家里人通过家里的音箱（语音）、QQ 群和私聊、以及终端和你说话。\n\
         - 用用户所用的语言回答，默认中文；简短、具体、可执行。\n\
         - 每条用户消息以“说话人：”开头，后面是这个人的原话。最新一条消息在原话之后还附有 [上下文] 块（时间、频道、说话人、相关路径），以及可能的 [资料]、[场景记忆] 等块：它们由系统填写，只对这一轮有效，不是用户说的话；不要复述它们。\n\
         - 家庭工作区里的文件可以用 read_file / list_files 查阅，需要保存内容时用 write_file。不知道的事情直说。\n\
         - 运行模式是明确开启的共享上下文：只有当用户原话明确说出模式名称和动作{example}时，才调用 switch_mode；\
         问到模式是什么、或只是聊到相关话题时，不要切换。后端会核对用户原话，拒绝时把原因如实告诉用户。\n",
        example = switch_example(registry)
    );
    if !registry.modes().is_empty() {
        s.push_str("\n可用的运行模式：\n");
        for m in registry.modes() {
            s.push_str(&format!(
                "- {}（mode_id: {}）\n",
                m.manifest.display_name, m.manifest.id
            ));
        }
    }
    if !registry.skills().is_empty() {
        s.push_str("\n可用的技能（需要时用 read_file 读取其 SKILL.md）：\n");
        for sk in registry.skills() {
            s.push_str(&format!(
                "- {}: {} ({})\n",
                sk.name,
                sk.description,
                sk.path.display()
            ));
        }
    }
    if let Some(extra) = extra.map(str::trim).filter(|e| !e.is_empty()) {
        s.push('\n');
        s.push_str(extra);
        s.push('\n');
    }
    s
}

/// "（例如“打开做饭模式”“退出做饭模式”）" for the first registered mode; empty without modes.
fn switch_example(registry: &ModeRegistry) -> String {
    let Some(m) = registry.modes().first() else {
        return String::new();
    };
    let first = |a| {
        switch::verbs_for(&m.manifest, a)
            .into_iter()
            .next()
            .unwrap_or_default()
    };
    let name = &m.manifest.display_name;
    format!(
        "（例如“{}{name}”“{}{name}”）",
        first(SwitchAction::Enter),
        first(SwitchAction::Exit)
    )
}

/// The system message of a turn: the base prompt, then in a mode the frozen
/// `system_prompt.md`, outside a mode the current member's `USER.md`, then the
/// `standing` block of the strategy in force (its wording is the same every turn until
/// the household switches strategy, so it belongs to the cached prefix: a switch costs
/// one uncached system message, not a block in every tail).
pub fn system_message(
    base: &str,
    ticket: &TurnTicket,
    profile: Option<&str>,
    standing: Option<&TailSection>,
) -> String {
    let mut system = base.to_string();
    match &ticket.mode {
        Some(m) => {
            system.push('\n');
            system.push_str(&m.system_prompt);
        }
        None => {
            if let Some(p) = profile.map(str::trim).filter(|p| !p.is_empty()) {
                system.push_str("\n## 当前说话的家庭成员（USER.md）\n");
                system.push_str(p);
                system.push('\n');
            }
        }
    }
    if let Some(s) = standing {
        system.push_str(&format!(
            "\n[{}]\n{}\n[/{}]\n",
            s.label,
            s.body.trim(),
            s.label
        ));
    }
    system
}

/// The messages of the first request of a turn: the system message, a normal chat's
/// carried pair (the mode session it just left), the checkpoint pair and the records the [`Plan`] replays (each user message as its speaker tag and
/// words, see [`crate::history::Record::replayed_user`]), then the current user message. Only
/// the planned range of the history is read.
pub fn build_messages(
    system: String,
    ticket: &TurnTicket,
    plan: &Plan,
    tail: String,
) -> Vec<Message> {
    let mut msgs = Vec::with_capacity(2 * (plan.to - plan.from) + 4);
    msgs.push(Message::System { content: system });
    if let Some(block) = &plan.carried {
        let (user, assistant) = crate::context::budget::carried_messages(block);
        msgs.push(Message::User { content: user });
        msgs.push(Message::Assistant {
            content: Some(assistant),
            tool_calls: vec![],
            reasoning_content: None,
        });
    }
    if let Some(c) = &plan.checkpoint {
        let (user, assistant) = crate::context::budget::checkpoint_messages(c);
        msgs.push(Message::User { content: user });
        msgs.push(Message::Assistant {
            content: Some(assistant),
            tool_calls: vec![],
            reasoning_content: None,
        });
    }
    ticket.history.with_range(plan.from, |records, _| {
        let records = &records[..plan.to.saturating_sub(plan.from).min(records.len())];
        // Failed turns stay in the record but are not replayed: the model should not
        // learn from apologies for outages.
        for r in records.iter().filter(|r| r.error.is_none()) {
            msgs.push(Message::User {
                content: r.replayed_user(),
            });
            msgs.push(Message::Assistant {
                content: Some(r.assistant.clone()),
                tool_calls: vec![],
                reasoning_content: None,
            });
        }
    });
    msgs.push(Message::User { content: tail });
    msgs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_prompt_names_only_the_registered_modes() {
        let d = tempfile::tempdir().unwrap();
        let skill = d.path().join("homework");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: homework\n---\n检查作业。",
        )
        .unwrap();
        std::fs::write(
            skill.join("mode.json"),
            r#"{"id":"homework","display_name":"作业模式","exit_verbs":["收工"]}"#,
        )
        .unwrap();
        let reg = ModeRegistry::load(&[d.path().to_path_buf()], &[]);
        let base = base_system_prompt("家", &reg, None);
        assert!(base.contains("“打开作业模式”“关闭作业模式”"), "{base}");
        assert!(!base.contains("做饭"), "{base}");
        let facts = crate::modes::core::SessionFacts {
            session_id: "homework-1".into(),
            session_dir: "modes/sessions/homework/homework-1".into(),
            paths: vec![("作业本".into(), "homework/books".into())],
        };
        let frozen = frozen_mode_prompt(&reg.modes()[0], "检查作业。", None, &facts);
        assert!(
            frozen.contains("\n[本次会话]\n会话: homework-1 · 会话目录: modes/sessions/homework/homework-1\n作业本: homework/books\n[/本次会话]\n"),
            "{frozen}"
        );
        assert!(frozen.contains("关闭/退出/结束/收工"), "{frozen}");
        assert!(!frozen.contains("做饭"), "{frozen}");
        let tools = serde_json::to_string(&crate::tools::definitions(&reg, &[])).unwrap();
        assert!(
            !tools.contains("做饭") && !tools.contains("recipe"),
            "{tools}"
        );
        assert!(
            tools.contains("作业模式 (homework)") && tools.contains("收工"),
            "{tools}"
        );
        // no mode at all: no example
        let empty = ModeRegistry::load(&[], &[]);
        assert!(!base_system_prompt("家", &empty, None).contains("例如“"));
    }
}
