//! Where the file tools may go: [`FileAccess`] resolves a requested path inside the
//! workspace (no `..`, absolute paths or symlinks that lead out), and says which zone it
//! is in — private (never opened), another mode's knowledge (closed while that mode is
//! not the active one), writable (`notes/` and the plugins' folders) or only readable.
//! The tools themselves are in `files`.

use std::path::{Component, Path, PathBuf};
use thiserror::Error;

/// Why a path is out of the file tools' reach; `requested` is the path as the model gave
/// it.
#[derive(Debug, Error)]
pub enum PathError {
    #[error("error: a path is required")]
    Required,
    #[error("error: {requested:?} is outside the workspace; use a path relative to the workspace")]
    Absolute { requested: String },
    #[error("error: {requested:?} is outside the workspace")]
    Outside { requested: String },
    #[error("error: {requested:?} leads outside the workspace")]
    LeadsOut { requested: String },
    #[error("error: {requested:?}: {source}")]
    Resolve {
        requested: String,
        source: std::io::Error,
    },
    #[error("error: {requested} is private to the household's members or the backend; tools may not open it")]
    Private { requested: String },
    #[error("error: tools may write only below {allowed}; {requested} is not there")]
    NotWritable { requested: String, allowed: String },
    #[error("error: {requested} is knowledge of the {owner:?} mode; it is readable only while that mode is on")]
    OtherModesKnowledge { requested: String, owner: String },
}

/// Top-level names the tools never touch.
const PRIVATE: &[&str] = crate::workspace::PRIVATE_ZONES;

/// Where the file tools may read and write.
#[derive(Debug, Clone)]
pub struct FileAccess {
    /// The canonical workspace root.
    pub root: PathBuf,
    /// Folders (under the root) the tools may write below.
    pub writable: Vec<PathBuf>,
    /// Folders outside the workspace the tools may read (the registered skills).
    pub readable_outside: Vec<PathBuf>,
    /// Knowledge folders of each mode (in the workspace or in its skill): readable only
    /// while that mode is the active one.
    pub mode_knowledge: Vec<(String, PathBuf)>,
}

impl FileAccess {
    /// What the file tools may touch: `notes/` and the plugins' writable folders for
    /// writing; the registered skill folders (wherever they are) for reading.
    pub fn for_registry(
        ws: &crate::workspace::Workspace,
        registry: &crate::modes::ModeRegistry,
    ) -> Self {
        let mut writable = vec![ws.notes_dir()];
        let mut readable_outside = Vec::new();
        for m in registry.modes() {
            let ctx = crate::modes::plugin::PluginContext {
                workspace: ws,
                manifest: &m.manifest,
                skill_dir: &m.skill_dir,
                skill_name: &m.skill_name,
            };
            writable.extend(m.plugin.writable_dirs(&ctx));
            readable_outside.push(m.skill_dir.clone());
        }
        for s in registry.skills() {
            if let Some(d) = s.path.parent() {
                readable_outside.push(d.to_path_buf());
            }
        }
        let mode_knowledge = registry
            .modes()
            .iter()
            .flat_map(|m| {
                m.knowledge_dirs(ws.root())
                    .into_iter()
                    .map(|(_, dir)| (m.manifest.id.clone(), dir))
            })
            .collect();
        let readable_outside = readable_outside
            .into_iter()
            .filter_map(|d| std::fs::canonicalize(d).ok())
            // inside the workspace the zone rules apply; a folder holding the workspace
            // would open all of it
            .filter(|d| !d.starts_with(ws.root()) && !ws.root().starts_with(d))
            .collect();
        FileAccess {
            root: ws.root().to_path_buf(),
            writable,
            readable_outside,
            mode_knowledge,
        }
    }

    /// The mode whose knowledge folder `p` lies in, when that mode is not `active`
    /// (outside every mode, all modes' knowledge is closed).
    pub(super) fn other_modes_knowledge(&self, p: &Path, active: Option<&str>) -> Option<&str> {
        let owned_by_active = self
            .mode_knowledge
            .iter()
            .any(|(m, d)| Some(m.as_str()) == active && p.starts_with(d));
        if owned_by_active {
            return None;
        }
        self.mode_knowledge
            .iter()
            .find(|(m, d)| Some(m.as_str()) != active && p.starts_with(d))
            .map(|(m, _)| m.as_str())
    }

    pub(super) fn check_knowledge(
        &self,
        p: &Path,
        requested: &str,
        active: Option<&str>,
    ) -> Result<(), PathError> {
        match self.other_modes_knowledge(p, active) {
            Some(owner) => Err(PathError::OtherModesKnowledge {
                requested: requested.to_string(),
                owner: owner.to_string(),
            }),
            None => Ok(()),
        }
    }

