//! OpenAI-compatible chat completions (`POST {base_url}/chat/completions`) with tool
//! calling. DeepSeek is the default; llama.cpp's server, Ollama and OpenAI itself speak
//! the same protocol. Usage fields of all three dialects are read.

use super::{ChatModel, ChatRequest, ChatResponse, Message, ProviderError, ToolCall, Usage};
use crate::config::{ResolvedProvider, Secret};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::time::Duration;

pub struct OpenAiCompatible {
    client: reqwest::Client,
    url: String,
    model: String,
    api_key: Option<Secret>,
    timeout_secs: u64,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
}

impl OpenAiCompatible {
    pub fn new(cfg: &ResolvedProvider) -> Result<Self, ProviderError> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(cfg.timeout_secs))
            .connect_timeout(Duration::from_secs(cfg.timeout_secs.min(10)))
            .build()
            .map_err(|e| ProviderError::Network(e.to_string()))?;
        Ok(Self {
            client,
            url: format!("{}/chat/completions", cfg.base_url.trim_end_matches('/')),
            model: cfg.model.clone(),
            api_key: cfg.api_key.clone(),
            timeout_secs: cfg.timeout_secs,
            temperature: cfg.temperature,
            max_tokens: cfg.max_tokens,
        })
    }

    /// The JSON body for a request (public for tests that check the wire format).
    pub fn body(&self, req: &ChatRequest<'_>) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": req.messages.iter().map(wire_message).collect::<Vec<_>>(),
            "stream": false,
        });
        if !req.tools.is_empty() {
            body["tools"] = req
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect();
            body["tool_choice"] = json!("auto");
        }
        if let Some(t) = self.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(m) = self.max_tokens {
            body["max_tokens"] = json!(m);
        }
        body
    }
}

fn wire_message(m: &Message) -> Value {
    match m {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
            reasoning_content,
        } => {
            let mut v = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                v["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect();
            }
            if let Some(r) = reasoning_content {
                v["reasoning_content"] = json!(r);
            }
            v
        }
        Message::Tool {
            tool_call_id,
            content,
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

fn parse_response(v: &Value) -> Result<ChatResponse, ProviderError> {
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| ProviderError::Malformed("no choices in the response".into()))?;
    let msg = choice
        .get("message")
        .ok_or_else(|| ProviderError::Malformed("choice without a message".into()))?;
    let content = msg
        .get("content")
        .and_then(Value::as_str)
        .map(str::to_string);
    let reasoning_content = msg
        .get("reasoning_content")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut tool_calls = Vec::new();
    if let Some(calls) = msg.get("tool_calls").and_then(Value::as_array) {
        for (i, c) in calls.iter().enumerate() {
            let f = c
                .get("function")
                .ok_or_else(|| ProviderError::Malformed("tool call without a function".into()))?;
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| ProviderError::Malformed("tool call without a name".into()))?;
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "{}".into(),
            };
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("call_{i}"));
            tool_calls.push(ToolCall {
                id,
                name: name.to_string(),
                arguments,
            });
        }
    }
    let u = v.get("usage").cloned().unwrap_or(Value::Null);
    let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    let usage = Usage {
        prompt_tokens: n(&u, "prompt_tokens").unwrap_or(0),
        completion_tokens: n(&u, "completion_tokens").unwrap_or(0),
        cached_tokens: u
            .get("prompt_tokens_details")
            .and_then(|d| n(d, "cached_tokens")),
        cache_hit_tokens: n(&u, "prompt_cache_hit_tokens"),
        cache_miss_tokens: n(&u, "prompt_cache_miss_tokens"),
    };
    Ok(ChatResponse {
        content,
        tool_calls,
        reasoning_content,
        usage,
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

#[async_trait]
impl ChatModel for OpenAiCompatible {
    async fn complete(&self, req: &ChatRequest<'_>) -> Result<ChatResponse, ProviderError> {
        let mut http = self.client.post(&self.url).json(&self.body(req));
        if let Some(k) = &self.api_key {
            http = http.bearer_auth(k.expose());
        }
        let resp = http.send().await.map_err(|e| self.classify(e))?;
        let status = resp.status();
        if !status.is_success() {
            let retry_after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|s| s.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let body = resp.text().await.unwrap_or_default();
            return Err(ProviderError::Http {
                status: status.as_u16(),
                body: body.chars().take(300).collect(),
                retry_after,
            });
        }
        let bytes = resp.bytes().await.map_err(|e| self.classify(e))?;
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ProviderError::Malformed(format!("invalid JSON: {e}")))?;
        parse_response(&v)
    }

    fn model_name(&self) -> &str {
        &self.model
    }
}

impl OpenAiCompatible {
    fn classify(&self, e: reqwest::Error) -> ProviderError {
        if e.is_timeout() {
            ProviderError::Timeout(self.timeout_secs)
        } else {
            // reqwest's message names the URL, never the Authorization header.
            ProviderError::Network(e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_all_usage_dialects() {
        let v = json!({
            "choices": [{"message": {"role":"assistant","content":"hi"}, "finish_reason":"stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 5,
                      "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36,
                      "prompt_tokens_details": {"cached_tokens": 64}}
        });
        let r = parse_response(&v).unwrap();
        assert_eq!(r.content.as_deref(), Some("hi"));
        assert_eq!(r.usage.cached_tokens, Some(64));
        assert_eq!(r.usage.cache_hit_tokens, Some(64));
        assert_eq!(r.usage.cache_miss_tokens, Some(36));
    }

    #[test]
    fn body_carries_tools_and_replays_reasoning() {
        let cfg = ResolvedProvider {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "deepseek-reasoner".into(),
            api_key: None,
            timeout_secs: 5,
            max_retries: 0,
            max_concurrent: 1,
            temperature: None,
            max_tokens: Some(512),
        };
        let client = OpenAiCompatible::new(&cfg).unwrap();
        let messages = vec![
            Message::System {
                content: "sys".into(),
            },
            Message::User {
                content: "u".into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                }],
                reasoning_content: Some("thinking".into()),
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                content: "result".into(),
            },
        ];
        let tools = crate::tools::definitions(&["cooking".into()], &["notes/".into()]);
        let body = client.body(&ChatRequest {
            messages: &messages,
            tools: &tools,
        });
        assert_eq!(body["model"], "deepseek-reasoner");
        assert_eq!(body["max_tokens"], 512);
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(body["tools"][0]["function"]["name"], "switch_mode");
        assert_eq!(body["messages"][2]["reasoning_content"], "thinking");
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{}"
        );
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        assert_eq!(client.url, "http://127.0.0.1:9/v1/chat/completions");
    }

    #[test]
    fn reads_tool_calls() {
        let v = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "switch_mode", "arguments": "{\"action\":\"enter\"}"}}
        ]}}]});
        let r = parse_response(&v).unwrap();
        assert_eq!(r.tool_calls[0].name, "switch_mode");
        assert_eq!(r.tool_calls[0].arguments, "{\"action\":\"enter\"}");
        assert!(parse_response(&json!({"choices": []})).is_err());
    }
}
