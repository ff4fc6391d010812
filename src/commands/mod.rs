//! Slash commands and the status text: what a user can do without the LLM.
//!
//! `/mode enter <id>`, `/mode exit [id]`, `/mode status`, `/status`, `/reminders [all]`,
//! `/reminders cancel <id>`, `/strategy [...]`, `/why` ([`why`]), `/good`, `/examples
//! [MODE]`, `/examples forget ID` ([`examples`]), `/help` (and `/quit` in the interactive
//! CLI, handled there). They change or show state directly, are not recorded, and never
//! call the provider nor take a provider slot (a mode's summary is written later, by the
//! summarizer). But a chat's command runs in that chat's queue (`kernel::turn_run`), so it
//! waits behind the chat's running turn, which may be waiting for the provider; the
//! kernel's own `command` (no chat) does not. Entering or leaving a mode is subject to
//! the channel's permission rule for the sender (`Turn::may_switch_modes`).

pub mod examples;
pub mod spoken;
pub mod why;

use crate::cron::ReminderError;
use crate::modes::switch::SwitchAction;
use crate::modes::SwitchError;
use crate::modes::{ModeRegistry, ModesHandle};
pub use crate::turn::Command;
use crate::turn::{Failure, Outcome, Refusal, Reply};

/// What the commands read and act on (the kernel hands it over; this module does not
/// know the kernel).
pub struct Context<'a> {
    pub modes: &'a ModesHandle,
    pub reminders: &'a crate::cron::CronHandle,
    /// Whose reminders `/reminders` shows and may cancel.
    pub scope: crate::cron::Scope,
    pub registry: &'a ModeRegistry,
    pub household: &'a str,
    pub tz: crate::zone::Zone,
    /// The provider's one-line summary (endpoint and model).
    pub provider: String,
    /// The provider's circuits, while one is not closed.
    pub provider_circuit: Option<String>,
    /// Channels with an outbound door.
    pub doors: Vec<String>,
    /// The doors themselves, when the asker may see how each channel is connected (the
    /// owner and household members; a guest sees only their names).
    pub door_status: Option<&'a crate::outbound::Doors>,
    /// The household's agent strategy (`/strategy`).
    pub strategies: &'a crate::strategy::Strategies,
    /// Who sent the command (`None` from no chat: the kernel's own `command`); a
    /// `/mode enter` keeps it in the session's `entered.json`.
    pub who: Option<crate::modes::entered::Entrant>,
    /// The command's own turn (`/why` explains only its chat's last answer); `None`
    /// from no chat.
    pub turn: Option<&'a crate::turn::Turn>,
    pub workspace: &'a crate::workspace::Workspace,
    /// Its audit lines are flushed before `/why` reads them.
    pub calls: &'a crate::provider::Provider,
    /// Which memories `/why` may name, and their words.
    pub memory: &'a crate::memory::Memory,
    pub language: crate::config::Language,
}

