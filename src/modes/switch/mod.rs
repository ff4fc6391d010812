//! Validation of a `switch_mode` request against the user's original words (the LLM
//! proposes, the backend decides). Entering needs the mode's display name
//! (or an alias) and an enter verb *commanded* in the same clause; exiting likewise with an
//! exit verb. The verbs are the mode's (`verbs_for`, what the model is told), their spoken
//! forms (开启, 换成, 关掉 …) and single-character verbs (开, 关 …) right next to the name.
//! Negations, questions, reports, deferrals and retractions do not switch anything — see
//! [`clause`] (where a clause ends, with or without punctuation), `bound` (where a single
//! character is a verb) and [`judge`] (whether it commands). The same parser checks spoken
//! strategy changes (`set_strategy`, which keeps two verdicts). A switch has a third:
//! words the guard cannot place ([`unsure`]: a suggestion asked, retold or habitual
//! speech, the parts apart, extra words around the command) make the backend ask the
//! person, and only a short yes switches. A clear non-command is refused, and the
//! refusal says how to switch.
//!
//! Layout: `guard` — [`validate`]; `action` — enter or exit and their verbs; `refusal` —
//! why the words did not switch; `words` — the spoken and single-character verbs; `deferrals` — the words that put
//! a switch off.

mod bound;
pub mod clause;
mod deferrals;
pub mod judge;
#[cfg(test)]
mod spoken_table;
#[cfg(test)]
mod tests;
mod words;

mod action;
mod guard;
mod refusal;
pub mod unsure;

pub use action::{verbs_for, SwitchAction, DEFAULT_ENTER_VERBS, DEFAULT_EXIT_VERBS};
pub use guard::validate;
pub use refusal::{WordsRefusal, WordsRefusalKind};
pub use unsure::{Decision, Unsure};
