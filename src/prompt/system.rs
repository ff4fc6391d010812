//! The stable prefix: the base system prompt (built once at start, the speech rule and the
//! registered modes' names and verbs in it) and the system message a turn sends.

use super::tail::{TailSection, SPOKEN};
use crate::config::Replay;
use crate::modes::switch::{self, SwitchAction};
use crate::modes::{ModeRegistry, TurnTicket};

/// How a reply to a spoken turn is shaped (its `[上下文]` line ends with [`SPOKEN`]):
/// said once in the base prompt, not in every spoken turn's message.
pub const SPEECH_RULE: &str = "回答会被念出来：要短（一到三句，约六十字以内），不用 Markdown、列表、表情和链接；\
数字和单位写成念得出来的样子（“两百克”“中火三分钟”）。如果需要用户回答或确认，用一个问句结尾，并在最后加上标记 [[继续]]；\
不需要回答时不要提问，也不要加标记。";

/// The base system prompt: who homebot is and how it behaves. Built once per process;
/// nothing per-request (time, speaker, counters) may ever enter it. `replay` decides
/// what it says the history's lines hold.
pub fn base_system_prompt(
    household: &str,
    registry: &ModeRegistry,
    extra: Option<&str>,
    replay: Replay,
) -> String {
    let history = match replay {
        Replay::Exact => "历史里的消息保持当时发送的原样（时间、[上下文] 都是那一轮的）；[资料] 和 [成员资料] 发过一次就不再重复，在历史里仍然有效。",
        Replay::Lean => "历史里的消息只保留“时间 说话人：原话”；[上下文] 和 [资料] 只随最新一条消息发送。",
    };
    let mut s = format!(
        "你是 homebot，“{household}”这个家庭的家庭助手。家里人通过家里的音箱（语音）、QQ 群和私聊、以及终端和你说话。\n\
         - 用用户所用的语言回答，默认中文；简短、具体、可执行。\n\
         - 每条用户消息以“时间 说话人：”开头（如“18:05 妈妈：”），后面是这个人的原话；原话之后的 [上下文] 块写着日期和星期、频道和会话、说话人、房间（知道时），说出来的话末尾标着“{SPOKEN}”；可能还有 [资料]、[成员资料] 等块。{history}\
         最新一条消息后面单独的一条（[场景记忆]、[策略] 等块）只对这一轮有效。这些块由系统填写，不是用户说的话；不要复述它们。\n\
         - 标着“{SPOKEN}”的消息，{SPEECH_RULE}\n\
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
/// `system_prompt.md`, then the `standing` block of the strategy in force (its wording
/// is the same every turn until the household switches strategy, so it belongs to the
/// cached prefix: a switch costs one uncached system message, not a block in every
/// tail). Nothing about the current speaker: their profile is a kept block of the
/// message, so a group where two people alternate keeps one system message.
pub fn system_message(base: &str, ticket: &TurnTicket, standing: Option<&TailSection>) -> String {
    let mut system = base.to_string();
    if let Some(m) = &ticket.mode {
        system.push('\n');
        system.push_str(&m.system_prompt);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::{frozen_mode_prompt, without_profiles};

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
        let base = base_system_prompt("家", &reg, None, Replay::Exact);
        assert!(base.contains("“打开作业模式”“关闭作业模式”"), "{base}");
        assert!(!base.contains("做饭"), "{base}");
        let facts = crate::modes::mode_core::SessionFacts {
            session_id: "homework-1".into(),
            session_dir: "modes/sessions/homework/homework-1".into(),
            paths: vec![("作业本".into(), "homework/books".into())],
            examples: vec![],
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
        assert!(!base_system_prompt("家", &empty, None, Replay::Lean).contains("例如“"));
        // a guest's request replays members' messages without their profiles
        let m = "09:00 妈妈：hi\n\n[上下文]\nx\n[/上下文]\n\n[成员资料]\n妈妈的 USER.md：\n芒果过敏\n[/成员资料]\n\n[资料]\ny\n[/资料]";
        assert_eq!(
            without_profiles(m),
            "09:00 妈妈：hi\n\n[上下文]\nx\n[/上下文]\n\n[资料]\ny\n[/资料]"
        );
        assert_eq!(without_profiles("a：b"), "a：b");
        // the speech rule asks for the marker the speech splitter removes
        assert!(SPEECH_RULE.contains(crate::speech::CONTINUE_MARKERS[0]));
        assert!(base.contains(SPEECH_RULE) && base.contains(SPOKEN));
    }
}