/// Run a slash command for a sender who may (or may not) switch modes here.
pub async fn run(ctx: &Context<'_>, cmd: Command, may_switch: bool) -> Reply {
    if cmd.switches() && !may_switch {
        return Reply::refused(
            "你在这里没有切换模式的权限。(not allowed to switch modes here)",
            Refusal::Command,
            "mode switch not permitted for this sender",
        );
    }
    let modes = ctx.modes;
    let result = match cmd {
        Command::Enter(None) => return usage("用法: /mode enter <mode_id>"),
        Command::Enter(Some(id)) => {
            modes
                .switch(SwitchAction::Enter, Some(id), None, None, ctx.who.clone())
                .await
        }
        Command::Exit(id) => modes.switch(SwitchAction::Exit, id, None, None, None).await,
        Command::Status => return Reply::ok(status_text(ctx).await),
        Command::Reminders { all } => {
            return match ctx.reminders.list_in(all, ctx.scope.clone()).await {
                Ok(list) => Reply::ok(crate::reminders::render(&list)),
                Err(e) => Reply::new(format!("提醒暂时看不了：{e}"), reminder_outcome(&e)),
            }
        }
        Command::CancelReminder(None) => return usage("用法: /reminders cancel <编号>"),
        Command::CancelReminder(Some(id)) => {
            return match ctx.reminders.cancel_in(id, ctx.scope.clone()).await {
                Ok(r) => Reply::ok(format!("已取消提醒 #{}：{}", r.id, r.text)),
                Err(e) => Reply::new(format!("没能取消：{e}"), reminder_outcome(&e)),
            }
        }
        Command::Strategy(arg) if arg == "log" => {
            // the terminal sees the household's journal; any other chat only its own
            let chat = match &ctx.scope {
                crate::cron::Scope::Household => None,
                crate::cron::Scope::Chat { channel, chat_id } => {
                    Some((channel.clone(), chat_id.clone()))
                }
            };
            return match ctx.strategies.log(chat).await {
                Ok(t) => Reply::ok(t),
                Err(e) => Reply::failed(
                    format!("策略记录暂时看不了：{e}"),
                    Failure::Storage,
                    e.to_string(),
                ),
            };
        }
        Command::Strategy(arg) => {
            let st = modes.status().await.ok();
            let active = st.as_ref().and_then(|s| {
                let a = &s.action;
                Some((a.mode_id.as_deref()?, a.session_id.as_deref()?)).filter(|_| a.active)
            });
            return match ctx.strategies.command(&arg, may_switch, active).await {
                Ok(t) => Reply::ok(t),
                Err(e) => {
                    let outcome = match &e {
                        crate::strategy::CommandError::NotSaved(_) => {
                            Outcome::failed(Failure::Storage, e.to_string())
                        }
                        _ => Outcome::refused(Refusal::Command, e.to_string()),
                    };
                    Reply::new(e.to_string(), outcome)
                }
            };
        }
        Command::Why => return Reply::ok(why::answer(ctx).await),
        Command::Good => return examples::good(ctx).await,
        Command::GoodIn(chat) => return examples::good_in(ctx, chat).await,
        Command::Examples(mode) => return examples::list(ctx, mode).await,
        Command::ForgetExample(id) => return examples::forget(ctx, id, may_switch).await,
        Command::Help => return Reply::ok(help_text(ctx.registry)),
    };
    match result {
        Ok(done) => Reply::ok(done.to_string()),
        Err(e) => {
            let outcome = match &e {
                SwitchError::Refused(_) => Outcome::refused(Refusal::Command, e.to_string()),
                SwitchError::Failed(_) | SwitchError::NotEntered { .. } => {
                    Outcome::failed(Failure::Storage, e.to_string())
                }
            };
            Reply::new(e.to_string(), outcome)
        }
    }
}

fn usage(text: &str) -> Reply {
    Reply::refused(text, Refusal::Command, "usage")
}

/// A reminder command's error as the turn's outcome: a bad id or time is the sender's
/// to fix; a store or actor that failed is ours.
fn reminder_outcome(e: &ReminderError) -> Outcome {
    match e {
        ReminderError::When(_) | ReminderError::Book(_) => {
            Outcome::refused(Refusal::Command, e.to_string())
        }
        ReminderError::Store(_) => Outcome::failed(Failure::Storage, e.to_string()),
        ReminderError::Gone | ReminderError::Unavailable(_) => {
            Outcome::failed(Failure::Unavailable, e.to_string())
        }
    }
}

/// `/help`: the commands, with the mode ids this household has.
pub fn help_text(registry: &ModeRegistry) -> String {
    let ids: Vec<String> = registry
        .modes()
        .iter()
        .map(|m| format!("{}（{}）", m.manifest.id, m.manifest.display_name))
        .collect();
    format!(
        "命令:\n  /mode enter <mode_id>  进入模式\n  /mode exit             退出当前模式\n  /mode status | /status 查看状态\n  /reminders [all]       查看提醒（all：含已响过的）\n  /reminders cancel <编号> 取消提醒\n  /strategy [名称]        查看或切换策略（build/plan/spec/reflect/assist/custom，预设 quick/standard/careful）\n  /strategy log          最近的计划、评审和选择记录\n  /why                   上一次回答用了什么（模式、策略、资料、记忆、历史、用量）\n  /good                  把模式里刚才的回答记作例子\n  /examples [mode_id]    查看记下的例子\n  /examples forget <编号> 忘掉一个例子\n  /help                  本帮助\n  /quit                  结束终端对话（仅终端）\n可用的 mode_id: {}",
        if ids.is_empty() { "—".to_string() } else { ids.join(", ") }
    )
}

