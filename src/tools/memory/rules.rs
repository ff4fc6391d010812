//! What the scene-memory tools (`memory_commit {content, scene?}` and `memory_search
//! {query}`, in `tool.rs` beside this file) know of the turn, and their scene rules.
//!
//! `scene` is best left empty: the memory then attaches to the scene(s) of the turn —
//! the kernel knows where it is; a guessed scene pins a memory to the wrong place. A scene the model does name must be the turn's own key, so a message in one chat
//! cannot plant memories in another — nor in a wider scene such as `chan:qq`, which every
//! QQ chat would recall, nor in new scenes below its own, which would use up the
//! household's scene budget; only the owner's terminal (`cli`) may name any scene. Content, query and key
//! lengths and the commits per turn are bounded (`[memory]`).

use crate::memory::{KeyError, Memory, SceneKey, TurnScene};
use std::sync::atomic::AtomicUsize;
use thiserror::Error;

/// What the memory tools know about the turn.
pub struct MemoryEnv {
    pub memory: Memory,
    /// The turn's scene (empty under `ScenePolicy::None`).
    pub scene: TurnScene,
    /// The turn's time (seconds since the epoch).
    pub now: i64,
    /// `memory_commit` calls made so far in this turn.
    pub commits: AtomicUsize,
    /// The speaker is the owner (the terminal): every scene is theirs to read and forget.
    pub owner: bool,
}

impl MemoryEnv {
    pub fn new(
        memory: &Memory,
        scene: TurnScene,
        turn: &crate::turn::Turn,
        now: chrono::DateTime<chrono::FixedOffset>,
    ) -> Self {
        Self {
            scene,
            memory: memory.clone(),
            now: now.timestamp(),
            commits: AtomicUsize::new(0),
            owner: turn.facts().trust == crate::turn::Trust::Owner,
        }
    }
}

/// Results `memory_search` returns.
pub const SEARCH_RESULTS: usize = 5;

/// Why a memory cannot go to the scene asked for.
#[derive(Debug, Error)]
pub enum ScopeError {
    #[error("error: this conversation does not take part in scene memory (its scene policy is `none`); the memory was not kept")]
    NoScene,
    #[error("error: invalid scene: {0}. Leave `scene` empty to use the current one.")]
    Invalid(KeyError),
    #[error("error: scene {asked} is not this conversation's ({ours}); leave `scene` empty to remember it here")]
    NotOurs { asked: SceneKey, ours: String },
}

/// The scene keys a commit goes to, or why not.
pub fn commit_keys(
    scene: &TurnScene,
    asked: Option<&str>,
    owner: bool,
) -> Result<Vec<SceneKey>, ScopeError> {
    match asked.map(str::trim).filter(|s| !s.is_empty()) {
        None if scene.is_none() => Err(ScopeError::NoScene),
        None => Ok(scene.keys.clone()),
        Some(raw) => {
            let key = SceneKey::parse(raw).map_err(ScopeError::Invalid)?;
            // a chat may name its own scene only: a key below it would be a new scene,
            // and scenes are a household-wide budget one chat must not use up
            let own = scene.keys.iter().any(|k| k == &key);
            if owner || own {
                Ok(vec![key])
            } else {
                Err(ScopeError::NotOurs {
                    asked: key,
                    ours: scene
                        .keys
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
            }
        }
    }
}

/// Whether a memory may be shown to this turn by `memory_search`: anyone who can talk to
/// the bot can ask, so a group sees what belongs to its own branch of scenes (and what
/// was kept from this very chat), never another chat's memories; the owner's terminal
/// sees everything.
pub fn visible(
    scene: &TurnScene,
    owner: bool,
    origin: &str,
    from: &str,
    keys: &[&SceneKey],
) -> bool {
    owner
        || from == origin
        || keys
            .iter()
            .any(|k| scene.keys.iter().any(|t| k.covers(t) || t.covers(k)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scene(key: &str) -> TurnScene {
        TurnScene {
            keys: vec![SceneKey::parse(key).unwrap()],
            weak: vec![],
        }
    }

    #[test]
    fn a_named_scene_must_be_on_the_turns_branch() {
        let g = scene("chan:qq/peer:group_1027");
        assert_eq!(commit_keys(&g, None, false).unwrap(), g.keys);
        assert_eq!(commit_keys(&g, Some("  "), false).unwrap(), g.keys);
        assert!(commit_keys(&g, Some("chan:QQ/peer:group_1027"), false).is_ok());
        // a wider scene would be recalled in every QQ chat: only the owner may name it
        assert!(commit_keys(&g, Some("chan:qq"), false).is_err());
        assert!(commit_keys(&scene("chan:cli/peer:local"), Some("chan:qq"), true).is_ok());
        // below its own scene is a new scene: the household's budget, not a chat's
        assert!(commit_keys(&g, Some("chan:qq/peer:group_1027/place:kitchen"), false).is_err());
        assert!(commit_keys(&g, Some("chan:qq/peer:group_1027/place:kitchen"), true).is_ok());
        let e = commit_keys(&g, Some("chan:qq/peer:group_999"), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not this conversation"), "{e}");
        assert!(commit_keys(&g, Some("chan:qq2"), false).is_err());
        assert!(commit_keys(&g, Some("chan:qq/part:evening"), false)
            .unwrap_err()
            .to_string()
            .contains("weak"));
        // the owner's terminal may name any scene
        assert!(commit_keys(
            &scene("chan:cli/peer:local"),
            Some("chan:qq/peer:group_9"),
            true
        )
        .is_ok());
        // `none`: nothing to attach to
        assert!(commit_keys(&TurnScene::default(), None, false)
            .unwrap_err()
            .to_string()
            .contains("none"));
    }

    #[test]
    fn search_shows_a_chat_only_its_own_branch() {
        let g = scene("chan:qq/peer:group_1027");
        let k = |s: &str| SceneKey::parse(s).unwrap();
        let (mine, all, other) = (
            k("chan:qq/peer:group_1027"),
            k("chan:qq"),
            k("chan:qq/peer:private_42"),
        );
        assert!(visible(&g, false, "qq:group:1027", "x", &[&mine]));
        assert!(visible(&g, false, "qq:group:1027", "x", &[&all]));
        assert!(!visible(
            &g,
            false,
            "qq:group:1027",
            "qq:private:42",
            &[&other]
        ));
        // kept here without a scene (policy none): still this chat's own
        let none = TurnScene::default();
        assert!(visible(&none, false, "qq:group:1027", "qq:group:1027", &[]));
        assert!(!visible(
            &none,
            false,
            "qq:group:1027",
            "qq:private:42",
            &[]
        ));
        assert!(visible(
            &none,
            true,
            "cli:local",
            "qq:private:42",
            &[&other]
        ));
    }
}
