//! Anthropic Messages (`POST {base}/v1/messages`, `x-api-key`, `anthropic-version:
//! 2023-06-01`), mapped from and to the neutral [`Message`]s:
//!
//! - leading system messages become the `system` blocks; a system message later in the
//!   list (none today) is sent as user text, the API having no system role in `messages`;
//! - an assistant message becomes `text` + `tool_use` blocks (arguments as the `input`
//!   object); consecutive tool results become one user message of `tool_result` blocks,
//!   as the API requires;
//! - prompt caching: `cache_control: {"type": "ephemeral"}` on the stable prefix — the last
//!   tool, the last system block, the last history message before the current user
//!   message, and during a tool loop the newest message (so the next round reads it back)
//!   — never more than the API's 4 breakpoints ([`breakpoints`]);
//! - usage: `input_tokens` excludes the cached part, so `prompt_tokens` is input + cache
//!   read + cache creation, and the read part is `cache_read_tokens`; thinking is inside
//!   `output_tokens` (the API reports no separate count);
//! - reasoning depth: a `careful` call on a model that thinks sends `thinking` (after
//!   `messages`) with its `max_tokens` raised and no `temperature`
//!   ([`Anthropic::thinking`]); the thinking blocks of the current tool loop go back
//!   first in their assistant message, signature and all ([`thinking_replay_from`]).
//!
//! Bodies go through the same fragment cache as the OpenAI dialect ([`super::encode`]).
//! Streaming is in [`super::anthropic_stream`].

use super::anthropic_stream::{parse_response, StreamAssembler};
use super::encode::{write_json, FragmentCache, Key, ToolsCache, DEFAULT_CACHE_BYTES};
use super::error::ProviderError;
use super::http::{is_event_stream, Endpoint};
use super::model::{ChatModel, DeltaSink};
use super::types::{ChatRequest, ChatResponse, Message, ThinkingBlock};
use crate::config::{ModelChoice, Reasoning, ResolvedProvider, Secret, DEFAULT_MAX_TOKENS};
use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use std::sync::Mutex;

pub const API_VERSION: &str = "2023-06-01";
/// The API's limit on `cache_control` breakpoints per request.
pub const MAX_BREAKPOINTS: usize = 4;

pub struct Anthropic {
    pub(crate) http: Endpoint,
    model: ModelChoice,
    model_label: String,
    api_key: Option<Secret>,
    temperature: Option<f32>,
    max_tokens: u32,
    stream: bool,
    /// How a preset's depth is sent ([`Anthropic::thinking`]).
    reasoning: Reasoning,
    cache: Mutex<(FragmentCache, ToolsCache)>,
}

/// A wire message: neutral messages `[from, to)` under one role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    pub from: usize,
    pub to: usize,
    pub user: bool,
}

/// Where the `cache_control` marks go.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Breakpoints {
    pub last_tool: bool,
    pub system: bool,
    /// Indexes into the units.
    pub units: Vec<usize>,
}

impl Breakpoints {
    pub fn count(&self) -> usize {
        self.last_tool as usize + self.system as usize + self.units.len()
    }
}

/// Leading system messages, then the units of the rest.
pub fn units(messages: &[Message]) -> (usize, Vec<Unit>) {
    let systems = messages
        .iter()
        .take_while(|m| matches!(m, Message::System { .. }))
        .count();
    let mut out: Vec<Unit> = Vec::new();
    for (i, m) in messages.iter().enumerate().skip(systems) {
        let is_tool = matches!(m, Message::Tool { .. });
        if let Some(last) = out.last_mut() {
            if is_tool && matches!(messages[last.from], Message::Tool { .. }) {
                last.to = i + 1;
                continue;
            }
        }
        out.push(Unit {
            from: i,
            to: i + 1,
            user: !matches!(m, Message::Assistant { .. }),
        });
    }
    (systems, out)
}

/// The stable prefix's breakpoints: the last tool, the system, the last history unit
/// before the current (last) user message, and the newest unit when it comes after that
/// user message (a tool round). At most [`MAX_BREAKPOINTS`].
pub fn breakpoints(
    messages: &[Message],
    tools: usize,
    systems: usize,
    units: &[Unit],
) -> Breakpoints {
    let mut bp = Breakpoints {
        last_tool: tools > 0,
        system: systems > 0,
        units: Vec::new(),
    };
    let last_user = messages
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }));
    if let Some(u) = last_user.filter(|&u| u > systems) {
        if let Some(i) = units.iter().position(|x| x.from < u && u - 1 < x.to) {
            bp.units.push(i);
        }
    }
    if let (Some(u), Some(last)) = (last_user, units.len().checked_sub(1)) {
        if units[last].from > u && bp.count() < MAX_BREAKPOINTS {
            bp.units.push(last);
        }
    }
    bp
}