/// "可用模式:" and a line per mode with what it is for (its SKILL.md's description).
fn modes_lines(registry: &ModeRegistry, modes: &[(String, String)]) -> String {
    if modes.is_empty() {
        return "可用模式: —\n".into();
    }
    let mut out = String::from("可用模式:\n");
    for (id, name) in modes {
        let about = registry.get(id).map_or("", |m| m.description.as_str());
        out.push_str(&format!("  {name} ({id})"));
        if !about.is_empty() {
            out.push_str(&format!(" — {about}"));
        }
        out.push('\n');
    }
    out
}

/// The status text (`/status`, `homebot status`), in the household's language.
pub async fn status_text(ctx: &Context<'_>) -> String {
    let st = match ctx.modes.status().await {
        Ok(s) => s,
        Err(e) => return format!("status unavailable: {e}"),
    };
    let a = &st.action;
    let mut out = format!("homebot · {} · {}\n", ctx.household, ctx.tz);
    if a.active {
        out.push_str(&format!(
            "模式: {} ({}) 活动中{} · 会话 {} · 开始 {} · 到期 {} · 已记录 {} 轮\n",
            a.display_name.as_deref().unwrap_or("?"),
            a.mode_id.as_deref().unwrap_or("?"),
            if st.exiting { "（正在结束）" } else { "" },
            a.session_id.as_deref().unwrap_or("?"),
            a.started_at.as_deref().unwrap_or("?"),
            a.expires_at.as_deref().unwrap_or("?"),
            st.turns_recorded
        ));
        if let Some(p) = &st.paused {
            out.push_str(&format!(
                "  暂停中: {} ({}) · 会话 {}（结束子模式或说“回到{}”后继续）
",
                p.display_name.as_deref().unwrap_or("?"),
                p.mode_id.as_deref().unwrap_or("?"),
                p.session_id.as_deref().unwrap_or("?"),
                p.display_name.as_deref().unwrap_or("?"),
            ));
        }
    } else {
        out.push_str(&format!(
            "模式: 无活动模式（上次结束原因: {}）\n",
            a.exit_reason.as_deref().unwrap_or("—")
        ));
    }
    out.push_str(&modes_lines(ctx.registry, &st.modes));
    out.push_str(&format!("模型: {}\n", ctx.provider));
    if let Some(line) = &ctx.provider_circuit {
        out.push_str(&format!("{line}\n"));
    }
    let mode = (a.active)
        .then(|| Some((a.mode_id.as_deref()?, a.session_id.as_deref()?)))
        .flatten();
    out.push_str(&format!(
        "策略: {}（/strategy 查看详情）\n",
        ctx.strategies.effective(mode).await.kind
    ));
    if !ctx.doors.is_empty() {
        out.push_str(&format!("主动消息频道: {}\n", ctx.doors.join(", ")));
    }
    if let Some(doors) = ctx.door_status {
        for line in doors.status_lines().await {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push_str(&format!("进行中的轮次: {}\n", st.in_flight));
    if let Some(f) = &st.recording_failure {
        out.push_str(&format!(
            "警告: 记录写不进去（自 {}）：{}（{}）{}\n",
            f.since,
            f.error,
            f.path.display(),
            if f.disk_full {
                "；磁盘满了：新的对话先不处理，直到能再写入"
            } else {
                ""
            }
        ));
    }
    for w in &st.warnings {
        out.push_str(&format!("警告: {w}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(
            Command::parse("/mode enter cooking"),
            Command::Enter(Some("cooking".into()))
        );
        assert_eq!(Command::parse("/mode  exit"), Command::Exit(None));
        assert_eq!(Command::parse("/mode"), Command::Status);
        assert_eq!(Command::parse("/status"), Command::Status);
        assert_eq!(Command::parse("/mode enter a b"), Command::Help);
        assert_eq!(Command::parse("/whatever"), Command::Help);
        assert_eq!(
            Command::parse("/reminders"),
            Command::Reminders { all: false }
        );
        assert_eq!(
            Command::parse("/reminders cancel #3"),
            Command::CancelReminder(Some(3))
        );
        assert_eq!(
            Command::parse("/reminders cancel x"),
            Command::CancelReminder(None)
        );
        assert_eq!(
            Command::parse("/strategy"),
            Command::Strategy(String::new())
        );
        assert_eq!(
            Command::parse("/examples forget cooking-2"),
            Command::ForgetExample(Some("cooking-2".into()))
        );
        assert_eq!(
            Command::parse("/strategy custom 先说 收到"),
            Command::Strategy("custom 先说 收到".into())
        );
    }
}
