//! Skill folders and the mode plugins compiled into homebot.
//!
//! Each folder here is a skill: `SKILL.md` (front matter `name`, `description`), and for
//! a run mode also `mode.json`. A mode whose `mode.json` names an `entrypoint` gets the
//! plugin registered under that name below; a mode without one is purely declarative
//! and needs no Rust at all. The kernel (`src/modes`) knows nothing of any skill.
//!
//! To add a plugin: put `plugin.rs` in the skill folder, add a `#[path]` module line and
//! one row to [`PLUGINS`] (`plugins.rs`), and write `"entrypoint": "plugin.rs:TypeName"` in mode.json.
//!
//! `builtin` — the skills shipped inside the binary, unpacked on first use.

#[path = "home-cooking/plugin.rs"]
pub mod home_cooking;

mod builtin;
mod plugins;

pub use builtin::{builtin_dir, unpack_builtin, BUILTIN_SKILL_FILES};
pub use plugins::PLUGINS;
