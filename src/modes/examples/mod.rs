//! Examples learned from the household (issue 41 §2): per mode that opts in
//! (`mode.json` `"examples": {"use": 2, "keep": 50}`), the turns the household used —
//! praised (`/good`, "这个好") or thanked ("谢谢") — are kept as cases
//! (`<workspace>/modes/examples/<mode_id>.json`, [`store`]), and a new session of the mode
//! gets the most similar ones to its first words frozen into its prompt ([`pick`]).
//! Which words count is in [`signals`]; only a turn whose answer others already heard (a
//! group chat, a room) is ever kept, since every mode session can be joined by anyone.

pub mod cli;
pub mod pick;
pub mod signals;
pub mod store;

pub use store::{is_case_id, Case, CaseScene, ExampleStore, Judged};

/// The file a session keeps the examples its frozen prompt got in.
pub const SESSION_EXAMPLES_FILE: &str = "examples.json";
