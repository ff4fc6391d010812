//! `ask_user_choice`, all in this folder: its arguments and their rules with the turn's
//! slot ([`rules`]), the tool ([`tool`]), and the question rendered on each channel with
//! its answer parsed back ([`answer`], used by the strategy layer when the answer comes).

pub mod answer;
pub mod rules;
pub mod tool;

pub use answer::{parse, render, tool_result, Parsed};
pub use rules::*;
pub use tool::AskUserChoice;
