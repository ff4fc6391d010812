//! Anthropic answers read back: a whole `message`, or its server-sent events
//! (`message_start` with the input usage, `content_block_start` / `_delta` by block index
//! — text, `tool_use` with its `input_json_delta` pieces, thinking with its
//! `signature_delta`, redacted thinking — `message_delta` with
//! the stop reason and output usage, `message_stop`; `ping` ignored; an `error` event
//! becomes the HTTP error it stands for, so an overloaded stream is retried).

use super::error::ProviderError;
use super::http::{call_id, malformed, short};
use super::model::DeltaSink;
use super::types::{ChatResponse, ThinkingBlock, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Deserialize, Default)]
struct AnswerIn {
    #[serde(default)]
    content: Option<Vec<BlockIn>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<UsageIn>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockIn {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        /// Whole in an answer; empty at a stream's block start, then a `signature_delta`.
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct UsageIn {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl From<UsageIn> for Usage {
    fn from(u: UsageIn) -> Self {
        let read = u.cache_read_input_tokens;
        let created = u.cache_creation_input_tokens;
        Usage {
            prompt_tokens: u
                .input_tokens
                .unwrap_or(0)
                .saturating_add(read.unwrap_or(0))
                .saturating_add(created.unwrap_or(0)),
            completion_tokens: u.output_tokens.unwrap_or(0),
            cache_read_tokens: read,
            cache_creation_tokens: created,
            ..Default::default()
        }
    }
}

#[derive(Deserialize)]
struct ErrIn {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    message: String,
}

/// The stop reason in the neutral words the agent checks (`length` above all).
fn finish_reason(stop: Option<String>) -> Option<String> {
    stop.map(|s| {
        match s.as_str() {
            "max_tokens" => "length",
            "tool_use" => "tool_calls",
            "end_turn" | "stop_sequence" => "stop",
            other => other,
        }
        .to_string()
    })
}

/// An error the server reported inside a 200 answer, as the HTTP status it stands for.
fn error_event(e: ErrIn) -> ProviderError {
    let status = match e.kind.as_str() {
        "overloaded_error" => 529,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "request_too_large" => 413,
        _ => 400,
    };
    ProviderError::Http {
        status,
        body: short(&format!("{}: {}", e.kind, e.message)),
        retry_after: None,
    }
}

fn tool_call(
    i: usize,
    id: Option<String>,
    name: String,
    input: &Value,
) -> Result<ToolCall, ProviderError> {
    if name.is_empty() {
        return Err(ProviderError::Malformed("tool call without a name".into()));
    }
    Ok(ToolCall {
        id: call_id(id, i),
        name,
        arguments: if input.is_null() {
            "{}".into()
        } else {
            input.to_string()
        },
    })
}

pub fn parse_response(bytes: &[u8]) -> Result<ChatResponse, ProviderError> {
    #[derive(Deserialize)]
    struct Top {
        #[serde(default, rename = "type")]
        kind: String,
        #[serde(default)]
        error: Option<ErrIn>,
        #[serde(flatten)]
        answer: AnswerIn,
    }
    let top: Top = serde_json::from_slice(bytes).map_err(malformed)?;
    if top.kind == "error" {
        return Err(error_event(top.error.unwrap_or(ErrIn {
            kind: "error".into(),
            message: String::new(),
        })));
    }
    let a = top.answer;
    let blocks = a
        .content
        .ok_or_else(|| ProviderError::Malformed("no content in the response".into()))?;
    let (mut text, mut reasoning, mut calls) = (None::<String>, None::<String>, Vec::new());
    let mut kept = Vec::new();
    for b in blocks {
        match b {
            BlockIn::Text { text: t } => text.get_or_insert_with(String::new).push_str(&t),
            BlockIn::Thinking {
                thinking,
                signature,
            } => {
                reasoning
                    .get_or_insert_with(String::new)
                    .push_str(&thinking);
                kept.push(ThinkingBlock::Thinking {
                    thinking,
                    signature,
                });
            }
            BlockIn::RedactedThinking { data } => {
                kept.push(ThinkingBlock::RedactedThinking { data })
            }
            BlockIn::ToolUse { id, name, input } => {
                calls.push(tool_call(calls.len(), id, name, &input)?)
            }
            BlockIn::Other => {}
        }
    }
    Ok(ChatResponse {
        content: text,
        tool_calls: calls,
        reasoning_content: reasoning,
        thinking: kept,
        usage: a.usage.map(Usage::from).unwrap_or_default(),
        finish_reason: finish_reason(a.stop_reason),
        model: a.model,
    })
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum EventIn {
    MessageStart {
        message: AnswerIn,
    },
    ContentBlockStart {
        index: u64,
        content_block: BlockIn,
    },
    ContentBlockDelta {
        index: u64,
        delta: DeltaIn,
    },
    MessageDelta {
        #[serde(default)]
        delta: Option<MessageDeltaIn>,
        #[serde(default)]
        usage: Option<UsageIn>,
    },
    MessageStop,
    Error {
        error: ErrIn,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum DeltaIn {
    TextDelta {
        #[serde(default)]
        text: String,
    },
    InputJsonDelta {
        #[serde(default)]
        partial_json: String,
    },
    ThinkingDelta {
        #[serde(default)]
        thinking: String,
    },
    SignatureDelta {
        #[serde(default)]
        signature: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaIn {
    #[serde(default)]
    stop_reason: Option<String>,
}

enum Acc {
    Text(String),
    Tool {
        id: Option<String>,
        name: String,
        json: String,
    },
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
}

#[derive(Default)]
pub struct StreamAssembler {
    blocks: BTreeMap<u64, Acc>,
    input: UsageIn,
    output: Option<u64>,
    stop: Option<String>,
    model: Option<String>,
    started: bool,
}

impl StreamAssembler {
    /// One event's data; `Ok(true)` at `message_stop`.
    pub fn push(
        &mut self,
        data: &str,
        sink: Option<&dyn DeltaSink>,
    ) -> Result<bool, ProviderError> {
        let ev: EventIn = serde_json::from_str(data).map_err(malformed)?;
        match ev {
            EventIn::MessageStart { message } => {
                self.started = true;
                self.model = message.model;
                self.input = message.usage.unwrap_or_default();
            }
            EventIn::ContentBlockStart {
                index,
                content_block,
            } => {
                let acc = match content_block {
                    BlockIn::Text { text } => Acc::Text(text),
                    BlockIn::Thinking {
                        thinking,
                        signature,
                    } => Acc::Thinking {
                        text: thinking,
                        signature,
                    },
                    BlockIn::RedactedThinking { data } => Acc::Redacted(data),
                    BlockIn::ToolUse { id, name, .. } => {
                        if let Some(s) = sink {
                            s.tool_call();
                        }
                        Acc::Tool {
                            id,
                            name,
                            json: String::new(),
                        }
                    }
                    BlockIn::Other => return Ok(false),
                };
                self.blocks.insert(index, acc);
            }
            EventIn::ContentBlockDelta { index, delta } => {
                match (self.blocks.get_mut(&index), delta) {
                    (Some(Acc::Text(t)), DeltaIn::TextDelta { text }) => {
                        if let Some(s) = sink {
                            s.text(&text);
                        }
                        t.push_str(&text);
                    }
                    (Some(Acc::Tool { json, .. }), DeltaIn::InputJsonDelta { partial_json }) => {
                        json.push_str(&partial_json)
                    }
                    (Some(Acc::Thinking { text, .. }), DeltaIn::ThinkingDelta { thinking }) => {
                        text.push_str(&thinking)
                    }
                    (
                        Some(Acc::Thinking { signature, .. }),
                        DeltaIn::SignatureDelta { signature: s },
                    ) => signature.push_str(&s),
                    _ => {} // a delta for no block, or of another kind: nothing to add it to
                }
            }
            EventIn::MessageDelta { delta, usage } => {
                if let Some(s) = delta.and_then(|d| d.stop_reason) {
                    self.stop = Some(s);
                }
                if let Some(u) = usage {
                    self.output = u.output_tokens.or(self.output);
                    // some servers report the input side here too
                    if u.input_tokens.is_some() {
                        self.input.input_tokens = u.input_tokens;
                    }
                    if u.cache_read_input_tokens.is_some() {
                        self.input.cache_read_input_tokens = u.cache_read_input_tokens;
                    }
                    if u.cache_creation_input_tokens.is_some() {
                        self.input.cache_creation_input_tokens = u.cache_creation_input_tokens;
                    }
                }
            }
            EventIn::MessageStop => return Ok(true),
            EventIn::Error { error } => return Err(error_event(error)),
            EventIn::Other => {}
        }
        Ok(false)
    }

    pub fn finish(self) -> Result<ChatResponse, ProviderError> {
        if !self.started {
            return Err(ProviderError::Malformed(
                "the stream ended without an answer".into(),
            ));
        }
        if self.stop.is_none() {
            // `message_delta` names the stop reason of every complete message
            return Err(ProviderError::Truncated);
        }
        let (mut text, mut reasoning, mut calls) = (None::<String>, None::<String>, Vec::new());
        let mut kept = Vec::new();
        for acc in self.blocks.into_values() {
            match acc {
                Acc::Text(t) => text.get_or_insert_with(String::new).push_str(&t),
                Acc::Thinking { text: t, signature } => {
                    reasoning.get_or_insert_with(String::new).push_str(&t);
                    kept.push(ThinkingBlock::Thinking {
                        thinking: t,
                        signature,
                    });
                }
                Acc::Redacted(data) => kept.push(ThinkingBlock::RedactedThinking { data }),
                Acc::Tool { id, name, json } => {
                    let input = if json.trim().is_empty() {
                        Value::Object(Default::default())
                    } else {
                        serde_json::from_str(&json).map_err(malformed)?
                    };
                    calls.push(tool_call(calls.len(), id, name, &input)?);
                }
            }
        }
        let mut usage = self.input;
        usage.output_tokens = self.output.or(usage.output_tokens);
        Ok(ChatResponse {
            content: text,
            tool_calls: calls,
            reasoning_content: reasoning,
            thinking: kept,
            usage: usage.into(),
            finish_reason: finish_reason(self.stop),
            model: self.model,
        })
    }
}
