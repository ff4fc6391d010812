//! `ask_user_choice`: the tool over [`crate::tools::choice`] (its arguments, their rules
//! and the turn's slot). A valid call leaves its question in the slot, which ends the
//! turn; an invalid one is a tool error that says what is wrong and asks nothing.

use super::rules::{validate, Args, NAME};
use crate::provider::ToolCall;
use crate::tools::env::ToolEnv;
use crate::tools::result::ToolResult;
use crate::tools::tool::Tool;

pub struct AskUserChoice;

#[async_trait::async_trait]
impl Tool for AskUserChoice {
    const NAME: &'static str = NAME;
    type Args = Args;

    fn description(&self) -> String {
        "Ask the household to choose before you go on, when the choice materially changes the result (which dish, which time, which room). Keep the question short and give 2-6 clear options. This ends your turn: the question with its numbered options is your reply, and the user's answer arrives in the next message as this call's result, `User selected: …`. Do not also answer in words.".into()
    }

    async fn call(&self, env: &ToolEnv, a: Args, call: &ToolCall) -> ToolResult {
        match validate(a, &call.id, &call.arguments) {
            Ok(asked) => {
                let n = asked.options.len();
                env.choice.put(asked);
                ToolResult::ok(format!(
                    "asked with {n} options; the turn ends here and the answer comes as the next message"
                ))
            }
            Err(e) => ToolResult::err(e),
        }
    }
}
