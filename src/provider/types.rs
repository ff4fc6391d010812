//! The provider-neutral request and response the agent builds and reads.

use serde::{Deserialize, Serialize};

/// A chat message in the provider-neutral form the agent builds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// DeepSeek thinking models need their reasoning replayed within a turn.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        /// Anthropic's thinking blocks, replayed unchanged (signature and all) within
        /// the turn's tool loop, as the API requires with thinking and tools.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        thinking: Vec<ThinkingBlock>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// An Anthropic thinking block as the API gave it: sent back byte for byte (its
/// `signature` is checked), so nothing in it is ever rewritten.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ThinkingBlock {
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Thinking the safety systems encrypted: only its `data` is kept and returned.
    RedactedThinking {
        data: String,
    },
}

/// How deep a turn's calls ask the model to reason, from the strategy's preset:
/// `quick` → [`Depth::Low`], `careful` → [`Depth::High`]; `standard` and no preset send
/// none (the model as configured). Each endpoint turns it into its own fields (see
/// `config::Reasoning`), or into nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Depth {
    Low,
    High,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The raw JSON arguments string, as the model produced it.
    pub arguments: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// One request: borrowed, so a long mode history is not copied per round trip.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChatRequest<'a> {
    pub messages: &'a [Message],
    pub tools: &'a [ToolDef],
    /// The reasoning depth a turn's preset asks for; `None` for background calls
    /// (compaction, summaries) and whenever no preset asks.
    pub depth: Option<Depth>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// OpenAI / llama.cpp `prompt_tokens_details.cached_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// DeepSeek `prompt_cache_hit_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_hit_tokens: Option<u64>,
    /// DeepSeek `prompt_cache_miss_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_miss_tokens: Option<u64>,
    /// Anthropic `cache_read_input_tokens` (also counted in `prompt_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Anthropic `cache_creation_input_tokens` (also counted in `prompt_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_tokens: Option<u64>,
    /// OpenAI / DeepSeek `completion_tokens_details.reasoning_tokens`: the part of
    /// `completion_tokens` spent reasoning (already counted there, billed as output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// Prompt tokens served from the provider's prefix cache, whatever the dialect calls
    /// them: OpenAI / llama.cpp `cached_tokens`, DeepSeek `prompt_cache_hit_tokens`,
    /// Anthropic `cache_read_input_tokens`.
    pub fn cached(&self) -> u64 {
        self.cached_tokens
            .or(self.cache_hit_tokens)
            .or(self.cache_read_tokens)
            .unwrap_or(0)
    }
}

#[derive(Debug, Clone, Default)]
pub struct ChatResponse {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub reasoning_content: Option<String>,
    /// Anthropic's thinking blocks with their signatures, in order.
    pub thinking: Vec<ThinkingBlock>,
    pub usage: Usage,
    pub finish_reason: Option<String>,
    /// The model the server says answered (it may differ from the one asked for, or
    /// name the endpoint's default when none was).
    pub model: Option<String>,
}

/// What one request was made of, for the audit trail. The prompt builder fills it; the
/// provider writes it beside the usage, latency and outcome of the call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptShape {
    /// The request's blocks in order with their token counts (names such as `system`,
    /// `tools`, `checkpoint`, `history`, `tail`, `turn` for this turn's tool rounds;
    /// `memory_scene` and `memory_wording`, the recalled memories' blocks this request
    /// sent, are counted apart from the `tail` that holds them).
    pub blocks: Vec<BlockTokens>,
    /// The recorded turns replayed verbatim: indexes `[from, to)` into the session's
    /// `conversation.jsonl` (or the chat's log).
    pub history_from: usize,
    pub history_to: usize,
    /// Turns `[0, n)` are represented by the checkpoint summary in use, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacted_through: Option<usize>,
    /// Hex digest of the stable prefix's bytes (system, tools, checkpoint, history).
    pub prefix_hash: String,
    /// The knowledge files whose snippets this turn's message carried (under exact
    /// replay, snippets the replayed window already held are not sent again: an earlier
    /// turn's line names them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snippets: Vec<String>,
    /// The turn sent an aside (blocks for it alone, after its message): the next turn's
    /// request cannot hold this one whole.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aside: bool,
    /// The memories scene recall brought this turn (ids, best first) — sent in the
    /// `[场景记忆]` block, or already in the replayed window; the block's tokens are the
    /// `memory_scene` block of `blocks`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memories_scene: Vec<i64>,
    /// The memories recall by wording brought this turn (ids, best first; scene recall
    /// found too few) — sent in the `[按字面找到的记忆]` block, or already in the window;
    /// the block's tokens are the `memory_wording` block of `blocks`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memories_wording: Vec<i64>,
    /// What each knowledge reference of the mode got this turn, in the order the mode
    /// lists them (the references that matched the words).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knowledge: Vec<KnowledgeShare>,
}

/// One knowledge reference's part of a request: the snippets sent (their sources), their
/// tokens (counted as the budget counts them), the reference's cap — half of the mode's
/// `retrieval_tokens` still left when its turn came — and how many of its snippets the
/// replayed window held already (not sent again).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeShare {
    pub name: String,
    pub cap: usize,
    pub tokens: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sent: Vec<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub held: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockTokens {
    pub name: String,
    pub tokens: u64,
}

/// Which turn a call was made for, and the strategy in force for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnTag {
    /// Unique per turn: when it began (ms since the epoch) and its number in the process.
    pub id: String,
    /// The strategy in force (`build`, `plan · careful`, …); `None` when no strategy
    /// flow made the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
}

impl TurnTag {
    pub fn new(began_ms: i64, turn: u64) -> Self {
        Self {
            id: format!("{began_ms}-{turn}"),
            strategy: None,
        }
    }
}