    pub(super) fn rel<'a>(&self, p: &'a Path) -> &'a Path {
        p.strip_prefix(&self.root).unwrap_or(p)
    }

    /// Private: a dotfile anywhere, or a top-level name of [`PRIVATE`] — compared without
    /// case and as a prefix, so `Chats/` or `config.toml.bak` are private too.
    pub(super) fn is_private(&self, p: &Path) -> bool {
        let rel = self.rel(p);
        let dotted = rel
            .components()
            .any(|c| c.as_os_str().to_string_lossy().starts_with('.'));
        let top = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().to_lowercase());
        dotted || top.is_some_and(|t| PRIVATE.iter().any(|x| t.starts_with(&x.to_lowercase())))
    }

    /// A file inside a registered skill folder outside the workspace (no dotfiles).
    pub(super) fn in_skill_folder(&self, real: &Path) -> bool {
        self.readable_outside.iter().any(|d| {
            real.strip_prefix(d).is_ok_and(|rel| {
                !rel.components()
                    .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
            })
        })
    }

    /// A path to read or list: a registered skill folder, or a non-private workspace path.
    pub(super) fn readable(
        &self,
        requested: &str,
        mode: Option<&str>,
    ) -> Result<PathBuf, PathError> {
        let req = Path::new(requested.trim());
        if req.is_absolute() {
            if let Ok(real) = std::fs::canonicalize(req) {
                if !real.starts_with(&self.root) && self.in_skill_folder(&real) {
                    self.check_knowledge(&real, requested, mode)?;
                    return Ok(real);
                }
            }
        }
        let p = real_path(&resolve_in(&self.root, requested)?);
        if self.is_private(&p) {
            return Err(PathError::Private {
                requested: requested.to_string(),
            });
        }
        self.check_knowledge(&p, requested, mode)?;
        Ok(p)
    }

    /// A path to write: only below a writable folder, never private.
    pub(super) fn writable_path(
        &self,
        requested: &str,
        mode: Option<&str>,
    ) -> Result<PathBuf, PathError> {
        let p = real_path(&resolve_in(&self.root, requested)?);
        if self.is_private(&p) || !self.writable.iter().any(|w| p.starts_with(w) && p != *w) {
            return Err(PathError::NotWritable {
                requested: requested.to_string(),
                allowed: self.writable_names().join(", "),
            });
        }
        self.check_knowledge(&p, requested, mode)?;
        Ok(p)
    }

    /// The writable folders as the model should name them.
    pub fn writable_names(&self) -> Vec<String> {
        self.writable
            .iter()
            .map(|w| format!("{}/", self.rel(w).display()))
            .collect()
    }
}

/// `p` with its deepest existing ancestor resolved through symlinks, so the zone checks
/// see where a path really leads (a `notes` symlink to `chats/` is `chats/`).
fn real_path(p: &Path) -> PathBuf {
    let mut existing = p.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(n) => rest.push(n.to_os_string()),
            None => return p.to_path_buf(),
        }
        if !existing.pop() {
            return p.to_path_buf();
        }
    }
    let mut real = std::fs::canonicalize(&existing).unwrap_or(existing);
    for n in rest.into_iter().rev() {
        real.push(n);
    }
    real
}

/// Resolve `requested` inside `root` (which must be canonical). Refuses escapes by
/// `..`, by absolute paths elsewhere, and by symlinks pointing out.
pub fn resolve_in(root: &Path, requested: &str) -> Result<PathBuf, PathError> {
    let requested = requested.trim();
    if requested.is_empty() {
        return Err(PathError::Required);
    }
    let outside = || PathError::Outside {
        requested: requested.to_string(),
    };
    let p = Path::new(requested);
    let rel = if p.is_absolute() {
        p.strip_prefix(root)
            .map_err(|_| PathError::Absolute {
                requested: requested.to_string(),
            })?
            .to_path_buf()
    } else {
        p.to_path_buf()
    };
    let mut out = root.to_path_buf();
    for c in rel.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || !out.starts_with(root) {
                    return Err(outside());
                }
            }
            _ => return Err(outside()),
        }
    }
    if !out.starts_with(root) {
        return Err(outside());
    }
    // Symlinks: the deepest existing ancestor must still be inside.
    let mut probe = out.clone();
    while !probe.exists() {
        if !probe.pop() {
            break;
        }
    }
    let real = std::fs::canonicalize(&probe).map_err(|e| PathError::Resolve {
        requested: requested.to_string(),
        source: e,
    })?;
    if !real.starts_with(root) {
        return Err(PathError::LeadsOut {
            requested: requested.to_string(),
        });
    }
    Ok(out)
}
