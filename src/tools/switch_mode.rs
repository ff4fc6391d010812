//! `switch_mode {action, mode_id, summary?}`: enter or exit a run mode. The kernel's mode
//! actor decides (it checks the user's own words of the turn); only a sender the channel
//! lets switch modes may ask. When some mode's `mode.json` lets homebot offer it, the
//! tool also takes `action: "offer"` — the model asks the backend to offer that mode
//! (see the `offer_mode` file); without such a mode its definition is what it always was.

use crate::modes::switch::{verbs_for, SwitchAction};
use crate::modes::{ModeRegistry, ModesHandle, Refusal, SwitchError, Switched};
use crate::provider::ToolCall;
use crate::tools::env::ToolEnv;
use crate::tools::result::ToolResult;
use crate::tools::services::service;
use crate::tools::tool::{schema_of, Permission, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The modes as the model reads them; fixed at start.
pub struct SwitchMode {
    /// `做饭模式 (cooking): <its SKILL.md's description>; enter 打开/…; exit 关闭/…` per mode.
    modes: Vec<String>,
    ids: Vec<String>,
    /// Some mode is a sub-mode of another.
    nested: bool,
    /// `做饭模式 (cooking)` per mode that may be offered.
    offerable: Vec<String>,
    /// The ModeManager the switches go to.
    manager: Option<ModesHandle>,
}

impl SwitchMode {
    pub fn new(registry: &ModeRegistry, manager: Option<ModesHandle>) -> Self {
        let modes = registry
            .modes()
            .iter()
            .map(|m| {
                format!(
                    "{} ({}{}): {}enter {}; exit {}",
                    m.manifest.display_name,
                    m.manifest.id,
                    match m.manifest.parent.as_deref() {
                        Some(p) => format!(", a sub-mode of {p}"),
                        None => String::new(),
                    },
                    about(&m.description),
                    verbs_for(&m.manifest, SwitchAction::Enter).join("/"),
                    verbs_for(&m.manifest, SwitchAction::Exit).join("/")
                )
            })
            .collect();
        let offerable = registry
            .modes()
            .iter()
            .filter(|m| m.manifest.offer.is_some())
            .map(|m| format!("{} ({})", m.manifest.display_name, m.manifest.id))
            .collect();
        let nested = registry.modes().iter().any(|m| m.manifest.parent.is_some());
        Self {
            modes,
            nested,
            ids: registry.ids(),
            offerable,
            manager,
        }
    }
}

/// A mode's description as the tool shows it: "<description>; ", or nothing.
fn about(description: &str) -> String {
    if description.is_empty() {
        String::new()
    } else {
        format!("{}; ", description.trim_end_matches(['。', '.']))
    }
}

/// What the model asks for: a switch, or (when a mode may be offered) an offer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Requested {
    Enter,
    Exit,
    Offer,
}

// By hand, so that a wrong action is answered with the switch actions every household
// has ("expected `enter` or `exit`"); `offer` is described where a mode may be offered.
impl<'de> Deserialize<'de> for Requested {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "enter" => Ok(Requested::Enter),
            "exit" => Ok(Requested::Exit),
            "offer" => Ok(Requested::Offer),
            other => Err(serde::de::Error::unknown_variant(other, &["enter", "exit"])),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    #[schemars(with = "Action")]
    pub action: Requested,
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
        let mut d = format!(
            "Enter or exit a run mode. Call ONLY when the user's own words explicitly name the mode AND command entering or exiting it with one of its verbs — not a question about it, not a negation. The backend checks the user's words and refuses otherwise; relay the refusal reason. On exit you may give a one- or two-sentence summary of the session. Modes: {}.",
            if self.modes.is_empty() {
                "none".to_string()
            } else {
                self.modes.join("; ")
            }
        );
        if self.nested {
            d.push_str(" A sub-mode is entered only inside its parent mode, which it pauses; to go back to the parent (e.g. \"回到做饭模式\") call enter with the parent's mode_id, and give the summary then: it is carried back into the parent's conversation. Exiting the parent ends both.");
        }
        if !self.offerable.is_empty() {
            d.push_str(&format!(
                " Outside any mode, when the user clearly starts, now, the activity a mode is for but does not name the mode, call it with action \"offer\" to ask the backend to offer that mode: the backend decides whether to ask (the user's own words must start the activity; at most once a day per chat) and words the question itself; if it asks, your turn ends there, and if not, answer as usual. Modes that may be offered: {}.",
                self.offerable.join("; ")
            ));
        }
        d
    }

    fn parameters(&self) -> Value {
        let mut p = schema_of::<Args>();
        p["properties"]["mode_id"]["enum"] = self.ids.clone().into();
        if !self.offerable.is_empty() {
            p["properties"]["action"]["enum"] = serde_json::json!(["enter", "exit", "offer"]);
        }
        p
    }

    fn refused(&self, _missing: Permission) -> ToolResult {
        ToolResult::err(crate::modes::Refusal::NotPermitted)
    }

    async fn call(&self, env: &ToolEnv, a: Args, call: &ToolCall) -> ToolResult {
        if a.action == Requested::Offer && self.offerable.is_empty() {
            return ToolResult::err("not offered: no mode may be offered; answer as usual");
        }
        let manager = match service(&self.manager, "the mode manager") {
            Ok(m) => m,
            Err(e) => return e,
        };
        let action = match a.action {
            Requested::Enter => SwitchAction::Enter,
            Requested::Exit => SwitchAction::Exit,
            Requested::Offer => {
                return super::offer_mode::offer(env, manager, a.mode_id, call).await
            }
        };
        match manager
            .switch(
                action,
                Some(a.mode_id),
                a.summary,
                Some((env.turn_id, env.user_text.clone())),
                None,
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
            // words the guard could not place: the backend asks the person
            Err(SwitchError::Refused(Refusal::Words(w))) if w.kind.asks() => {
                crate::tools::offer_mode::confirm(env, &w, call)
            }
            Err(e) => ToolResult::err(e),
        }
    }
}
