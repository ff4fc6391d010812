//! The OpenAI-compatible answer as the servers send it, read into the neutral
//! [`ChatResponse`]: typed wire structs that tolerate each dialect's extras (usage fields
//! of all three, arguments as a string or an object). The streamed form is put together
//! in [`super::openai_stream`], which shares the usage struct.

use super::error::ProviderError;
use super::http::{call_id, malformed};
use super::types::{ChatResponse, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

// The answer as the servers send it. Unknown fields are ignored (each dialect adds its
// own); `null` is accepted wherever a field may be absent.

#[derive(Deserialize)]
struct WireAnswer {
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    /// DeepSeek's thinking models.
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<WireArguments>,
}

/// The protocol says a JSON string; some servers (Ollama's native shapes, a few proxies)
/// send the object itself.
#[derive(Deserialize)]
#[serde(untagged)]
enum WireArguments {
    Text(String),
    Object(Value),
}

#[derive(Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    /// OpenAI, llama.cpp.
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
    /// OpenAI and DeepSeek: `reasoning_tokens`, a part of `completion_tokens`.
    #[serde(default)]
    completion_tokens_details: Option<WireCompletionDetails>,
    /// DeepSeek.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    prompt_cache_miss_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub(crate) struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub(crate) struct WireCompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            prompt_tokens: u.prompt_tokens.unwrap_or(0),
            completion_tokens: u.completion_tokens.unwrap_or(0),
            cached_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
            cache_hit_tokens: u.prompt_cache_hit_tokens,
            cache_miss_tokens: u.prompt_cache_miss_tokens,
            reasoning_tokens: u.completion_tokens_details.and_then(|d| d.reasoning_tokens),
            ..Default::default()
        }
    }
}

pub(crate) fn parse_response(bytes: &[u8]) -> Result<ChatResponse, ProviderError> {
    let answer: WireAnswer = serde_json::from_slice(bytes).map_err(malformed)?;
    let choice = answer
        .choices
        .and_then(|c| c.into_iter().next())
        .ok_or_else(|| ProviderError::Malformed("no choices in the response".into()))?;
    let msg = choice
        .message
        .ok_or_else(|| ProviderError::Malformed("choice without a message".into()))?;
    let tool_calls = msg
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let f = c
                .function
                .ok_or_else(|| ProviderError::Malformed("tool call without a function".into()))?;
            let name = f
                .name
                .ok_or_else(|| ProviderError::Malformed("tool call without a name".into()))?;
            let arguments = match f.arguments {
                Some(WireArguments::Text(s)) => s,
                Some(WireArguments::Object(v)) => v.to_string(),
                None => "{}".into(),
            };
            Ok(ToolCall {
                id: call_id(c.id, i),
                name,
                arguments,
            })
        })
        .collect::<Result<Vec<_>, ProviderError>>()?;
    Ok(ChatResponse {
        content: msg.content,
        tool_calls,
        reasoning_content: msg.reasoning_content,
        thinking: Vec::new(),
        usage: answer.usage.map(Usage::from).unwrap_or_default(),
        finish_reason: choice.finish_reason,
        model: answer.model,
    })
}