#[derive(Serialize, Clone, Copy)]
struct Ephemeral {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: Ephemeral = Ephemeral { kind: "ephemeral" };

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    /// Replayed as received; the API takes no `cache_control` on them.
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
    },
}

impl Block<'_> {
    fn mark(&mut self) {
        let (Block::Text { cache_control, .. }
        | Block::ToolUse { cache_control, .. }
        | Block::ToolResult { cache_control, .. }) = self
        else {
            return; // never the last block of a unit (see `unit_blocks`)
        };
        *cache_control = Some(EPHEMERAL);
    }
}

#[derive(Serialize)]
struct MsgOut<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
struct ToolOut<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Ephemeral>,
}

/// The wire blocks of a unit; an assistant's thinking blocks come first, and only when
/// `replay` says they go back (the current tool loop's).
fn unit_blocks(msgs: &[Message], replay: bool) -> Vec<Block<'_>> {
    let mut blocks = Vec::new();
    for m in msgs {
        match m {
            Message::System { content } | Message::User { content } => blocks.push(Block::Text {
                text: content,
                cache_control: None,
            }),
            Message::Assistant {
                content,
                tool_calls,
                thinking,
                ..
            } => {
                let thought = if replay { thinking.as_slice() } else { &[] };
                blocks.extend(thought.iter().map(|b| match b {
                    ThinkingBlock::Thinking {
                        thinking,
                        signature,
                    } => Block::Thinking {
                        thinking,
                        signature,
                    },
                    ThinkingBlock::RedactedThinking { data } => Block::RedactedThinking { data },
                }));
                let before = blocks.len();
                if let Some(t) = content.as_deref().filter(|t| !t.trim().is_empty()) {
                    blocks.push(Block::Text {
                        text: t,
                        cache_control: None,
                    });
                }
                for c in tool_calls {
                    // the model's arguments as the object the API wants; text that is not
                    // a JSON object (the tool already answered it with an error) as `{}`
                    let input = serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| Value::Object(Default::default()));
                    blocks.push(Block::ToolUse {
                        id: &c.id,
                        name: &c.name,
                        input,
                        cache_control: None,
                    });
                }
                if blocks.len() == before {
                    blocks.push(Block::Text {
                        text: "…",
                        cache_control: None,
                    });
                }
            }
            Message::Tool {
                tool_call_id,
                content,
            } => blocks.push(Block::ToolResult {
                tool_use_id: tool_call_id,
                content,
                cache_control: None,
            }),
        }
    }
    blocks
}

impl Anthropic {
    pub fn new(cfg: &ResolvedProvider) -> Result<Self, ProviderError> {
        let url = format!("{}/v1/messages", cfg.base_url.trim_end_matches('/'));
        Ok(Self {
            http: Endpoint::new(url, cfg)?,
            model_label: cfg.model.to_string(),
            model: cfg.model.clone(),
            api_key: cfg.api_key.clone(),
            temperature: cfg.temperature,
            max_tokens: cfg.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            stream: cfg.stream,
            reasoning: cfg.reasoning,
            cache: Mutex::new((
                FragmentCache::new(DEFAULT_CACHE_BYTES),
                ToolsCache::default(),
            )),
        })
    }

    /// The body as a tree, for tests.
    pub fn body(&self, req: &ChatRequest<'_>) -> Value {
        serde_json::from_slice(&self.encode(req)).expect("the encoder writes valid JSON")
    }

    pub fn encode(&self, req: &ChatRequest<'_>) -> Vec<u8> {
        self.encode_as(req, self.stream)
    }

