//! `ModeRegistry`: scans skill folders, loads each `mode.json` and the plugin its
//! entrypoint names, and lists ordinary skills (SKILL.md without mode.json).
//!
//! A broken mode (bad JSON, unknown key, unknown entrypoint, duplicate id) is reported
//! as a [`LoadIssue`] for that folder only; every other mode still loads.

use super::manifest::ModeManifest;
use super::plugin::{front_matter_field, DeclarativePlugin, ModePlugin};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Clone)]
pub struct RegisteredMode {
    pub manifest: ModeManifest,
    pub skill_dir: PathBuf,
    /// Folder name of the skill, e.g. `home-cooking`.
    pub skill_name: String,
    /// What the mode is for: `description:` of its SKILL.md front matter, the one place
    /// it is written (empty when the front matter has none).
    pub description: String,
    pub plugin: Arc<dyn ModePlugin>,
}

/// The longest description a mode's SKILL.md may give (it is shown in `/status`, the
/// dashboard and the `switch_mode` tool's description).
pub const MAX_MODE_DESCRIPTION_CHARS: usize = 300;

impl RegisteredMode {
    /// This mode's knowledge folders by name: workspace ones under `ws_root`, the skill's
    /// own under its folder (resolved through symlinks when they exist, so the file
    /// tools' zone checks compare real paths).
    pub fn knowledge_dirs(&self, ws_root: &std::path::Path) -> Vec<(String, PathBuf)> {
        use super::manifest::KnowledgeRoot;
        let Some(ctx) = &self.manifest.context else {
            return Vec::new();
        };
        ctx.knowledge
            .iter()
            .map(|k| {
                let base = match k.root {
                    KnowledgeRoot::Workspace => ws_root,
                    KnowledgeRoot::Skill => self.skill_dir.as_path(),
                };
                let dir = base.join(k.path.trim());
                let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
                (k.name.clone(), dir)
            })
            .collect()
    }
}

impl std::fmt::Debug for RegisteredMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredMode")
            .field("id", &self.manifest.id)
            .field("skill_dir", &self.skill_dir)
            .finish()
    }
}

/// An ordinary skill: listed in the prompt, read on demand.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillInfo {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoadIssue {
    pub path: PathBuf,
    pub error: String,
}

impl std::fmt::Display for LoadIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.error)
    }
}

/// Makes a compiled-in plugin.
pub type PluginConstructor = fn() -> Arc<dyn ModePlugin>;

/// The plugins compiled into the binary, by entrypoint name (`plugin.rs:CookingMode`).
/// The caller supplies it (homebot's own is `skills::PLUGINS`), so this module
/// never imports the skills that depend on it.
pub type PluginTable = &'static [(&'static str, PluginConstructor)];

/// The plugin an entrypoint names: `plugin.rs:CookingMode` and `CookingMode` both work.
pub fn find_plugin(table: PluginTable, entrypoint: &str) -> Option<Arc<dyn ModePlugin>> {
    let wanted = entrypoint.trim();
    table.iter().find_map(|(name, make)| {
        let short = name.rsplit(':').next().unwrap_or(name);
        (wanted == *name || wanted == short).then(make)
    })
}

#[derive(Debug, Default)]
pub struct ModeRegistry {
    modes: Vec<RegisteredMode>,
    skills: Vec<SkillInfo>,
    issues: Vec<LoadIssue>,
}

