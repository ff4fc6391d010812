//! The `ModePlugin` trait: what a mode's own code may add to the generic kernel.
//!
//! Rust cannot load `mode.py` at run time; a plugin is a type compiled into the binary
//! (see `skills/mod.rs`) and found by the `entrypoint` string of its `mode.json`. A mode
//! without an entrypoint uses [`DeclarativePlugin`]: SKILL.md as prompt, nothing else.

use super::manifest::ModeManifest;
use super::session::Record;
use crate::workspace::Workspace;
use std::path::{Path, PathBuf};

/// What a plugin is told about where it runs.
pub struct PluginContext<'a> {
    pub workspace: &'a Workspace,
    pub manifest: &'a ModeManifest,
    /// The skill folder (holds SKILL.md and mode.json).
    pub skill_dir: &'a Path,
    pub skill_name: &'a str,
}

/// A path shown to the LLM in the dynamic tail (the content is read on demand).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextPath {
    pub label: String,
    pub path: PathBuf,
}

/// A finished session, handed to the plugin after `summary.md` is written.
pub struct ArchivedSession<'a> {
    pub session_id: &'a str,
    pub session_dir: &'a Path,
    pub started_at: &'a str,
    pub ended_at: &'a str,
    pub exit_reason: &'a str,
    pub summary_path: &'a Path,
    pub summary_text: &'a str,
    /// The model's own short summary, when it gave one with `switch_mode exit`.
    pub llm_summary: Option<&'a str>,
    pub records: &'a [Record],
}

pub trait ModePlugin: Send + Sync {
    /// Prefix of session ids (`cook` gives `cook-20261022-195500-a1b2c3`).
    fn session_prefix(&self, ctx: &PluginContext<'_>) -> String {
        ctx.manifest.id.clone()
    }

    /// The mode's static prompt, frozen into `system_prompt.md` at entry.
    fn static_prompt(&self, ctx: &PluginContext<'_>) -> std::io::Result<String> {
        let text = std::fs::read_to_string(ctx.skill_dir.join("SKILL.md"))?;
        Ok(strip_front_matter(&text).trim().to_string())
    }

    /// Called when a model-written `summary.md` (`summary_text`, the whole file) replaces
    /// the mechanical one of a session archived earlier (by expiry or recovery; `model`
    /// is the model's summary alone): refresh any copy or index the plugin keeps.
    fn summary_updated(
        &self,
        _ctx: &PluginContext<'_>,
        _session_id: &str,
        _summary_text: &str,
        _model: &str,
    ) -> std::io::Result<()> {
        Ok(())
    }

    /// Called when a session starts: create data folders and the like.
    fn prepare(&self, _ctx: &PluginContext<'_>) -> std::io::Result<()> {
        Ok(())
    }

    /// Folders below which the model may write with `write_file` (e.g. recipes). Files
    /// the plugin itself maintains (its index) must not be in them.
    fn writable_dirs(&self, _ctx: &PluginContext<'_>) -> Vec<PathBuf> {
        Vec::new()
    }

    /// Paths the model should know about while the mode is active (dynamic tail).
    fn runtime_context(&self, _ctx: &PluginContext<'_>) -> Vec<ContextPath> {
        Vec::new()
    }

    /// After `summary.md`: update the plugin's own index. Must be idempotent: after a
    /// crash it may run again for the same session.
    fn after_exit(
        &self,
        _ctx: &PluginContext<'_>,
        _session: &ArchivedSession<'_>,
    ) -> std::io::Result<()> {
        Ok(())
    }
}

/// The plugin of a purely declarative mode (no entrypoint).
#[derive(Debug, Default)]
pub struct DeclarativePlugin;

impl ModePlugin for DeclarativePlugin {}

/// Drop a leading `---` … `---` YAML block.
pub fn strip_front_matter(text: &str) -> &str {
    let t = text.trim_start_matches('\u{feff}');
    if let Some(rest) = t.strip_prefix("---") {
        if let Some(end) = rest.find("\n---") {
            let after = &rest[end + 4..];
            return after.strip_prefix('\n').unwrap_or(after);
        }
    }
    t
}

/// `name:` and `description:` of a SKILL.md front matter (the common convention).
pub fn front_matter_field(text: &str, key: &str) -> Option<String> {
    let t = text.trim_start_matches('\u{feff}');
    let rest = t.strip_prefix("---")?;
    let end = rest.find("\n---")?;
    rest[..end].lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"').trim_matches('\'').to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter() {
        let t = "---\nname: home-cooking\ndescription: \"做饭\"\n---\n# Body\n";
        assert_eq!(strip_front_matter(t), "# Body\n");
        assert_eq!(
            front_matter_field(t, "name").as_deref(),
            Some("home-cooking")
        );
        assert_eq!(
            front_matter_field(t, "description").as_deref(),
            Some("做饭")
        );
        assert_eq!(strip_front_matter("# no fm"), "# no fm");
    }
}