    /// [`Self::encode`], streamed or not: a caller that takes the answer as it is
    /// written (a delta sink) gets a streamed one whatever `stream` says.
    pub fn encode_as(&self, req: &ChatRequest<'_>, stream: bool) -> Vec<u8> {
        let mut guard = self
            .cache
            .lock()
            .expect("the encoder lock is never poisoned");
        let (frags, tools) = &mut *guard;
        let (systems, units) = units(req.messages);
        let bp = breakpoints(req.messages, req.tools.len(), systems, &units);
        // sized like the last body: one allocation, no regrowth copies
        let mut out = Vec::with_capacity(frags.last_body + 4096);
        out.push(b'{');
        if let Some(m) = self.model.name() {
            out.extend_from_slice(b"\"model\":");
            write_json(&mut out, m);
            out.push(b',');
        }
        out.extend_from_slice(b"\"max_tokens\":");
        write_json(&mut out, &self.max_tokens_for(req.depth));
        if !req.tools.is_empty() {
            out.extend_from_slice(b",\"tools\":");
            tools.emit(req.tools, &mut out, |o| {
                let n = req.tools.len();
                let list: Vec<ToolOut> = req
                    .tools
                    .iter()
                    .enumerate()
                    .map(|(i, t)| ToolOut {
                        name: &t.name,
                        description: &t.description,
                        input_schema: &t.parameters,
                        cache_control: (i + 1 == n).then_some(EPHEMERAL),
                    })
                    .collect();
                write_json(o, &list);
            });
        }
        if systems > 0 {
            out.extend_from_slice(b",\"system\":");
            let sys = &req.messages[..systems];
            let mut key = Key::new("anthropic-system");
            for m in sys {
                key.message(m);
            }
            frags.emit(key.finish(), &mut out, |o| {
                let mut blocks = unit_blocks(sys, false);
                if let Some(b) = blocks.last_mut() {
                    b.mark();
                }
                write_json(o, &blocks);
            });
        }
        out.extend_from_slice(b",\"messages\":[");
        let replay_from = thinking_replay_from(req.messages);
        for (i, u) in units.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let marked = bp.units.contains(&i);
            let replay = u.from >= replay_from;
            let msgs = &req.messages[u.from..u.to];
            let mut key = Key::new("anthropic");
            key.flag(marked).flag(replay);
            for m in msgs {
                key.message(m);
            }
            frags.emit(key.finish(), &mut out, |o| {
                let mut content = unit_blocks(msgs, replay);
                if marked {
                    if let Some(b) = content.last_mut() {
                        b.mark();
                    }
                }
                let role = if u.user { "user" } else { "assistant" };
                write_json(o, &MsgOut { role, content });
            });
        }
        out.push(b']');
        if stream {
            out.extend_from_slice(b",\"stream\":true");
        }
        // the depth after `messages`, like the other options
        let thinking = self.thinking(req.depth);
        if let Some(t) = &thinking {
            out.extend_from_slice(b",\"thinking\":");
            write_json(&mut out, t);
        }
        // thinking takes no temperature
        if let Some(t) = self.temperature.filter(|_| thinking.is_none()) {
            out.extend_from_slice(b",\"temperature\":");
            write_json(&mut out, &t);
        }
        out.push(b'}');
        frags.last_body = out.len();
        out
    }
}

#[async_trait]
impl ChatModel for Anthropic {
    async fn complete(&self, req: &ChatRequest<'_>) -> Result<ChatResponse, ProviderError> {
        self.complete_with(req, None).await
    }

    async fn complete_with(
        &self,
        req: &ChatRequest<'_>,
        deltas: Option<&dyn DeltaSink>,
    ) -> Result<ChatResponse, ProviderError> {
        let stream = self.stream || deltas.is_some();
        let body = self.encode_as(req, stream);
        let mut post = self
            .http
            .client
            .post(&self.http.url)
            .header("anthropic-version", API_VERSION);
        if let Some(k) = &self.api_key {
            post = post.header("x-api-key", k.expose());
        }
        let resp = self.http.post(post, body, self.api_key.as_ref()).await?;
        if !stream || !is_event_stream(&resp) {
            return parse_response(&self.http.read(resp).await?);
        }
        let mut asm = StreamAssembler::default();
        super::sse::read_events(
            resp,
            self.http.max_response_bytes,
            |e| self.http.body_error(e),
            |ev| asm.push(&ev.data, deltas),
        )
        .await?;
        asm.finish()
    }

    fn model_name(&self) -> &str {
        &self.model_label
    }
}

mod thinking;
pub use thinking::{
    thinking_replay_from, ThinkingParam, MAX_THINKING_CALL_TOKENS, THINKING_BUDGET,
};

#[cfg(test)]
mod tests;
