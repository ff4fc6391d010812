//! The tools the agent offers the model, in a fixed order (part of the stable prompt
//! prefix): `switch_mode`, then the workspace file tools of [`files`] — `read_file`,
//! `list_files`, `write_file`.

pub mod files;

pub use files::{resolve_in, FileAccess, READ_LIMIT, WRITE_LIMIT};

use crate::modes::core::TurnId;
use crate::modes::switch::SwitchAction;
use crate::modes::ModesHandle;
use crate::provider::{ToolCall, ToolDef};
use serde::Deserialize;
use serde_json::json;

/// Everything a tool call may touch during one turn.
pub struct ToolEnv {
    pub files: std::sync::Arc<FileAccess>,
    pub modes: ModesHandle,
    pub turn_id: TurnId,
    /// The user's original words of this turn (for `switch_mode` validation).
    pub user_text: String,
    /// The channel's permission rule for this sender.
    pub may_switch_modes: bool,
    /// The mode the turn runs in (its knowledge is readable; other modes' is not).
    pub mode: Option<String>,
}

/// Tool definitions, always in this order, so the prefix stays byte-identical.
pub fn definitions(mode_ids: &[String], writable: &[String]) -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "switch_mode".into(),
            description: format!(
                "Enter or exit a run mode. Call ONLY when the user's own words explicitly name the mode (its display name, as listed in the system prompt) AND say to enter it ({}) or exit it ({}). The backend checks the user's words and refuses otherwise; relay the refusal reason. On exit you may give a one- or two-sentence summary of the session.",
                crate::modes::switch::DEFAULT_ENTER_VERBS.join("/"),
                crate::modes::switch::DEFAULT_EXIT_VERBS.join("/")
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
        ToolDef {
            name: "read_file".into(),
            description: "Read a UTF-8 text file in the household workspace (e.g. cooking/history.md, a recipe, a summary). Paths are relative to the workspace.".into(),
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
                "Create or replace a text file in the household workspace, e.g. save a recipe the family asked you to keep. Allowed only below: {}.",
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

fn parse_args<T: for<'de> Deserialize<'de>>(call: &ToolCall) -> Result<T, ToolResult> {
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

pub async fn execute(env: &ToolEnv, call: &ToolCall) -> ToolResult {
    let mode = env.mode.as_deref();
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
                Ok(done) => ToolResult::ok(done.to_string()),
                Err(e) => ToolResult::err(e.to_string()),
            }
        }
        "read_file" => match parse_args::<PathArgs>(call) {
            Ok(a) => files::read_file_in(&env.files, a.path.as_deref().unwrap_or(""), mode),
            Err(e) => e,
        },
        "list_files" => match parse_args::<PathArgs>(call) {
            Ok(a) => files::list_files_in(&env.files, a.path.as_deref().unwrap_or("."), mode),
            Err(e) => e,
        },
        "write_file" => match parse_args::<WriteArgs>(call) {
            Ok(a) => files::write_file_in(&env.files, &a.path, &a.content, mode),
            Err(e) => e,
        },
        other => ToolResult::err(format!(
            "error: there is no tool named {other:?}; available: switch_mode, read_file, list_files, write_file"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_have_a_fixed_order() {
        let names: Vec<_> = definitions(&["cooking".into()], &["notes/".into()])
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(
            names,
            ["switch_mode", "read_file", "list_files", "write_file"]
        );
    }
}
