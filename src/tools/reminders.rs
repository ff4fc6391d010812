//! The reminder tools: `set_reminder`, `list_reminders`, `cancel_reminder`. A reminder
//! belongs to the chat, channel and speaker of the turn that set it and rings there; the
//! result tells the model the exact local time it will ring, so the reply can say it.

use super::{parse_args, ToolEnv, ToolResult};
use crate::cron::ReminderError;
use crate::provider::{ToolCall, ToolDef};
use serde::Deserialize;
use serde_json::json;

pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "set_reminder".into(),
            description: "Set a reminder or kitchen timer that rings later in this same chat (the speaker, QQ group or terminal that asked), e.g. \"十分钟后提醒我关火\" → in_seconds 600. Give in_seconds OR at (\"HH:MM\" today, or tomorrow if already past; or an RFC 3339 time). At most 7 days ahead. The result says the exact time it will ring: tell the user.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "in_seconds": {"type": "integer", "minimum": 1, "description": "seconds from now"},
                    "at": {"type": "string", "description": "\"HH:MM\" in the household's time zone, or RFC 3339"},
                    "text": {"type": "string", "description": "what to say when it rings, short: 关火 / 下面条"}
                },
                "required": ["text"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "list_reminders".into(),
            description: "List this chat's pending reminders (id, time, text, where they ring).".into(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        },
        ToolDef {
            name: "cancel_reminder".into(),
            description: "Cancel a pending reminder by its id (from set_reminder or list_reminders).".into(),
            parameters: json!({
                "type": "object",
                "properties": {"id": {"type": "integer"}},
                "required": ["id"],
                "additionalProperties": false
            }),
        },
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetArgs {
    #[serde(default)]
    in_seconds: Option<i64>,
    #[serde(default)]
    at: Option<String>,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CancelArgs {
    id: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// The model sees and cancels only the reminders of the chat it is talking in.
fn chat_scope(env: &ToolEnv) -> crate::cron::Scope {
    crate::cron::Scope::Chat {
        channel: env.origin.channel.clone(),
        chat_id: env.origin.chat_id.clone(),
    }
}

fn refused(e: ReminderError) -> ToolResult {
    ToolResult::err(format!("error: no reminder set: {e}"))
}

pub async fn execute(env: &ToolEnv, call: &ToolCall) -> Option<ToolResult> {
    Some(match call.name.as_str() {
        "set_reminder" => {
            let a: SetArgs = match parse_args(call) {
                Ok(a) => a,
                Err(e) => return Some(e),
            };
            match env
                .reminders
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
                Err(e) => refused(e),
            }
        }
        "list_reminders" => {
            if let Err(e) = parse_args::<NoArgs>(call) {
                return Some(e);
            }
            match env.reminders.list_in(false, chat_scope(env)).await {
                Ok(list) => ToolResult::ok(crate::reminders::render(&list)),
                Err(e) => ToolResult::err(format!("error: {e}")),
            }
        }
        "cancel_reminder" => {
            let a: CancelArgs = match parse_args(call) {
                Ok(a) => a,
                Err(e) => return Some(e),
            };
            match env.reminders.cancel_in(a.id, chat_scope(env)).await {
                Ok(r) => ToolResult::ok(format!("ok: reminder #{} ({}) cancelled", r.id, r.text)),
                Err(e) => ToolResult::err(format!("error: {e}")),
            }
        }
        _ => return None,
    })
}
