//! The reminder tools: `set_reminder`, `list_reminders`, `cancel_reminder`. A reminder
//! belongs to the chat, channel and speaker of the turn that set it and rings there; the
//! result tells the model the exact local time it will ring, so the reply can say it.

use crate::cron::{CronHandle, ReminderError};
use crate::provider::ToolCall;
use crate::tools::env::ToolEnv;
use crate::tools::result::ToolResult;
use crate::tools::services::service;
use crate::tools::tool::Tool;
use schemars::JsonSchema;
use serde::Deserialize;

/// The model sees and cancels only the reminders of the chat it is talking in.
fn chat_scope(env: &ToolEnv) -> crate::cron::Scope {
    crate::cron::Scope::Chat {
        channel: env.origin.channel.clone(),
        chat_id: env.origin.chat_id.clone(),
    }
}

fn failed(e: ReminderError) -> ToolResult {
    ToolResult::err(format!("error: {e}"))
}

pub struct SetReminder {
    cron: Option<CronHandle>,
}

impl SetReminder {
    pub fn new(cron: Option<CronHandle>) -> Self {
        Self { cron }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetArgs {
    /// seconds from now
    #[schemars(range(min = 1))]
    pub in_seconds: Option<i64>,
    /// "HH:MM" in the household's time zone, or RFC 3339
    pub at: Option<String>,
    /// what to say when it rings, short: 关火 / 下面条
    pub text: String,
}

#[async_trait::async_trait]
impl Tool for SetReminder {
    const NAME: &'static str = "set_reminder";
    type Args = SetArgs;

    fn description(&self) -> String {
        "Set a reminder or kitchen timer that rings later in this same chat (the speaker, QQ group or terminal that asked), e.g. \"十分钟后提醒我关火\" → in_seconds 600. Give in_seconds OR at (\"HH:MM\" today, or tomorrow if already past; or an RFC 3339 time). At most 7 days ahead. The result says the exact time it will ring: tell the user.".into()
    }

    /// When it rings matters later ("几点提醒我？").
    fn keeps_result(&self) -> bool {
        true
    }

    async fn call(&self, env: &ToolEnv, a: SetArgs, _call: &ToolCall) -> ToolResult {
        let cron = match service(&self.cron, "the reminder service") {
            Ok(c) => c,
            Err(e) => return e,
        };
        match cron
            .set(a.in_seconds, a.at, a.text, env.origin.clone())
            .await
        {
            Ok(r) => ToolResult::ok(format!(
                "ok: reminder #{} set; it rings at {} ({}) in this chat ({} {}). 提醒 #{} 已设好，{} 响：{}",
                r.id,
                r.due_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
                r.due_at.format("%H:%M:%S"),
                r.origin.channel,
                r.origin.target,
                r.id,
                r.due_at.format("%m月%d日 %H:%M:%S"),
                r.text
            )),
            Err(e) => ToolResult::err(format!("error: no reminder set: {e}")),
        }
    }
}

pub struct ListReminders {
    cron: Option<CronHandle>,
}

impl ListReminders {
    pub fn new(cron: Option<CronHandle>) -> Self {
        Self { cron }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[async_trait::async_trait]
impl Tool for ListReminders {
    const NAME: &'static str = "list_reminders";
    type Args = NoArgs;

    fn description(&self) -> String {
        "List this chat's pending reminders (id, time, text, where they ring).".into()
    }

    async fn call(&self, env: &ToolEnv, _a: NoArgs, _call: &ToolCall) -> ToolResult {
        let cron = match service(&self.cron, "the reminder service") {
            Ok(c) => c,
            Err(e) => return e,
        };
        match cron.list_in(false, chat_scope(env)).await {
            Ok(list) => ToolResult::ok(crate::reminders::render(&list)),
            Err(e) => failed(e),
        }
    }
}

pub struct CancelReminder {
    cron: Option<CronHandle>,
}

impl CancelReminder {
    pub fn new(cron: Option<CronHandle>) -> Self {
        Self { cron }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelArgs {
    // the model is told "integer", as before; a negative or huge id is a parse error
    #[schemars(with = "i64")]
    pub id: u32,
}

#[async_trait::async_trait]
impl Tool for CancelReminder {
    const NAME: &'static str = "cancel_reminder";
    type Args = CancelArgs;

    fn description(&self) -> String {
        "Cancel a pending reminder by its id (from set_reminder or list_reminders).".into()
    }

    /// Which reminder is gone matters later.
    fn keeps_result(&self) -> bool {
        true
    }

    async fn call(&self, env: &ToolEnv, a: CancelArgs, _call: &ToolCall) -> ToolResult {
        let cron = match service(&self.cron, "the reminder service") {
            Ok(c) => c,
            Err(e) => return e,
        };
        match cron.cancel_in(a.id, chat_scope(env)).await {
            Ok(r) => ToolResult::ok(format!("ok: reminder #{} ({}) cancelled", r.id, r.text)),
            Err(e) => failed(e),
        }
    }
}
