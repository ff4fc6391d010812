//! OpenAI-compatible chat completions (`POST {base_url}/chat/completions`) with tool
//! calling. DeepSeek is the default; llama.cpp's server, Ollama and OpenAI itself speak
//! the same protocol. The body is written by [`super::encode`] (typed structs, cached
//! fragments, `tools` before `messages`); the answer is read into typed wire structs that
//! tolerate each dialect's extras (usage fields of all three, arguments as a string or an
//! object), whole or as server-sent events ([`super::openai_stream`]).
//!
//! DeepSeek thinking models: see [`reasoning_replay_from`] for which `reasoning_content`
//! goes back to the API.

use super::encode::{write_json, FragmentCache, Key, ToolsCache, DEFAULT_CACHE_BYTES};
use super::error::ProviderError;
use super::http::{is_event_stream, Endpoint};
use super::model::{ChatModel, DeltaSink};
use super::openai_stream::StreamAssembler;
use super::openai_wire::parse_response;
use super::types::{ChatRequest, ChatResponse, Depth, Message};
use crate::config::{ModelChoice, Reasoning, ResolvedProvider, Secret};
use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use std::sync::Mutex;

pub struct OpenAiCompatible {
    pub(crate) http: Endpoint,
    model: ModelChoice,
    /// What `model_name` reports: the configured name or "(endpoint default)".
    model_label: String,
    api_key: Option<Secret>,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
    stream: bool,
    /// How a preset's depth is sent ([`depth_fields`]).
    reasoning: Reasoning,
    cache: Mutex<(FragmentCache, ToolsCache)>,
}

impl OpenAiCompatible {
    pub fn new(cfg: &ResolvedProvider) -> Result<Self, ProviderError> {
        let url = format!("{}/chat/completions", cfg.base_url.trim_end_matches('/'));
        Ok(Self {
            http: Endpoint::new(url, cfg)?,
            model_label: cfg.model.to_string(),
            model: cfg.model.clone(),
            api_key: cfg.api_key.clone(),
            temperature: cfg.temperature,
            max_tokens: cfg.max_tokens,
            stream: cfg.stream,
            reasoning: cfg.reasoning,
            cache: Mutex::new((
                FragmentCache::new(DEFAULT_CACHE_BYTES),
                ToolsCache::default(),
            )),
        })
    }

    /// The JSON body for a request, as a tree (for tests that check the wire format).
    /// With no model configured, `model` is left out and the endpoint uses its default.
    pub fn body(&self, req: &ChatRequest<'_>) -> Value {
        serde_json::from_slice(&self.encode(req)).expect("the encoder writes valid JSON")
    }

