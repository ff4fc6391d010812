//! `offer_mode {mode_id}`: the model asks the backend to offer a mode when someone
//! clearly starts its activity outside any mode. The backend decides
//! ([`crate::modes::offer`]: the mode's `offer.words` said plainly by this speaker now, no
//! mode active, once per chat per day) and words it: a fixed question, "要打开做饭模式吗？"
//! with the options 打开 / 不用, put in the turn's `ask_user_choice` slot, which ends the
//! turn. Never to a guest, nor to a sender who may not switch modes here. The answer is
//! the strategy layer's to judge (`strategy::offer`), never the model's.

use crate::modes::offer::{question, NO, YES};
use crate::modes::ModeRegistry;
use crate::provider::ToolCall;
use crate::tools::choice::{validate, Args as ChoiceArgs, OfferTag};
use crate::tools::env::ToolEnv;
use crate::tools::result::ToolResult;
use crate::tools::tool::{schema_of, Permission, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The modes whose `mode.json` lets them be offered; fixed at start.
pub struct OfferMode {
    /// `做饭模式 (cooking)` per offerable mode.
    modes: Vec<String>,
    ids: Vec<String>,
}

impl OfferMode {
    /// `None` when no mode may be offered (then the tool is not offered either).
    pub fn new(registry: &ModeRegistry) -> Option<Self> {
        let offerable: Vec<_> = registry
            .modes()
            .iter()
            .filter(|m| m.manifest.offer.is_some())
            .collect();
        (!offerable.is_empty()).then(|| Self {
            modes: offerable
                .iter()
                .map(|m| format!("{} ({})", m.manifest.display_name, m.manifest.id))
                .collect(),
            ids: offerable.iter().map(|m| m.manifest.id.clone()).collect(),
        })
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // one of the offerable ids: the schema's enum is set by `OfferMode::parameters`
    pub mode_id: String,
}

#[async_trait::async_trait]
impl Tool for OfferMode {
    const NAME: &'static str = "offer_mode";
    type Args = Args;
    const PERMISSIONS: &'static [Permission] = &[Permission::SwitchModes];

    fn description(&self) -> String {
        format!(
            "Outside any mode, when the user clearly starts, now, the activity a mode is for, ask the backend to offer that mode. The backend decides whether to ask (the user's own words must start the activity; at most once a day per chat) and words the question itself; if it asks, your turn ends there. If it does not, answer as usual. Never use switch_mode for this. Modes that may be offered: {}.",
            self.modes.join("; ")
        )
    }

    fn parameters(&self) -> Value {
        let mut p = schema_of::<Args>();
        p["properties"]["mode_id"]["enum"] = self.ids.clone().into();
        p
    }

    fn refused(&self, _missing: Permission) -> ToolResult {
        ToolResult::err(
            "not offered: this sender may not switch modes in this chat; answer as usual",
        )
    }

    async fn call(&self, env: &ToolEnv, a: Args, call: &ToolCall) -> ToolResult {
        if env.trust == crate::turn::Trust::Guest {
            return ToolResult::err(
                "not offered: modes are offered only to a known household member; answer as usual",
            );
        }
        if env.mode().is_some() {
            return ToolResult::err("not offered: a mode is active already; answer as usual");
        }
        let chat_key = format!("{}:{}", env.origin.channel, env.origin.chat_id);
        let offered = match env
            .modes
            .offer(a.mode_id, chat_key, env.user_text.clone())
            .await
        {
            Ok(Ok(o)) => o,
            Ok(Err(no)) => return ToolResult::err(no),
            Err(e) => return ToolResult::err(format!("not offered: {e}; answer as usual")),
        };
        let q = question(&offered.display_name);
        let arguments = serde_json::json!({"question": q, "options": [YES, NO]}).to_string();
        let parsed: ChoiceArgs = serde_json::from_str(&arguments)
            .expect("the offer's question is valid choice arguments");
        let mut asked = validate(parsed, &call.id, &arguments)
            .expect("the offer's fixed question passes the choice rules");
        asked.offer = Some(OfferTag {
            mode_id: offered.mode_id,
            display_name: offered.display_name.clone(),
        });
        env.choice.put(asked);
        ToolResult::ok(format!(
            "offered: the backend asked “{q}” and the turn ends here; the answer is the backend's to judge"
        ))
    }
}
