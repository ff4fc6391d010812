//! OpenAI-compatible chat completions (`POST {base_url}/chat/completions`) with tool
//! calling. DeepSeek is the default; llama.cpp's server, Ollama and OpenAI itself speak
//! the same protocol. The answer is read into typed wire structs that tolerate each
//! dialect's extras (usage fields of all three, arguments as a string or an object).
//!
//! (Past 500 lines only because its unit tests live beside the code; the code is ~350.)

use super::{
    read_capped, BodyError, ChatModel, ChatRequest, ChatResponse, Message, ProviderError, ToolCall,
    Usage,
};
use crate::config::{ModelChoice, ResolvedProvider, Secret};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

/// Largest error body read; at most [`MAX_ERROR_CHARS`] of it is kept.
const MAX_ERROR_BYTES: usize = 64 * 1024;
const MAX_ERROR_CHARS: usize = 300;

pub struct OpenAiCompatible {
    client: reqwest::Client,
    url: String,
    /// `url` fit for messages: no credentials, no query.
    shown_url: String,
    model: ModelChoice,
    /// What `model_name` reports: the configured name or "(endpoint default)".
    model_label: String,
    api_key: Option<Secret>,
    timeout_secs: u64,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
    /// Largest answer read (`provider.max_response_bytes`, by default derived from
    /// `max_tokens`): a reply capped at `max_tokens` is far smaller; anything bigger is a
    /// confused server, not a reply, and is refused while it streams in.
    max_response_bytes: usize,
}

impl OpenAiCompatible {
    pub fn new(cfg: &ResolvedProvider) -> Result<Self, ProviderError> {
        let url = format!("{}/chat/completions", cfg.base_url.trim_end_matches('/'));
        let shown_url = crate::config::display_url(&url);
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(cfg.timeout_secs))
            .connect_timeout(Duration::from_secs(cfg.timeout_secs.min(10)))
            .build()
            .map_err(|source| ProviderError::Network {
                url: shown_url.clone(),
                source,
            })?;
        Ok(Self {
            client,
            url,
            shown_url,
            model_label: cfg.model.to_string(),
            model: cfg.model.clone(),
            api_key: cfg.api_key.clone(),
            timeout_secs: cfg.timeout_secs,
            temperature: cfg.temperature,
            max_tokens: cfg.max_tokens,
            max_response_bytes: cfg.max_response_bytes,
        })
    }

    /// The JSON body for a request (public for tests that check the wire format). With no
    /// model configured, `model` is left out and the endpoint uses its default.
    pub fn body(&self, req: &ChatRequest<'_>) -> Value {
        let mut body = json!({
            "messages": req.messages.iter().map(wire_message).collect::<Vec<_>>(),
            "stream": false,
        });
        if let Some(m) = self.model.name() {
            body["model"] = json!(m);
        }
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
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    /// OpenAI, llama.cpp.
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
    /// DeepSeek.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    prompt_cache_miss_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

fn parse_response(bytes: &[u8]) -> Result<ChatResponse, ProviderError> {
    let answer: WireAnswer = serde_json::from_slice(bytes).map_err(|e| {
        let what = if e.is_data() {
            "unexpected shape"
        } else {
            "invalid JSON"
        };
        ProviderError::Malformed(short(&format!("{what}: {e}")))
    })?;
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
                id: c
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("call_{i}")),
                name,
                arguments,
            })
        })
        .collect::<Result<Vec<_>, ProviderError>>()?;
    let usage = answer
        .usage
        .map(|u| Usage {
            prompt_tokens: u.prompt_tokens.unwrap_or(0),
            completion_tokens: u.completion_tokens.unwrap_or(0),
            cached_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
            cache_hit_tokens: u.prompt_cache_hit_tokens,
            cache_miss_tokens: u.prompt_cache_miss_tokens,
        })
        .unwrap_or_default();
    Ok(ChatResponse {
        content: msg.content,
        tool_calls,
        reasoning_content: msg.reasoning_content,
        usage,
        finish_reason: choice.finish_reason,
        model: answer.model,
    })
}

/// At most [`MAX_ERROR_CHARS`] characters, whitespace runs folded: error texts end up in
/// logs and records, and a server may send a whole HTML page.
fn short(s: &str) -> String {
    let folded = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= MAX_ERROR_CHARS {
        return folded;
    }
    let mut out: String = folded.chars().take(MAX_ERROR_CHARS - 1).collect();
    out.push('…');
    out
}

/// `Retry-After` as seconds or as an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    Some(
        (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
            .to_std()
            .unwrap_or(Duration::ZERO),
    )
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
            let retry_after = retry_after(resp.headers());
            let mut body = match read_capped(resp, MAX_ERROR_BYTES).await {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(e) => format!("({e})"),
            };
            // some servers echo the key they refused; the body ends up in logs
            if let Some(k) = self.api_key.as_ref().filter(|k| !k.expose().is_empty()) {
                body = body.replace(k.expose(), "***");
            }
            let body = short(&body);
            return Err(ProviderError::Http {
                status: status.as_u16(),
                body,
                retry_after,
            });
        }
        let bytes = read_capped(resp, self.max_response_bytes)
            .await
            .map_err(|e| match e {
                BodyError::Read(e) => self.classify(e),
                BodyError::TooLarge(cap) => ProviderError::TooLarge(cap),
            })?;
        parse_response(&bytes)
    }

    fn model_name(&self) -> &str {
        &self.model_label
    }
}

