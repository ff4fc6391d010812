//! The scene-memory tools: `memory_commit {content, scene?}` and `memory_search {query}`.
//!
//! `scene` is best left empty: the memory then attaches to the scene(s) of the turn —
//! the kernel knows where it is; a guessed scene pins a memory to the wrong place (seed
//! 001). A scene the model does name must lie on the turn's own branch (the turn's key,
//! an ancestor or a descendant of it), so a message in one chat cannot plant memories in
//! another; only the owner's terminal (`cli`) may name any scene. Content, query and key
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
fn commit_keys(scene: &TurnScene, asked: Option<&str>) -> Result<Vec<SceneKey>, String> {
    match asked.map(str::trim).filter(|s| !s.is_empty()) {
        None if scene.is_none() => Err("error: this conversation does not take part in scene memory (its scene policy is `none`); the memory was not kept".into()),
        None => Ok(scene.keys.clone()),
        Some(raw) => {
            let key = SceneKey::parse(raw).map_err(|e| format!("error: invalid scene: {e}. Leave `scene` empty to use the current one."))?;
            let on_branch = scene
                .keys
                .iter()
                .any(|k| k.covers(&key) || key.covers(k));
            if scene.channel == "cli" || on_branch {
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

/// Run a memory tool; `None` when `call` is not one.
pub async fn execute(env: &ToolEnv, call: &ToolCall) -> Option<ToolResult> {
    let m = &env.memory;
    let cfg = m.memory.config();
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
            let keys = match commit_keys(&m.scene, a.scene.as_deref()) {
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
            let hits = m.memory.index().search(&a.query, SEARCH_RESULTS);
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

    fn scene(channel: &str, key: &str) -> TurnScene {
        TurnScene {
            keys: vec![SceneKey::parse(key).unwrap()],
            weak: vec![],
            channel: channel.into(),
        }
    }

    #[test]
    fn a_named_scene_must_be_on_the_turns_branch() {
        let g = scene("qq", "chan:qq/peer:group_1027");
        assert_eq!(commit_keys(&g, None).unwrap(), g.keys);
        assert_eq!(commit_keys(&g, Some("  ")).unwrap(), g.keys);
        assert!(commit_keys(&g, Some("chan:QQ/peer:group_1027")).is_ok());
        assert!(commit_keys(&g, Some("chan:qq")).is_ok());
        assert!(commit_keys(&g, Some("chan:qq/peer:group_1027/place:kitchen")).is_ok());
        let e = commit_keys(&g, Some("chan:qq/peer:group_999")).unwrap_err();
        assert!(e.contains("not this conversation"), "{e}");
        assert!(commit_keys(&g, Some("chan:qq2")).is_err());
        assert!(commit_keys(&g, Some("chan:qq/part:evening"))
            .unwrap_err()
            .contains("weak"));
        // the owner's terminal may name any scene
        assert!(commit_keys(
            &scene("cli", "chan:cli/peer:local"),
            Some("chan:qq/peer:group_9")
        )
        .is_ok());
        // `none`: nothing to attach to
        assert!(commit_keys(&TurnScene::default(), None)
            .unwrap_err()
            .contains("none"));
    }
}
