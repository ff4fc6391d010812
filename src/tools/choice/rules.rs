//! `ask_user_choice {question, options (2–6), multi_select, allow_custom, anyone}`: the
//! model asks the household to choose (`multi_select` and `allow_custom` are mutually
//! exclusive, as the choice tool was specified: an answer in one's own words is a single answer). This file
//! holds its arguments, their rules and the turn's [`ChoiceSlot`]; the tool itself is
//! `tool.rs` beside it. A valid call is put in the turn's [`ChoiceSlot`];
//! the agent's tool loop then ends the turn and the strategy layer turns the question
//! into the reply (numbered `1.` `2.` … or spoken) and keeps it pending for that chat.
//! The answer comes as the chat's next message, answered in a new turn whose tool result
//! starts `User selected:`. An invalid call is a tool error that says what is wrong and
//! asks nothing.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

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
    /// Set when the question is the backend's, never the model's: its offer of a mode
    /// (`switch_mode` with `action: "offer"`), or its question after the words of a switch
    /// were unsure. Its answer is judged by the backend, never by the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer: Option<OfferTag>,
}

/// The mode a backend's question is about, what a yes does, and why it was asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OfferTag {
    pub mode_id: String,
    pub display_name: String,
    /// What a yes does (an offer always enters).
    #[serde(default)]
    pub action: crate::modes::switch::SwitchAction,
    #[serde(default)]
    pub why: Asking,
    /// An enter that goes back to the parent a running sub-mode paused ("要回到做饭模式吗？"):
    /// its yes is an assent or a verb of going back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub returns: bool,
    /// An offer made after an answer: that answer (at most [`MAX_AFTER_ANSWER_CHARS`]),
    /// handed to the mode's first turn so it goes on from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_answer: Option<String>,
    /// The modes as they stood when it was asked ([`crate::modes::ModeStatus::stamp`]): a
    /// yes after any switch since (from any chat, a command too) is no yes to this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_in: Option<String>,
}

/// The longest answer an offer carries into the mode it opens.
pub const MAX_AFTER_ANSWER_CHARS: usize = 2000;

/// Why the backend asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Asking {
    /// It offers the mode (someone started its activity).
    #[default]
    Offer,
    /// A `switch_mode` call whose words the guard could not place: switch, or not?
    Unsure,
}

impl Asked {
    /// The backend's yes/no question after unsure words: said as it is, no options read.
    pub fn is_confirmation(&self) -> bool {
        self.offer.as_ref().is_some_and(|t| t.why == Asking::Unsure)
    }
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
    pub fn put(&self, a: Asked) {
        *self.0.lock().expect("choice slot is never poisoned") = Some(a);
    }
}

/// What the model sends. The doc comments are the descriptions it reads.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    pub question: String,
    #[schemars(length(min = 2, max = 6))]
    pub options: Vec<String>,
    /// several options may be chosen (default false)
    #[serde(default)]
    pub multi_select: bool,
    /// the user may answer with their own words instead: a single answer, so not together with multi_select (default false)
    #[serde(default)]
    pub allow_custom: bool,
    /// in a group chat, anyone's answer counts, not only the asker's (default false)
    #[serde(default)]
    pub anyone: bool,
}

/// What is wrong with a question; nothing was asked.
#[derive(Debug, Error, PartialEq)]
#[error("error: ask_user_choice: {0}. Nothing was asked; call it again with a short question and {min}-{max} distinct short options.", min = MIN_OPTIONS, max = MAX_OPTIONS)]
pub struct ChoiceError(pub Problem);

#[derive(Debug, Error, PartialEq)]
pub enum Problem {
    // a free answer is a single answer: custom input and multi-select exclude each other
    #[error("multi_select and allow_custom are mutually exclusive — an answer in the user's own words is a single answer; set one of them")]
    Exclusive,
    #[error("the question is empty")]
    EmptyQuestion,
    #[error("the question is longer than {MAX_QUESTION_CHARS} characters")]
    LongQuestion,
    #[error("options must have {MIN_OPTIONS} to {MAX_OPTIONS} entries, got {0}")]
    OptionCount(usize),
    /// (option number, from 1)
    #[error("option {0} is empty")]
    EmptyOption(usize),
    #[error("option {0} is longer than {MAX_OPTION_CHARS} characters")]
    LongOption(usize),
    #[error("option {0} repeats {1:?}")]
    Repeats(usize, String),
}

/// Check a call's arguments (`call_id` and `arguments`, the raw call, are kept with the
/// question to be replayed with its answer); the error names what is wrong.
pub fn validate(a: Args, call_id: &str, arguments: &str) -> Result<Asked, ChoiceError> {
    let bad = |p: Problem| Err(ChoiceError(p));
    if a.multi_select && a.allow_custom {
        return bad(Problem::Exclusive);
    }
    let question = a.question.trim().to_string();
    if question.is_empty() {
        return bad(Problem::EmptyQuestion);
    }
    if question.chars().count() > MAX_QUESTION_CHARS {
        return bad(Problem::LongQuestion);
    }
    let n = a.options.len();
    if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&n) {
        return bad(Problem::OptionCount(n));
    }
    let mut options: Vec<String> = Vec::with_capacity(n);
    for (i, o) in a.options.iter().enumerate() {
        let o = o.trim();
        if o.is_empty() {
            return bad(Problem::EmptyOption(i + 1));
        }
        if o.chars().count() > MAX_OPTION_CHARS {
            return bad(Problem::LongOption(i + 1));
        }
        if options.iter().any(|p| p == o) {
            return bad(Problem::Repeats(i + 1, o.to_string()));
        }
        options.push(o.to_string());
    }
    Ok(Asked {
        question,
        options,
        multi_select: a.multi_select,
        allow_custom: a.allow_custom,
        anyone: a.anyone,
        call_id: call_id.to_string(),
        arguments: arguments.to_string(),
        offer: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;
    use crate::tools::result::ToolResult;
    use crate::tools::tool::parse_args;
    use serde_json::json;

    fn call(args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: NAME.into(),
            arguments: args.to_string(),
        }
    }

    /// As the registry runs it: parse, then validate; an error is the tool's result.
    fn validate(c: &ToolCall) -> Result<Asked, ToolResult> {
        let a: Args = parse_args(c).map_err(ToolResult::err)?;
        super::validate(a, &c.id, &c.arguments).map_err(ToolResult::err)
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
