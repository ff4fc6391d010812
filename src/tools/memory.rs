//! The scene-memory tools: `memory_commit {content, scene?}` and `memory_search {query}`.
//!
//! `scene` is best left empty: the memory then attaches to the scene(s) of the turn —
//! the kernel knows where it is; a guessed scene pins a memory to the wrong place (seed
//! 001). A scene the model does name must be the turn's own key, so a message in one chat
//! cannot plant memories in another — nor in a wider scene such as `chan:qq`, which every
//! QQ chat would recall, nor in new scenes below its own, which would use up the
//! household's scene budget; only the owner's terminal (`cli`) may name any scene. Content, query and key
//! lengths and the commits per turn are bounded (`[memory]`).

use super::{parse_args, ToolEnv, ToolResult};
use crate::memory::{Memory, SceneKey, TurnScene};
use crate::provider::{ToolCall, ToolDef};
use serde::Deserialize;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};

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
        turn: &crate::turn::Turn,
        now: chrono::DateTime<chrono::FixedOffset>,
    ) -> Self {
        Self {
            scene: memory.scene_of(turn, now),
            memory: memory.clone(),
            now: now.timestamp(),
            commits: AtomicUsize::new(0),
            owner: turn.facts().trust == crate::turn::Trust::Owner,
        }
    }
}

/// Results `memory_search` returns.
const SEARCH_RESULTS: usize = 5;

pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "memory_commit".into(),
            description: "Remember a lasting convention, preference or fact of this household for the situation you are in (e.g. \"in this group, keep answers short\", \"dinner portions are for three\"). It is recalled automatically whenever this situation recurs, whatever words are used. Leave `scene` empty: the memory attaches to the current chat's scene. One short sentence per memory; never secrets.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "the memory, one or two sentences"},
                    "scene": {"type": "string", "description": "optional scene key such as chan:qq/peer:group_1027; default: the current scene"}
                },
                "required": ["content"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "memory_search".into(),
            description: "Search the household's memories by wording (memories of the current situation are already in the [场景记忆] block when there are any).".into(),
            parameters: json!({
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
                "additionalProperties": false
            }),
        },
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommitArgs {
    content: String,
    #[serde(default)]
    scene: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
}

/// The scene keys a commit goes to, or why not.
fn commit_keys(
    scene: &TurnScene,
    asked: Option<&str>,
    owner: bool,
) -> Result<Vec<SceneKey>, String> {
    match asked.map(str::trim).filter(|s| !s.is_empty()) {
        None if scene.is_none() => Err("error: this conversation does not take part in scene memory (its scene policy is `none`); the memory was not kept".into()),
        None => Ok(scene.keys.clone()),
        Some(raw) => {
            let key = SceneKey::parse(raw).map_err(|e| format!("error: invalid scene: {e}. Leave `scene` empty to use the current one."))?;
            // a chat may name its own scene only: a key below it would be a new scene,
            // and scenes are a household-wide budget one chat must not use up
            let own = scene.keys.iter().any(|k| k == &key);
            if owner || own {
                Ok(vec![key])
            } else {
                Err(format!(
                    "error: scene {key} is not this conversation's ({}); leave `scene` empty to remember it here",
                    scene
                        .keys
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        }
    }
}

/// Whether a memory may be shown to this turn by `memory_search`: anyone who can talk to
/// the bot can ask, so a group sees what belongs to its own branch of scenes (and what
/// was kept from this very chat), never another chat's memories; the owner's terminal
/// sees everything.
fn visible(scene: &TurnScene, owner: bool, origin: &str, from: &str, keys: &[&SceneKey]) -> bool {
    owner
        || from == origin
        || keys
            .iter()
            .any(|k| scene.keys.iter().any(|t| k.covers(t) || t.covers(k)))
}

/// Run a memory tool; `None` when `call` is not one.
pub async fn execute(env: &ToolEnv, call: &ToolCall) -> Option<ToolResult> {
    let m = &env.memory;
    let cfg = m.memory.config();
    // the owner's, whatever its scene policy
    let owner = m.owner;
    Some(match call.name.as_str() {
        "memory_commit" => {
            let a: CommitArgs = match parse_args(call) {
                Ok(a) => a,
                Err(e) => return Some(e),
            };
            let chars = a.content.trim().chars().count();
            if chars > cfg.max_content_chars {
                return Some(ToolResult::err(format!(
                    "error: the memory is {chars} characters; the limit is {}. Keep one short convention or fact per memory.",
                    cfg.max_content_chars
                )));
            }
            let keys = match commit_keys(&m.scene, a.scene.as_deref(), owner) {
                Ok(k) => k,
                Err(e) => return Some(ToolResult::err(e)),
            };
            if m.commits.fetch_add(1, Ordering::SeqCst) >= cfg.max_commits_per_turn {
                return Some(ToolResult::err(format!(
                    "error: at most {} memories may be kept per message; not kept",
                    cfg.max_commits_per_turn
                )));
            }
            let origin = format!("{}:{}", env.origin.channel, env.origin.chat_id);
            match m.memory.commit(a.content, keys.clone(), origin, m.now).await {
                Ok(id) => ToolResult::ok(format!(
                    "kept as memory #{id} for scene {}; it will be recalled when this situation recurs",
                    keys.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
                )),
                Err(e) => ToolResult::err(format!("error: not kept: {e}")),
            }
        }
        "memory_search" => {
            let a: SearchArgs = match parse_args(call) {
                Ok(a) => a,
                Err(e) => return Some(e),
            };
            let chars = a.query.chars().count();
            if chars > cfg.max_query_chars {
                return Some(ToolResult::err(format!(
                    "error: the query is {chars} characters; the limit is {}. Use a few key words.",
                    cfg.max_query_chars
                )));
            }
            let origin = format!("{}:{}", env.origin.channel, env.origin.chat_id);
            let scene = &m.scene;
            let hits = m
                .memory
                .index()
                .search(&a.query, SEARCH_RESULTS, |_, from, keys| {
                    visible(scene, owner, &origin, from, keys)
                });
            if hits.is_empty() {
                ToolResult::ok("no memory matches")
            } else {
                ToolResult::ok(
                    hits.iter()
                        .map(|(id, c, _)| format!("#{id} {c}"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
            }
        }
        _ => return None,
    })
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
        let e = commit_keys(&g, Some("chan:qq/peer:group_999"), false).unwrap_err();
        assert!(e.contains("not this conversation"), "{e}");
        assert!(commit_keys(&g, Some("chan:qq2"), false).is_err());
        assert!(commit_keys(&g, Some("chan:qq/part:evening"), false)
            .unwrap_err()
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
