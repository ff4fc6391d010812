//! `memory_commit {content, scene?}` and `memory_search {query}`: the tools over scene
//! memory. Which scene a memory may go to and which memories a chat may see are the
//! rules of [`crate::tools::memory`]; content, query and the commits per turn are bounded
//! here (`[memory]`).

use super::rules::{commit_keys, visible, SEARCH_RESULTS};
use crate::provider::ToolCall;
use crate::tools::env::ToolEnv;
use crate::tools::result::ToolResult;
use crate::tools::tool::Tool;
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::atomic::Ordering;
use thiserror::Error;

/// Why a memory tool did nothing (the scene rules' own are `ScopeError`).
#[derive(Debug, Error)]
pub enum MemoryToolError {
    #[error("error: the memory is {chars} characters; the limit is {max}. Keep one short convention or fact per memory.")]
    TooLong { chars: usize, max: usize },
    #[error("error: at most {0} memories may be kept per message; not kept")]
    TooMany(usize),
    #[error("error: not kept: {0}")]
    NotKept(crate::memory::MemoryError),
    #[error("error: the query is {chars} characters; the limit is {max}. Use a few key words.")]
    QueryTooLong { chars: usize, max: usize },
}

/// The terminal is the owner's, whatever its scene policy: it may name any scene and see
/// every memory.
fn owner(env: &ToolEnv) -> bool {
    env.memory.owner
}

fn origin(env: &ToolEnv) -> String {
    format!("{}:{}", env.origin.channel, env.origin.chat_id)
}

pub struct MemoryCommit;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitArgs {
    /// the memory, one or two sentences
    pub content: String,
    /// optional scene key such as chan:qq/peer:group_1027; default: the current scene
    pub scene: Option<String>,
}

#[async_trait::async_trait]
impl Tool for MemoryCommit {
    const NAME: &'static str = "memory_commit";
    type Args = CommitArgs;

    fn description(&self) -> String {
        "Remember a lasting convention, preference or fact of this household for the situation you are in (e.g. \"in this group, keep answers short\", \"dinner portions are for three\"). It is recalled automatically whenever this situation recurs, whatever words are used. Leave `scene` empty: the memory attaches to the current chat's scene. One short sentence per memory; never secrets.".into()
    }

    async fn call(&self, env: &ToolEnv, a: CommitArgs, _call: &ToolCall) -> ToolResult {
        let m = &env.memory;
        let cfg = m.memory.config();
        let chars = a.content.trim().chars().count();
        if chars > cfg.max_content_chars {
            return ToolResult::err(MemoryToolError::TooLong {
                chars,
                max: cfg.max_content_chars,
            });
        }
        let keys = match commit_keys(&m.scene, a.scene.as_deref(), owner(env)) {
            Ok(k) => k,
            Err(e) => return ToolResult::err(e),
        };
        if m.commits.fetch_add(1, Ordering::SeqCst) >= cfg.max_commits_per_turn {
            return ToolResult::err(MemoryToolError::TooMany(cfg.max_commits_per_turn));
        }
        match m
            .memory
            .commit(a.content, keys.clone(), origin(env), m.now)
            .await
        {
            Ok(id) => {
                ToolResult::ok(format!(
                "kept as memory #{id} for scene {}; it will be recalled when this situation recurs",
                keys.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
            ))
            }
            Err(e) => ToolResult::err(MemoryToolError::NotKept(e)),
        }
    }
}

pub struct MemorySearch;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    pub query: String,
}

#[async_trait::async_trait]
impl Tool for MemorySearch {
    const NAME: &'static str = "memory_search";
    type Args = SearchArgs;

    fn description(&self) -> String {
        "Search the household's memories by wording (memories of the current situation are already in the [场景记忆] block when there are any).".into()
    }

    async fn call(&self, env: &ToolEnv, a: SearchArgs, _call: &ToolCall) -> ToolResult {
        let m = &env.memory;
        let cfg = m.memory.config();
        let chars = a.query.chars().count();
        if chars > cfg.max_query_chars {
            return ToolResult::err(MemoryToolError::QueryTooLong {
                chars,
                max: cfg.max_query_chars,
            });
        }
        let (owner, origin, scene) = (owner(env), origin(env), &m.scene);
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
}
