//! `switch_mode {action, mode_id, summary?}`: enter or exit a run mode. The kernel's mode
//! actor decides (it checks the user's own words of the turn); only a sender the channel
//! lets switch modes may ask.

use crate::modes::switch::{verbs_for, SwitchAction};
use crate::modes::{ModeRegistry, Switched};
use crate::provider::ToolCall;
use crate::tools::env::ToolEnv;
use crate::tools::result::ToolResult;
use crate::tools::tool::{schema_of, Permission, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The modes as the model reads them; fixed at start.
pub struct SwitchMode {
    /// `做饭模式 (cooking): enter 打开/…; exit 关闭/…` per mode.
    modes: Vec<String>,
    ids: Vec<String>,
}

impl SwitchMode {
    pub fn new(registry: &ModeRegistry) -> Self {
        let modes = registry
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
        Self {
            modes,
            ids: registry.ids(),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    #[schemars(with = "Action")]
    pub action: SwitchAction,
    // one of the registry's ids: the schema's enum is set by `SwitchMode::parameters`
    pub mode_id: String,
    /// exit only: what happened in this session, briefly
    pub summary: Option<String>,
}

// `SwitchAction` as the model sees it (the modes' type derives no schema).
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Action {
    Enter,
    Exit,
}

#[async_trait::async_trait]
impl Tool for SwitchMode {
    const NAME: &'static str = "switch_mode";
    type Args = Args;
    const PERMISSIONS: &'static [Permission] = &[Permission::SwitchModes];

    fn description(&self) -> String {
        format!(
            "Enter or exit a run mode. Call ONLY when the user's own words explicitly name the mode AND command entering or exiting it with one of its verbs — not a question about it, not a negation. The backend checks the user's words and refuses otherwise; relay the refusal reason. On exit you may give a one- or two-sentence summary of the session. Modes: {}.",
            if self.modes.is_empty() {
                "none".to_string()
            } else {
                self.modes.join("; ")
            }
        )
    }

    fn parameters(&self) -> Value {
        let mut p = schema_of::<Args>();
        p["properties"]["mode_id"]["enum"] = self.ids.clone().into();
        p
    }

    fn refused(&self, _missing: Permission) -> ToolResult {
        ToolResult::err(crate::modes::Refusal::NotPermitted)
    }

    async fn call(&self, env: &ToolEnv, a: Args, _call: &ToolCall) -> ToolResult {
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
                if let Switched::Entered { mode_id, .. } = &done {
                    // from here on this turn is in the mode, with its knowledge rules
                    env.entered(mode_id);
                }
                ToolResult::ok(done.to_string())
            }
            Err(e) => ToolResult::err(e),
        }
    }
}
