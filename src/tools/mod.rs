//! The tools the agent offers the model, in a fixed order (part of the stable prompt
//! prefix): `switch_mode`, then `set_strategy` of [`set_strategy`] (both checked against
//! the user's own words), then the workspace file tools of [`files`] — `read_file`,
//! `list_files`, `write_file` — then the reminder tools of [`reminders`] —
//! `set_reminder`, `list_reminders`, `cancel_reminder` — then the scene-memory tools of
//! [`memory`]: `memory_commit`, `memory_search` — then `ask_user_choice` of [`choice`]
//! (offered in every strategy, so switching strategy never changes the tools).
//!
//! [`execute`] runs one call within the turn's budget ([`ToolEnv::limits`]): arguments
//! longer than `tools.max_argument_bytes` are refused, `write_file` may write at most
//! `tools.max_write_bytes_per_turn` per turn and each writable folder holds at most its
//! quota. The per-response and per-turn call counts are the agent's to enforce (it sees
//! the calls of a response together). File I/O runs on the blocking pool, never on an
//! async worker: a slow disk or a file that would block must not stall other chats.

pub mod choice;
pub mod files;
mod guard;
pub mod home;
pub mod memory;
pub mod reminders;
pub mod set_strategy;
mod zones;

pub use files::{resolve_in, FileAccess, ZoneLimits, READ_LIMIT, WRITE_LIMIT};

use crate::config::ToolsConfig;
use crate::modes::core::TurnId;
use crate::modes::switch::SwitchAction;
use crate::modes::{ModeRegistry, ModesHandle};
use crate::provider::{ToolCall, ToolDef};
use serde::Deserialize;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Everything a tool call may touch during one turn.
pub struct ToolEnv {
    pub files: std::sync::Arc<FileAccess>,
    pub modes: ModesHandle,
    pub turn_id: TurnId,
    /// The user's original words of this turn (for `switch_mode` validation).
    pub user_text: String,
    /// The channel's permission rule for this sender.
    pub may_switch_modes: bool,
    /// The mode the turn runs in (its knowledge is readable; other modes' is not); set
    /// when the turn itself enters one.
    pub mode: std::sync::Mutex<Option<String>>,
    /// The caps of `[tools]`.
    pub limits: ToolsConfig,
    /// Bytes `write_file` has written in this turn so far.
    pub written: AtomicU64,
    /// The household's reminders, and where this turn's would ring.
    pub reminders: crate::cron::CronHandle,
    pub origin: crate::reminders::Origin,
    /// Scene memory, and where this turn stands in it.
    pub memory: memory::MemoryEnv,
    /// A question `ask_user_choice` asked in this turn (it ends the turn).
    pub choice: choice::ChoiceSlot,
    /// Where an accepted `set_strategy` goes (the strategy layer sets it on every turn it
    /// runs; `None`: the strategy cannot be changed from this call).
    pub strategy: Option<std::sync::Arc<dyn set_strategy::Setter>>,
    /// Home Assistant's tools (`None`: not configured).
    pub home: Option<home::HomeEnv>,
}

/// Tool definitions, always in this order, so the prefix stays byte-identical. The
/// modes, their names and verbs come from the registry (nothing here names a mode).
pub fn definitions(registry: &ModeRegistry, writable: &[String]) -> Vec<ToolDef> {
    use crate::modes::switch::{verbs_for, SwitchAction};
    let mode_ids = registry.ids();
    let per_mode: Vec<String> = registry
        .modes()
        .iter()
        .map(|m| {
            format!(
                "{} ({}): enter {}; exit {}",
                m.manifest.display_name,
                m.manifest.id,
                verbs_for(&m.manifest, SwitchAction::Enter).join("/"),
                verbs_for(&m.manifest, SwitchAction::Exit).join("/")
            )
        })
        .collect();
    vec![
        ToolDef {
            name: "switch_mode".into(),
            description: format!(
                "Enter or exit a run mode. Call ONLY when the user's own words explicitly name the mode AND command entering or exiting it with one of its verbs — not a question about it, not a negation. The backend checks the user's words and refuses otherwise; relay the refusal reason. On exit you may give a one- or two-sentence summary of the session. Modes: {}.",
                if per_mode.is_empty() {
                    "none".to_string()
                } else {
                    per_mode.join("; ")
                }
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["enter", "exit"]},
                    "mode_id": {"type": "string", "enum": mode_ids},
                    "summary": {"type": "string", "description": "exit only: what happened in this session, briefly"}
                },
                "required": ["action", "mode_id"],
                "additionalProperties": false
            }),
        },
        set_strategy::definition(),
        ToolDef {
            name: "read_file".into(),
            description: "Read a UTF-8 text file in the household workspace (an index, a note, a session summary; the paths the [上下文] block names). Paths are relative to the workspace.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "list_files".into(),
            description: "List a folder of the household workspace (folders end with /).".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "default: the workspace root"}},
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "write_file".into(),
            description: format!(
                "Create or replace a text file in the household workspace, e.g. to keep something the family asked you to save. Allowed only below: {}.",
                writable.join(", ")
            ),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        },
    ]
    .into_iter()
    .chain(reminders::definitions())
    .chain(memory::definitions())
    .chain([choice::definition()])
    .collect()
}

