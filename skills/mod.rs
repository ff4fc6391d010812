//! Skill folders and the mode plugins compiled into homebot.
//!
//! Each folder here is a skill: `SKILL.md` (front matter `name`, `description`), and for
//! a run mode also `mode.json`. A mode whose `mode.json` names an `entrypoint` gets the
//! plugin registered under that name below; a mode without one is purely declarative
//! and needs no Rust at all. The kernel (`src/modes`) knows nothing of any skill.
//!
//! To add a plugin: put `plugin.rs` in the skill folder, add a `#[path]` module line and
//! one row to [`PLUGINS`], and write `"entrypoint": "plugin.rs:TypeName"` in mode.json.

use crate::modes::ModePlugin;
use std::path::PathBuf;
use std::sync::Arc;

#[path = "home-cooking/plugin.rs"]
pub mod home_cooking;

type Constructor = fn() -> Arc<dyn ModePlugin>;

/// Entrypoint name → plugin constructor.
const PLUGINS: &[(&str, Constructor)] = &[("plugin.rs:CookingMode", || {
    Arc::new(home_cooking::CookingMode)
})];

/// The plugin an entrypoint names. `plugin.rs:CookingMode` and `CookingMode` both work.
pub fn plugin_for(entrypoint: &str) -> Option<Arc<dyn ModePlugin>> {
    let wanted = entrypoint.trim();
    PLUGINS.iter().find_map(|(name, make)| {
        let short = name.rsplit(':').next().unwrap_or(name);
        (wanted == *name || wanted == short).then(make)
    })
}

pub fn entrypoints() -> Vec<&'static str> {
    PLUGINS.iter().map(|(n, _)| *n).collect()
}

/// The skills folder shipped with homebot (this folder), when it is still on disk.
pub fn builtin_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    dir.is_dir().then_some(dir)
}