impl ModeRegistry {
    /// Scan `dirs` in order (earlier folders win on duplicate names); entrypoints are
    /// looked up in `plugins`.
    pub fn load(dirs: &[PathBuf], plugins: PluginTable) -> Self {
        let mut reg = ModeRegistry::default();
        let mut seen_skill_names = std::collections::HashSet::new();
        for dir in dirs {
            let entries = match std::fs::read_dir(dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    reg.issues.push(LoadIssue {
                        path: dir.clone(),
                        error: format!("cannot list skills folder: {e}"),
                    });
                    continue;
                }
            };
            let mut subdirs: Vec<PathBuf> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            subdirs.sort();
            for sd in subdirs {
                let name = sd
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_string();
                if name.starts_with('.') || !seen_skill_names.insert(name.clone()) {
                    continue; // hidden, or shadowed by an earlier folder of the same name
                }
                reg.load_skill(&sd, name, plugins);
            }
        }
        reg.check_parents();
        reg.modes.sort_by(|a, b| a.manifest.id.cmp(&b.manifest.id));
        reg.skills.sort_by(|a, b| a.name.cmp(&b.name));
        reg
    }

    fn load_skill(&mut self, dir: &Path, skill_name: String, plugins: PluginTable) {
        let mode_json = dir.join("mode.json");
        let skill_md = dir.join("SKILL.md");
        if !mode_json.exists() {
            if let Ok(text) = std::fs::read_to_string(&skill_md) {
                self.skills.push(SkillInfo {
                    name: front_matter_field(&text, "name").unwrap_or_else(|| skill_name.clone()),
                    description: front_matter_field(&text, "description").unwrap_or_default(),
                    path: skill_md,
                });
            }
            return;
        }
        let issue = |error: String| LoadIssue {
            path: mode_json.clone(),
            error,
        };
        let manifest = match std::fs::read_to_string(&mode_json)
            .map_err(|e| e.to_string())
            .and_then(|t| ModeManifest::parse(&t).map_err(|e| e.to_string()))
        {
            Ok(m) => m,
            Err(e) => return self.issues.push(issue(e)),
        };
        let skill_text = match std::fs::read_to_string(&skill_md) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return self
                    .issues
                    .push(issue(format!("{} is missing", skill_md.display())))
            }
            Err(e) => {
                return self
                    .issues
                    .push(issue(format!("cannot read {}: {e}", skill_md.display())))
            }
        };
        let description = front_matter_field(&skill_text, "description").unwrap_or_default();
        if description.chars().count() > MAX_MODE_DESCRIPTION_CHARS {
            return self.issues.push(LoadIssue {
                path: skill_md,
                error: format!(
                    "description must be at most {MAX_MODE_DESCRIPTION_CHARS} characters"
                ),
            });
        }
        if self.modes.iter().any(|m| m.manifest.id == manifest.id) {
            return self.issues.push(issue(format!(
                "mode id {:?} is already defined by another skill",
                manifest.id
            )));
        }
        let plugin: Arc<dyn ModePlugin> = match &manifest.entrypoint {
            None => Arc::new(DeclarativePlugin),
            Some(ep) => match find_plugin(plugins, ep) {
                Some(p) => p,
                None => {
                    return self.issues.push(issue(format!(
                        "unknown entrypoint {ep:?}: no plugin of that name is compiled into homebot (known: {})",
                        plugins.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                    )))
                }
            },
        };
        self.modes.push(RegisteredMode {
            manifest,
            skill_dir: dir.to_path_buf(),
            skill_name,
            description,
            plugin,
        });
    }

    /// A sub-mode whose `parent` is not a loaded top-level mode does not load (one level
    /// of nesting: a sub-mode's parent has no parent).
    fn check_parents(&mut self) {
        let top: std::collections::HashSet<String> = self
            .modes
            .iter()
            .filter(|m| m.manifest.parent.is_none())
            .map(|m| m.manifest.id.clone())
            .collect();
        let (kept, refused): (Vec<_>, Vec<_>) = std::mem::take(&mut self.modes)
            .into_iter()
            .partition(|m| m.manifest.parent.as_ref().is_none_or(|p| top.contains(p)));
        self.modes = kept;
        for m in refused {
            let parent = m.manifest.parent.clone().unwrap_or_default();
            self.issues.push(LoadIssue {
                path: m.skill_dir.join("mode.json"),
                error: format!(
                    "parent {parent:?} is not a loaded mode without a parent of its own (a sub-mode nests one level, under a top-level mode)"
                ),
            });
        }
    }

    /// The sub-mode ids of `parent`.
    pub fn children(&self, parent: &str) -> Vec<&RegisteredMode> {
        self.modes
            .iter()
            .filter(|m| m.manifest.parent.as_deref() == Some(parent))
            .collect()
    }

    pub fn modes(&self) -> &[RegisteredMode] {
        &self.modes
    }
    pub fn skills(&self) -> &[SkillInfo] {
        &self.skills
    }
    pub fn issues(&self) -> &[LoadIssue] {
        &self.issues
    }
    pub fn get(&self, id: &str) -> Option<&RegisteredMode> {
        self.modes.iter().find(|m| m.manifest.id == id)
    }
    pub fn ids(&self) -> Vec<String> {
        self.modes.iter().map(|m| m.manifest.id.clone()).collect()
    }
}