    /// The request body's bytes: `model`, `tools`, `messages`, then the options.
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
        // sized like the last body: one allocation, no regrowth copies
        let mut out = Vec::with_capacity(frags.last_body + 4096);
        out.push(b'{');
        if let Some(m) = self.model.name() {
            out.extend_from_slice(b"\"model\":");
            write_json(&mut out, m);
            out.push(b',');
        }
        if !req.tools.is_empty() {
            out.extend_from_slice(b"\"tools\":");
            tools.emit(req.tools, &mut out, |o| {
                let list: Vec<ToolOut> = req
                    .tools
                    .iter()
                    .map(|t| ToolOut {
                        kind: "function",
                        function: ToolFnOut {
                            name: &t.name,
                            description: &t.description,
                            parameters: &t.parameters,
                        },
                    })
                    .collect();
                write_json(o, &list);
            });
            out.extend_from_slice(b",\"tool_choice\":\"auto\",");
        }
        out.extend_from_slice(b"\"messages\":[");
        let replay_from = reasoning_replay_from(req.messages);
        let msgs = req.messages;
        let mut i = 0;
        while i < msgs.len() {
            if i > 0 {
                out.push(b',');
            }
            let m = &msgs[i];
            // user messages in a row (a turn's message and its aside) are one wire
            // message: DeepSeek's reasoner and many local chat templates refuse two
            // user messages in a row
            let run = match m {
                Message::User { .. } => msgs[i..]
                    .iter()
                    .take_while(|m| matches!(m, Message::User { .. }))
                    .count(),
                _ => 1,
            };
            if run > 1 {
                let users = &msgs[i..i + run];
                let mut key = Key::new("openai-users");
                for u in users {
                    key.message(u);
                }
                frags.emit(key.finish(), &mut out, |o| {
                    let joined = users
                        .iter()
                        .filter_map(|u| match u {
                            Message::User { content } => Some(content.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n\n");
                    write_json(o, &WireOut::User { content: &joined })
                });
            } else {
                let reasoning = i >= replay_from;
                let key = Key::new("openai").flag(reasoning).message(m).finish();
                frags.emit(key, &mut out, |o| {
                    write_json(o, &wire_message(m, reasoning))
                });
            }
            i += run;
        }
        out.extend_from_slice(b"]");
        if stream {
            out.extend_from_slice(b",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
        } else {
            out.extend_from_slice(b",\"stream\":false");
        }
        // the depth, like every option, after `messages`: the cached prefix is the same
        // whatever the preset
        let depth = depth_fields(self.reasoning, req.depth);
        out.extend_from_slice(depth.fields.as_bytes());
        if let Some(t) = self.temperature.filter(|_| depth.temperature) {
            out.extend_from_slice(b",\"temperature\":");
            write_json(&mut out, &t);
        }
        if let Some(m) = self.max_tokens {
            // OpenAI's reasoning models refuse `max_tokens` (their cap counts the reasoning)
            out.extend_from_slice(if self.reasoning == Reasoning::Openai {
                b",\"max_completion_tokens\":".as_slice()
            } else {
                b",\"max_tokens\":".as_slice()
            });
            write_json(&mut out, &m);
        }
        out.push(b'}');
        frags.last_body = out.len();
        out
    }

    /// (hits, misses) of the fragment cache: for tests and the benchmark.
    pub fn cache_counts(&self) -> (u64, u64) {
        self.cache.lock().expect("never poisoned").0.counts()
    }
}

/// What a request says about its reasoning depth: JSON fields to append (each with its
/// leading comma), and whether `temperature` may still be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DepthFields {
    pub fields: &'static str,
    pub temperature: bool,
}

/// The depth's fields for an endpoint's way ([`Reasoning`]):
///
/// - DeepSeek (api-docs.deepseek.com/guides/thinking_mode): `quick` turns thinking off
///   (`"thinking": {"type": "disabled"}`); `careful` turns it on at the highest effort
///   (`"type": "enabled"` + `"reasoning_effort": "max"`). Thinking mode ignores
///   `temperature`, so it is left out then.
/// - OpenAI reasoning models: `"reasoning_effort"` `low` / `high`, without `temperature`
///   (those models refuse it).
/// - otherwise, or with no depth asked for: nothing, and the configured temperature.
pub fn depth_fields(way: Reasoning, depth: Option<Depth>) -> DepthFields {
    let (fields, temperature) = match (way, depth) {
        (Reasoning::Deepseek, Some(Depth::Low)) => (r#","thinking":{"type":"disabled"}"#, true),
        (Reasoning::Deepseek, Some(Depth::High)) => (
            r#","thinking":{"type":"enabled"},"reasoning_effort":"max""#,
            false,
        ),
        (Reasoning::Openai, Some(Depth::Low)) => (r#","reasoning_effort":"low""#, false),
        (Reasoning::Openai, Some(Depth::High)) => (r#","reasoning_effort":"high""#, false),
        _ => ("", true),
    };
    DepthFields {
        fields,
        temperature,
    }
}

/// Which assistant messages carry their `reasoning_content` back to the API: those from
/// this index on — the ones after the last user message, i.e. the current turn's tool
/// loop.
///
/// DeepSeek's rule (thinking mode guide): between two user messages, if the model called
/// tools, that stretch's reasoning must be sent back (a 400 otherwise); if it did not, the
/// reasoning is not needed and the older `deepseek-reasoner` refuses it with a 400.
/// homebot replays earlier turns as their recorded text only — user words and the final
/// answer, never their tool calls — so an earlier turn has no tool-calling stretch whose
/// reasoning would be required, and sending its reasoning could only be refused. Within
/// the current turn every assistant message carries tool calls (a reply without them ends
/// the loop), so their reasoning goes back. Other OpenAI-compatible servers ignore or
/// never see the field (it is only set when the server sent it).
pub fn reasoning_replay_from(messages: &[Message]) -> usize {
    messages
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }))
        .map_or(0, |i| i + 1)
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireOut<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<CallOut<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<&'a str>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct CallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FnOut<'a>,
}

#[derive(Serialize)]
struct FnOut<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct ToolOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ToolFnOut<'a>,
}

#[derive(Serialize)]
struct ToolFnOut<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

fn wire_message(m: &Message, with_reasoning: bool) -> WireOut<'_> {
    match m {
        Message::System { content } => WireOut::System { content },
        Message::User { content } => WireOut::User { content },
        Message::Assistant {
            content,
            tool_calls,
            reasoning_content,
            ..
        } => WireOut::Assistant {
            content: content.as_deref(),
            tool_calls: tool_calls
                .iter()
                .map(|c| CallOut {
                    id: &c.id,
                    kind: "function",
                    function: FnOut {
                        name: &c.name,
                        arguments: &c.arguments,
                    },
                })
                .collect(),
            reasoning_content: reasoning_content.as_deref().filter(|_| with_reasoning),
        },
        Message::Tool {
            tool_call_id,
            content,
        } => WireOut::Tool {
            tool_call_id,
            content,
        },
    }
}

#[async_trait]
impl ChatModel for OpenAiCompatible {
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
        let mut post = self.http.client.post(&self.http.url);
        if let Some(k) = &self.api_key {
            post = post.bearer_auth(k.expose());
        }
        let resp = self.http.post(post, body, self.api_key.as_ref()).await?;
        if !stream || !is_event_stream(&resp) {
            // a server may ignore `stream` and answer whole
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

#[cfg(test)]
mod tests;
