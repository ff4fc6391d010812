//! `ask_user_choice {question, options (2–6), multi_select, allow_custom, anyone}`: the
//! model asks the household to choose (`multi_select` and `allow_custom` are mutually
//! exclusive, as in seed 004: an answer in one's own words is a single answer). A valid call is put in the turn's [`ChoiceSlot`];
//! the agent's tool loop then ends the turn and the strategy layer turns the question
//! into the reply (numbered `1.` `2.` … or spoken) and keeps it pending for that chat.
//! The answer comes as the chat's next message, answered in a new turn whose tool result
//! starts `User selected:`. An invalid call is a tool error that says what is wrong and
//! asks nothing.

use super::{parse_args, ToolEnv, ToolResult};
use crate::provider::{ToolCall, ToolDef};
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const NAME: &str = "ask_user_choice";
pub const MIN_OPTIONS: usize = 2;
pub const MAX_OPTIONS: usize = 6;
pub const MAX_QUESTION_CHARS: usize = 300;
pub const MAX_OPTION_CHARS: usize = 100;

/// A question the model asked in this turn, validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Asked {
    pub question: String,
    pub options: Vec<String>,
    pub multi_select: bool,
    pub allow_custom: bool,
    /// In a group: anyone's answer counts (default: only the asker's).
    pub anyone: bool,
    /// The call, replayed with the answer as its result in the next turn.
    pub call_id: String,
    pub arguments: String,
}

/// Where a valid `ask_user_choice` call leaves its question for the agent.
#[derive(Debug, Default)]
pub struct ChoiceSlot(std::sync::Mutex<Option<Asked>>);

impl ChoiceSlot {
    pub fn is_set(&self) -> bool {
        self.0
            .lock()
            .expect("choice slot is never poisoned")
            .is_some()
    }
    pub fn take(&self) -> Option<Asked> {
        self.0.lock().expect("choice slot is never poisoned").take()
    }
    fn put(&self, a: Asked) {
        *self.0.lock().expect("choice slot is never poisoned") = Some(a);
    }
}

pub fn definition() -> ToolDef {
    ToolDef {
        name: NAME.into(),
        description: "Ask the household to choose before you go on, when the choice materially changes the result (which dish, which time, which room). Keep the question short and give 2-6 clear options. This ends your turn: the question with its numbered options is your reply, and the user's answer arrives in the next message as this call's result, `User selected: …`. Do not also answer in words.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "question": {"type": "string"},
                "options": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 6},
                "multi_select": {"type": "boolean", "description": "several options may be chosen (default false)"},
                "allow_custom": {"type": "boolean", "description": "the user may answer with their own words instead: a single answer, so not together with multi_select (default false)"},
                "anyone": {"type": "boolean", "description": "in a group chat, anyone's answer counts, not only the asker's (default false)"}
            },
            "required": ["question", "options"],
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    question: String,
    options: Vec<String>,
    #[serde(default)]
    multi_select: bool,
    #[serde(default)]
    allow_custom: bool,
    #[serde(default)]
    anyone: bool,
}

/// Check a call; the error names what is wrong and says nothing was asked.
pub fn validate(call: &ToolCall) -> Result<Asked, ToolResult> {
    let a: Args = parse_args(call)?;
    let bad = |why: String| {
        ToolResult::err(format!(
            "error: ask_user_choice: {why}. Nothing was asked; call it again with a short question and {MIN_OPTIONS}-{MAX_OPTIONS} distinct short options."
        ))
    };
    if a.multi_select && a.allow_custom {
        // seed 004: a free answer is a single answer (自定义输入与多选互斥)
        return Err(bad(
            "multi_select and allow_custom are mutually exclusive — an answer in the user's own words is a single answer; set one of them"
                .into(),
        ));
    }
    let question = a.question.trim().to_string();
    if question.is_empty() {
        return Err(bad("the question is empty".into()));
    }
    if question.chars().count() > MAX_QUESTION_CHARS {
        return Err(bad(format!(
            "the question is longer than {MAX_QUESTION_CHARS} characters"
        )));
    }
    let n = a.options.len();
    if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&n) {
        return Err(bad(format!(
            "options must have {MIN_OPTIONS} to {MAX_OPTIONS} entries, got {n}"
        )));
    }
    let mut options: Vec<String> = Vec::with_capacity(n);
    for (i, o) in a.options.iter().enumerate() {
        let o = o.trim();
        if o.is_empty() {
            return Err(bad(format!("option {} is empty", i + 1)));
        }
        if o.chars().count() > MAX_OPTION_CHARS {
            return Err(bad(format!(
                "option {} is longer than {MAX_OPTION_CHARS} characters",
                i + 1
            )));
        }
        if options.iter().any(|p| p == o) {
            return Err(bad(format!("option {} repeats {o:?}", i + 1)));
        }
        options.push(o.to_string());
    }
    Ok(Asked {
        question,
        options,
        multi_select: a.multi_select,
        allow_custom: a.allow_custom,
        anyone: a.anyone,
        call_id: call.id.clone(),
        arguments: call.arguments.clone(),
    })
}

pub fn execute(env: &ToolEnv, call: &ToolCall) -> ToolResult {
    match validate(call) {
        Ok(a) => {
            let n = a.options.len();
            env.choice.put(a);
            ToolResult::ok(format!(
                "asked with {n} options; the turn ends here and the answer comes as the next message"
            ))
        }
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: NAME.into(),
            arguments: args.to_string(),
        }
    }

    #[test]
    fn two_to_six_distinct_options() {
        let ok = validate(&call(
            json!({"question": "做哪个？", "options": ["番茄炒蛋", " 青椒肉丝 "]}),
        ))
        .unwrap();
        assert_eq!(ok.options, ["番茄炒蛋", "青椒肉丝"]);
        for n in [0, 1, 7] {
            let opts: Vec<String> = (0..n).map(|i| format!("o{i}")).collect();
            let e = validate(&call(json!({"question": "q", "options": opts}))).unwrap_err();
            assert!(e.is_error);
            assert!(
                e.content
                    .contains(&format!("options must have 2 to 6 entries, got {n}")),
                "{}",
                e.content
            );
        }
        let e = validate(&call(json!({"question": "q", "options": ["a", "a"]}))).unwrap_err();
        assert!(e.content.contains("repeats"), "{}", e.content);
        let e = validate(&call(json!({"question": " ", "options": ["a", "b"]}))).unwrap_err();
        assert!(e.content.contains("question is empty"), "{}", e.content);
        let e = validate(&call(
            json!({"question": "q", "options": ["a", "b"], "x": 1}),
        ))
        .unwrap_err();
        assert!(e.content.contains("invalid arguments"), "{}", e.content);
    }

    #[test]
    fn multi_select_and_allow_custom_are_refused_together() {
        let both = json!({"question": "做哪些？", "options": ["番茄炒蛋", "青椒肉丝"],
                          "multi_select": true, "allow_custom": true});
        let e = validate(&call(both)).unwrap_err();
        assert!(e.is_error);
        assert!(
            e.content.contains("mutually exclusive") && e.content.contains("Nothing was asked"),
            "{}",
            e.content
        );
        for (multi, custom) in [(true, false), (false, true), (false, false)] {
            let one = json!({"question": "做哪些？", "options": ["番茄炒蛋", "青椒肉丝"],
                             "multi_select": multi, "allow_custom": custom});
            let a = validate(&call(one)).unwrap();
            assert_eq!((a.multi_select, a.allow_custom), (multi, custom));
        }
    }
}