/// What a tool call did: the text returned to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub content: String,
    pub is_error: bool,
}

impl ToolResult {
    fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
        }
    }
    fn err(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SwitchArgs {
    action: SwitchAction,
    mode_id: String,
    #[serde(default)]
    summary: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathArgs {
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

pub(crate) fn parse_args<T: for<'de> Deserialize<'de>>(call: &ToolCall) -> Result<T, ToolResult> {
    let raw = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        &call.arguments
    };
    serde_json::from_str(raw).map_err(|e| {
        ToolResult::err(format!(
            "error: invalid arguments for {}: {e}. Call it again with valid JSON arguments.",
            call.name
        ))
    })
}

/// Run `f` (file-tool work that blocks on the disk) on the blocking pool.
async fn blocking(f: impl FnOnce() -> ToolResult + Send + 'static) -> ToolResult {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| ToolResult::err(format!("error: the tool failed: {e}")))
}

pub async fn execute(env: &ToolEnv, call: &ToolCall) -> ToolResult {
    let max_args = env.limits.max_argument_bytes;
    if call.arguments.len() > max_args {
        return ToolResult::err(format!(
            "error: the arguments of this {} call are {} bytes; the limit is {max_args}. It was not run; split the work into smaller calls.",
            call.name,
            call.arguments.len()
        ));
    }
    let mode = env
        .mode
        .lock()
        .expect("the tool mode lock is never poisoned")
        .clone();
    let files = env.files.clone();
    match call.name.as_str() {
        "switch_mode" => {
            let a: SwitchArgs = match parse_args(call) {
                Ok(a) => a,
                Err(e) => return e,
            };
            if !env.may_switch_modes {
                return ToolResult::err(crate::modes::Refusal::NotPermitted.to_string());
            }
            match env
                .modes
                .switch(
                    a.action,
                    Some(a.mode_id),
                    a.summary,
                    Some((env.turn_id, env.user_text.clone())),
                )
                .await
            {
                Ok(done) => {
                    if let crate::modes::Switched::Entered { mode_id, .. } = &done {
                        // from here on this turn is in the mode, with its knowledge rules
                        *env.mode.lock().expect("the tool mode lock is never poisoned") =
                            Some(mode_id.clone());
                    }
                    ToolResult::ok(done.to_string())
                }
                Err(e) => ToolResult::err(e.to_string()),
            }
        }
        "read_file" => match parse_args::<PathArgs>(call) {
            Ok(a) => {
                let path = a.path.unwrap_or_default();
                blocking(move || files::read_file_in(&files, &path, mode.as_deref())).await
            }
            Err(e) => e,
        },
        "list_files" => match parse_args::<PathArgs>(call) {
            Ok(a) => {
                let path = a.path.unwrap_or_else(|| ".".into());
                blocking(move || files::list_files_in(&files, &path, mode.as_deref())).await
            }
            Err(e) => e,
        },
        "write_file" => match parse_args::<WriteArgs>(call) {
            Ok(a) => write_within_budget(env, a, files, mode).await,
            Err(e) => e,
        },
        choice::NAME => choice::execute(env, call),
        set_strategy::NAME => set_strategy::execute(env, call).await,
        "memory_commit" | "memory_search" => memory::execute(env, call)
            .await
            .expect("the memory tools run their own names"),
        home::STATE | home::CONTROL => home::execute(env, call)
            .await
            .expect("the home tools run their own names"),
        other => match reminders::execute(env, call).await {
            Some(r) => r,
            None => ToolResult::err(format!(
                "error: there is no tool named {other:?}; available: switch_mode, set_strategy, read_file, list_files, write_file, set_reminder, list_reminders, cancel_reminder, memory_commit, memory_search, ask_user_choice"
            )),
        },
    }
}

/// `write_file`, if this turn's write budget allows it.
async fn write_within_budget(
    env: &ToolEnv,
    a: WriteArgs,
    files: Arc<FileAccess>,
    mode: Option<String>,
) -> ToolResult {
    let budget = env.limits.max_write_bytes_per_turn;
    let len = a.content.len() as u64;
    let so_far = env.written.load(Ordering::SeqCst);
    if so_far.saturating_add(len) > budget {
        return ToolResult::err(format!(
            "error: not written: this turn has written {so_far} bytes and {} more would pass the limit of {budget} bytes per turn; finish the answer, the rest can be saved in a later message",
            len
        ));
    }
    let zone = ZoneLimits {
        max_bytes: env.limits.max_zone_bytes,
        max_files: env.limits.max_zone_files,
    };
    let r =
        blocking(move || files::write_file_in(&files, &a.path, &a.content, mode.as_deref(), &zone))
            .await;
    if !r.is_error {
        env.written.fetch_add(len, Ordering::SeqCst);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_have_a_fixed_order() {
        let names: Vec<_> = definitions(&ModeRegistry::default(), &["notes/".into()])
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(
            names,
            [
                "switch_mode",
                "set_strategy",
                "read_file",
                "list_files",
                "write_file",
                "set_reminder",
                "list_reminders",
                "cancel_reminder",
                "memory_commit",
                "memory_search",
                "ask_user_choice"
            ]
        );
    }
}
