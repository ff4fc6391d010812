//! A streamed chat completion put back together: text and reasoning deltas appended (text
//! also handed to the caller's sink as it comes), tool calls assembled by their `index`
//! (id and name from the first delta that has them, arguments concatenated across
//! chunks), the finish reason, and the usage the final chunk carries when
//! `stream_options.include_usage` was asked for. `[DONE]` ends it; an `error` object in a
//! chunk ends it as the HTTP error it names (a 5xx unless it says otherwise, so retried).

use super::error::ProviderError;
use super::http::{call_id, malformed, short};
use super::model::DeltaSink;
use super::openai_wire::WireUsage;
use super::types::{ChatResponse, ToolCall, Usage};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Default)]
pub struct StreamAssembler {
    content: Option<String>,
    reasoning: Option<String>,
    calls: BTreeMap<u64, PartialCall>,
    usage: Option<Usage>,
    finish: Option<String>,
    model: Option<String>,
    chunks: usize,
}

#[derive(Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    model: Option<String>,
    /// Some servers report a failure mid-stream as `data: {"error": {…}}`.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<DeltaCall>>,
}

#[derive(Deserialize)]
struct DeltaCall {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<DeltaFn>,
}

#[derive(Deserialize)]
struct DeltaFn {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

impl StreamAssembler {
    /// One event's data; `Ok(true)` at `[DONE]`.
    pub fn push(
        &mut self,
        data: &str,
        sink: Option<&dyn DeltaSink>,
    ) -> Result<bool, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(malformed)?;
        if let Some(e) = chunk.error.filter(|e| !e.is_null()) {
            // the answer broke off on the server's side: worth another attempt
            let status = e["code"]
                .as_u64()
                .filter(|c| (400..600).contains(c))
                .unwrap_or(500) as u16;
            return Err(ProviderError::Http {
                status,
                body: short(&e.to_string()),
                retry_after: None,
            });
        }
        self.chunks += 1;
        if chunk.model.is_some() {
            self.model = chunk.model;
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(u.into());
        }
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return Ok(false); // the usage-only final chunk
        };
        if choice.finish_reason.is_some() {
            self.finish = choice.finish_reason;
        }
        let Some(delta) = choice.delta else {
            return Ok(false);
        };
        if let Some(t) = delta.content.filter(|t| !t.is_empty()) {
            if let Some(s) = sink {
                s.text(&t);
            }
            self.content.get_or_insert_with(String::new).push_str(&t);
        }
        if let Some(r) = delta.reasoning_content {
            self.reasoning.get_or_insert_with(String::new).push_str(&r);
        }
        let calls = delta.tool_calls.unwrap_or_default();
        if let (Some(s), false) = (sink, calls.is_empty()) {
            s.tool_call();
        }
        for (pos, c) in calls.into_iter().enumerate() {
            let slot = self.calls.entry(c.index.unwrap_or(pos as u64)).or_default();
            if slot.id.is_none() {
                slot.id = c.id.filter(|i| !i.is_empty());
            }
            if let Some(f) = c.function {
                if let Some(n) = f.name.filter(|n| !n.is_empty()) {
                    if slot.name.is_empty() {
                        slot.name = n;
                    }
                }
                if let Some(a) = f.arguments {
                    slot.arguments.push_str(&a);
                }
            }
        }
        Ok(false)
    }

    pub fn finish(self) -> Result<ChatResponse, ProviderError> {
        if self.chunks == 0 {
            return Err(ProviderError::Malformed(
                "the stream ended without an answer".into(),
            ));
        }
        if self.finish.is_none() {
            // every complete answer names why it stopped; without it the stream was cut
            // (and half a tool call's arguments must not reach the tool)
            return Err(ProviderError::Truncated);
        }
        let tool_calls = self
            .calls
            .into_values()
            .enumerate()
            .map(|(i, c)| {
                if c.name.is_empty() {
                    return Err(ProviderError::Malformed("tool call without a name".into()));
                }
                Ok(ToolCall {
                    id: call_id(c.id, i),
                    name: c.name,
                    arguments: if c.arguments.trim().is_empty() {
                        "{}".into()
                    } else {
                        c.arguments
                    },
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ChatResponse {
            content: self.content,
            tool_calls,
            reasoning_content: self.reasoning,
            thinking: Vec::new(),
            usage: self.usage.unwrap_or_default(),
            finish_reason: self.finish,
            model: self.model,
        })
    }
}