impl OpenAiCompatible {
    fn classify(&self, e: reqwest::Error) -> ProviderError {
        if e.is_timeout() {
            ProviderError::Timeout(self.timeout_secs)
        } else {
            // the printable URL replaces reqwest's, which could carry credentials
            ProviderError::Network {
                url: self.shown_url.clone(),
                source: e.without_url(),
            }
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
        let r = parse(&v).unwrap();
        assert_eq!(r.content.as_deref(), Some("hi"));
        assert_eq!(r.usage.cached_tokens, Some(64));
        assert_eq!(r.usage.cache_hit_tokens, Some(64));
        assert_eq!(r.usage.cache_miss_tokens, Some(36));
    }

    #[test]
    fn body_carries_tools_and_replays_reasoning() {
        let cfg = ResolvedProvider {
            model: ModelChoice(Some("deepseek-reasoner".into())),
            max_tokens: Some(512),
            ..super::super::tests::test_cfg()
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
        let skills = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
        let registry = crate::modes::ModeRegistry::load(&[skills], crate::skills::PLUGINS);
        let tools = crate::tools::definitions(&registry, &["notes/".into()]);
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
        let r = parse(&v).unwrap();
        assert_eq!(r.tool_calls[0].name, "switch_mode");
        assert_eq!(r.tool_calls[0].arguments, "{\"action\":\"enter\"}");
        assert!(parse(&json!({"choices": []})).is_err());
    }

    fn parse(v: &Value) -> Result<ChatResponse, ProviderError> {
        parse_response(v.to_string().as_bytes())
    }

    #[test]
    fn object_arguments_become_their_json_text_and_ids_are_filled_in() {
        let v = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"type": "function", "function": {"name": "list_files", "arguments": {"path": "notes/"}}},
            {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
            {"id": null, "type": "function", "function": {"name": "list_files"}}
        ]}, "finish_reason": "tool_calls"}]});
        let r = parse(&v).unwrap();
        let calls: Vec<_> = r
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("call_0", "list_files", "{\"path\":\"notes/\"}"),
                ("c2", "read_file", "{\"path\":\"a\"}"),
                ("call_2", "list_files", "{}"),
            ]
        );
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        let parsed: Value = serde_json::from_str(&r.tool_calls[0].arguments).unwrap();
        assert_eq!(parsed, json!({"path": "notes/"}));
    }

    #[test]
    fn missing_or_null_usage_reads_as_zero() {
        for v in [
            json!({"choices": [{"message": {"content": "hi"}}]}),
            json!({"choices": [{"message": {"content": "hi"}}], "usage": null}),
            json!({"choices": [{"message": {"content": "hi"}}],
                   "usage": {"prompt_tokens": null, "prompt_tokens_details": null}}),
        ] {
            let r = parse(&v).unwrap();
            assert_eq!(r.content.as_deref(), Some("hi"), "{v}");
            assert_eq!(r.usage, Usage::default(), "{v}");
            assert_eq!(r.finish_reason, None);
        }
        let r = parse(
            &json!({"model": "qwen2.5-7b", "choices": [{"message": {"content": "x"}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2,
                      "prompt_tokens_details": {"cached_tokens": 3}}}),
        )
        .unwrap();
        assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (7, 2));
        assert_eq!(r.usage.cached_tokens, Some(3));
        assert_eq!(r.usage.cache_hit_tokens, None);
        assert_eq!(r.model.as_deref(), Some("qwen2.5-7b"));
    }

    #[test]
    fn malformed_answers_say_what_is_missing_briefly() {
        let msg = |v: Value| parse(&v).unwrap_err().to_string();
        assert!(msg(json!({"choices": [{}]})).contains("choice without a message"));
        assert!(msg(json!({})).contains("no choices"));
        assert!(
            msg(json!({"choices": [{"message": {"tool_calls": [{"id": "x"}]}}]}))
                .contains("tool call without a function")
        );
        assert!(
            msg(json!({"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}))
                .contains("tool call without a name")
        );
        let long = format!("{{\"choices\": \"{}", "x".repeat(5000));
        let e = parse_response(long.as_bytes()).unwrap_err().to_string();
        assert!(e.chars().count() < 400, "{e}");
        assert_eq!(short(&"y ".repeat(1000)).chars().count(), MAX_ERROR_CHARS);
    }

    #[test]
    fn body_omits_the_model_when_none_is_configured() {
        let cfg = super::super::tests::test_cfg();
        let client = OpenAiCompatible::new(&cfg).unwrap();
        let body = client.body(&ChatRequest {
            messages: &[],
            tools: &[],
        });
        assert!(body.get("model").is_none(), "{body}");
        assert!(body.get("max_tokens").is_none(), "{body}");
        assert_eq!(client.model_name(), "(endpoint default)");
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "7".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(
            retry_after(&h),
            Some(Duration::ZERO),
            "a past date: no wait"
        );
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(20)).to_rfc2822();
        h.insert("retry-after", soon.parse().unwrap());
        let d = retry_after(&h).unwrap();
        assert!(
            d > Duration::from_secs(15) && d <= Duration::from_secs(20),
            "{d:?}"
        );
        h.insert("retry-after", "soon".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }
}
