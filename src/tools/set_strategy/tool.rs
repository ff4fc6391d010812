//! `set_strategy {name}`: the tool over the words and guard of
//! [`crate::tools::set_strategy`]. Only a sender who may switch modes here may ask (the
//! permission `/strategy` follows); the user's own words must ask for that strategy.

use super::rules::{spoken, validate, NAME, SPOKEN};
use crate::provider::ToolCall;
use crate::tools::env::ToolEnv;
use crate::tools::result::ToolResult;
use crate::tools::tool::{schema_of, Permission, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

pub struct SetStrategy;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // one of `SPOKEN`: the schema's enum is set by `SetStrategy::parameters`; a name
    // outside it gets the list, not a parse error
    pub name: String,
}

/// Why a `set_strategy` call changed nothing (besides the guard's `Refusal`).
#[derive(Debug, Error)]
pub enum StrategyError {
    #[error("error: there is no strategy or preset named {asked:?}; one of: {known}")]
    Unknown { asked: String, known: String },
    #[error("refused: 你在这里没有切换策略的权限。(not allowed to switch the strategy here)")]
    NotPermitted,
    #[error("error: the strategy cannot be changed from here; use /strategy {0}")]
    NoSetter(&'static str),
}

fn names() -> Vec<&'static str> {
    SPOKEN.iter().map(|s| s.name).collect()
}

#[async_trait::async_trait]
impl Tool for SetStrategy {
    const NAME: &'static str = NAME;
    type Args = Args;
    const PERMISSIONS: &'static [Permission] = &[Permission::SwitchModes];

    fn description(&self) -> String {
        "Change how you work, for the whole household: a strategy (build: act directly; plan: a plan the household confirms first; spec: a spec confirmed first; reflect: draft, review, revise; assist: ask before a choice that matters; custom: the stored custom instruction) or a preset (quick, standard, careful). Call ONLY when the user's own words ask for it — “先给我个计划再做” → plan, “直接做吧” → build, “用反思模式” → reflect, “switch to careful” → careful — not for a question about strategies, not for words that only describe a task. The backend checks the user's words and refuses otherwise; relay the refusal reason. The change applies from the user's next message.".into()
    }

    fn parameters(&self) -> Value {
        let mut p = schema_of::<Args>();
        p["properties"]["name"]["enum"] = names().into();
        p
    }

    fn refused(&self, _missing: Permission) -> ToolResult {
        ToolResult::err(StrategyError::NotPermitted)
    }

    async fn call(&self, env: &ToolEnv, a: Args, _call: &ToolCall) -> ToolResult {
        let Some(s) = spoken(&a.name) else {
            return ToolResult::err(StrategyError::Unknown {
                asked: a.name,
                known: names().join(", "),
            });
        };
        if let Err(why) = validate(s, &env.user_text) {
            return ToolResult::err(why);
        }
        let Some(setter) = &env.strategy else {
            return ToolResult::err(StrategyError::NoSetter(s.name));
        };
        match setter.set(s.name).await {
            Ok(text) => ToolResult::ok(format!("{text}\n（从下一句话起生效。）")),
            Err(e) => ToolResult::err(format!("error: {e}")),
        }
    }
}
