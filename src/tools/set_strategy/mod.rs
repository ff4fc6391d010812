//! `set_strategy`: the words that may change the household's strategy and the guard
//! ([`rules`]), and the tool ([`tool`]).

pub mod rules;
pub mod tool;

pub use rules::*;
pub use tool::SetStrategy;
