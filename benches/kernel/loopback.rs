//! The loopback provider the real-path tables use: an OpenAI-compatible HTTP server on
//! 127.0.0.1 that reads and parses every request body and bills it under two kinds of
//! prompt cache ([`Seen`]); the kernels that talk to it; one long mode session with
//! compaction on.

use super::*;

/// What the loopback server saw of the turn requests (compactions are counted apart),
/// billed under two kinds of prompt cache:
///
/// - longest common prefix (OpenAI, llama.cpp): the bytes a body shares with the
///   previous turn request's body;
/// - DeepSeek's units (its "Context Caching" guide): a request hits only a whole unit,
///   and units are persisted at the end of each request's input and at the end of the
///   model's output (rule 1) — compared message by message, the tools first. Rule 2
///   (a common prefix the service detects across requests) is billed apart as an
///   optimistic column: the longest message-level prefix shared with any earlier
///   request. Rule 3 (fixed intervals inside long inputs) is not billed.
///
/// Sizes are bytes of the JSON; tokens are bytes / 4. Every figure is from the second
/// turn request on (the first can hit nothing).
#[derive(Default)]
pub(super) struct Seen {
    pub(super) prev: Vec<u8>,
    pub(super) turns: u64,
    pub(super) compactions: u64,
    /// Σ over turn requests from the second: body bytes, LCP-cached bytes.
    pub(super) prompt_bytes: u64,
    pub(super) cached_bytes: u64,
    /// Σ over turn requests from the second: message bytes (tools included), cached
    /// under DeepSeek's rule 1, under rules 1 and 2.
    pub(super) unit_bytes: u64,
    pub(super) unit_cached: u64,
    pub(super) unit_cached_r2: u64,
    /// Rule-1 units persisted, and every message-level prefix seen (rule 2).
    pub(super) units: std::collections::HashSet<u64>,
    pub(super) prefixes: std::collections::HashSet<u64>,
    /// The previous turn request's own unit (its end), and how many turn requests held
    /// it whole.
    pub(super) prev_unit: Option<u64>,
    pub(super) prev_unit_hits: u64,
    /// By system message (a mode session's frozen prompt): the end of its last request.
    /// A turn request whose system message differs from the previous one's but was
    /// seen before goes back to a session (a sub-mode's parent resumed): counted in
    /// `returns`, and in `return_hits` when it held that session's last request whole.
    pub(super) last_of: std::collections::HashMap<u64, u64>,
    pub(super) prev_system: Option<u64>,
    pub(super) returns: u64,
    pub(super) return_hits: u64,
}

impl Seen {
    pub(super) fn ratio(&self) -> f64 {
        frac(self.cached_bytes, self.prompt_bytes)
    }
    pub(super) fn unit_ratio(&self) -> f64 {
        frac(self.unit_cached, self.unit_bytes)
    }
    pub(super) fn unit_ratio_r2(&self) -> f64 {
        frac(self.unit_cached_r2, self.unit_bytes)
    }

    /// Bill one turn request (parsed `v`, raw `body`) and persist its units; `out` is
    /// the assistant message it gets (words, or tool calls).
    pub(super) fn bill(&mut self, v: &serde_json::Value, body: &[u8], out: &serde_json::Value) {
        let fold = |h: u64, bytes: &[u8]| homebot::context::fnv1a(h, bytes);
        let tools = v.get("tools").map(|t| t.to_string()).unwrap_or_default();
        let mut h = fold(homebot::context::FNV_SEED, tools.as_bytes());
        let mut size = tools.len() as u64;
        // (hash, bytes) at the end of each message
        let mut chain = Vec::new();
        for m in v["messages"].as_array().into_iter().flatten() {
            h = fold(h, message_key(m).as_bytes());
            size += m.to_string().len() as u64;
            chain.push((h, size));
        }
        let counted = self.turns > 0;
        if counted {
            let common = self
                .prev
                .iter()
                .zip(body.iter())
                .take_while(|(a, b)| a == b)
                .count() as u64;
            self.prompt_bytes += body.len() as u64;
            self.cached_bytes += common;
            let hit = |set: &std::collections::HashSet<u64>| {
                chain
                    .iter()
                    .rev()
                    .find(|(h, _)| set.contains(h))
                    .map_or(0, |&(_, b)| b)
            };
            self.unit_bytes += size;
            self.unit_cached += hit(&self.units);
            self.unit_cached_r2 += hit(&self.units).max(hit(&self.prefixes));
            if let Some(p) = self.prev_unit {
                self.prev_unit_hits += u64::from(chain.iter().any(|&(h, _)| h == p));
            }
        }
        let system = fold(
            homebot::context::FNV_SEED,
            v["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .as_bytes(),
        );
        if self.prev_system.is_some_and(|p| p != system) {
            if let Some(&last) = self.last_of.get(&system) {
                self.returns += 1;
                self.return_hits += u64::from(chain.iter().any(|&(h, _)| h == last));
            }
        }
        self.prev_system = Some(system);
        self.turns += 1;
        self.prev = body.to_vec();
        // rule 1: the end of the input, and the end of the output
        let end = chain.last().map_or(h, |&(h, _)| h);
        self.units.insert(end);
        self.units.insert(fold(end, message_key(out).as_bytes()));
        self.prefixes.extend(chain.iter().map(|&(h, _)| h));
        self.prev_unit = Some(end);
        self.last_of.insert(system, end);
    }
}

pub(super) fn frac(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// A message as the model's template sees it: its role, its text and its tool calls
/// (a reply the model wrote and the same reply replayed are one message).
pub(super) fn message_key(m: &serde_json::Value) -> String {
    format!(
        "{}\u{0}{}\u{0}{}",
        m["role"].as_str().unwrap_or_default(),
        m["content"].as_str().unwrap_or_default(),
        m.get("tool_calls")
            .map(|t| t.to_string())
            .unwrap_or_default()
    )
}

/// A loopback OpenAI-compatible server that parses each request body (as a real one
/// must) and answers at once; it reports as usage the prefix it shares with the previous
/// turn request (cached) — in bytes / 4, a token stand-in — and bills every turn request
/// under both caches ([`Seen`]). Returns its base URL.
pub(super) async fn loopback_llm() -> (String, Arc<std::sync::Mutex<Seen>>) {
    use axum::extract::State;
    use axum::routing::post;
    type Shared = Arc<std::sync::Mutex<Seen>>;
    async fn answer(
        State(seen): State<Shared>,
        body: axum::body::Bytes,
    ) -> axum::Json<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_slice(&body).expect("a JSON request");
        let n = v["messages"].as_array().map_or(0, Vec::len);
        // a sub-mode's summary, written after it ends, is no turn either (billed apart
        // like a compaction)
        let summary_head: String = homebot::summarizer::instruction(None)
            .chars()
            .take(12)
            .collect();
        let system = v["messages"][0]["content"].as_str().unwrap_or_default();
        let summary = system.starts_with(&summary_head);
        let compaction = system.starts_with("[压缩历史]");
        let last = v["messages"].as_array().and_then(|m| m.last());
        let last_role = last.map_or("", |m| m["role"].as_str().unwrap_or_default());
        let last_text = last.map_or("", |m| m["content"].as_str().unwrap_or_default());
        // a timer asked for: one tool round (set_reminder), then the words
        let timer = !compaction && !summary && last_role == "user" && last_text.contains("提醒我");
        let content = if compaction {
            "前面几轮：一家三口做番茄炒蛋，鸡蛋六个、番茄三个，18:05 蛋已炒好盛出。".to_string()
        } else if last_role == "tool" {
            format!("好的，十分钟后提醒你关火。（{n}）")
        } else {
            format!("好的，两个人放两个番茄，约一百五十克。（{n}）")
        };
        let message = if timer {
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": format!("call_{n}"), "type": "function",
                "function": {"name": "set_reminder",
                             "arguments": "{\"in_seconds\":600,\"text\":\"关火\"}"}}]})
        } else {
            serde_json::json!({"role": "assistant", "content": content})
        };
        let mut s = seen.lock().unwrap();
        let (prompt, cached) = if compaction || summary {
            s.compactions += u64::from(compaction);
            (body.len() as u64, 0)
        } else {
            let common = s
                .prev
                .iter()
                .zip(body.iter())
                .take_while(|(a, b)| a == b)
                .count() as u64;
            s.bill(&v, &body, &message);
            (body.len() as u64, common)
        };
        drop(s);
        axum::Json(serde_json::json!({
            "choices": [{"index": 0,
                "finish_reason": if timer { "tool_calls" } else { "stop" },
                "message": message}],
            "usage": {"prompt_tokens": prompt / 4, "completion_tokens": 10,
                      "prompt_cache_hit_tokens": cached / 4}
        }))
    }
    let seen: Shared = Default::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(answer))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), seen)
}

/// A kernel on `ws` whose provider is the loopback server at `url` (the real client:
/// every request is serialized and sent), with a context window of `window` tokens.
pub(super) fn http_kernel(ws: &std::path::Path, url: &str, window: u32, extra: &str) -> Kernel {
    http_kernel_with(ws, url, window, extra, "")
}

/// [`http_kernel`] with `agent` lines (`extra`, which may open later tables) and
/// top-level `tail` lines (e.g. `[[members]]`) in its configuration.
pub(super) fn http_kernel_with(
    ws: &std::path::Path,
    url: &str,
    window: u32,
    extra: &str,
    tail: &str,
) -> Kernel {
    std::fs::write(
        ws.join("config.toml"),
        format!("{tail}[agent]\nmax_queued_per_chat = 100000\n{extra}\n[provider]\nmax_retries = 0\nmax_tokens = 1024\n"),
    )
    .unwrap();
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(homebot::config::EnvOverrides {
                base_url: Some(url.to_string()),
                model: Some("bench".into()),
                context_window: Some(window.to_string()),
                ..Default::default()
            }),
            lock_wait: Some(Duration::from_secs(5)),
            ..Default::default()
        },
    )
    .unwrap()
}

/// One mode session of `turns` turns over loopback HTTP with compaction on: the median
/// kernel cost of the turns around turn 10 and around the last turn.
pub(super) async fn long_session(turns: usize, window: u32) -> (Duration, Duration, u64, usize) {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = loopback_llm().await;
    let k = http_kernel(dir.path(), &url, window, "");
    k.command("/mode enter cooking").await;
    let mut lat = Vec::with_capacity(turns);
    for i in 0..turns {
        let t0 = Instant::now();
        let r = k
            .handle_turn(voice::turn(
                "kitchen",
                "guest",
                format!("第{i}步之后要做什么？番茄要切成多大的块？"),
            ))
            .await;
        assert!(r.is_answered(), "{r:?}");
        lat.push(t0.elapsed());
    }
    let median = |xs: &[Duration]| {
        let mut v = xs.to_vec();
        v.sort();
        v[v.len() / 2]
    };
    let early = median(&lat[5.min(turns - 1)..15.min(turns)]);
    let late = median(&lat[turns.saturating_sub(10)..]);
    let sdir = std::path::PathBuf::from(
        homebot::modes::action::ActionDoc::read(
            &dir.path().canonicalize().unwrap().join("modes/action.json"),
        )
        .unwrap()
        .unwrap()
        .session_dir
        .unwrap(),
    );
    let through = std::fs::read_to_string(sdir.join("checkpoint.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["through"].as_u64())
        .unwrap_or(0) as usize;
    let compactions = seen.lock().unwrap().compactions;
    (early, late, compactions, through)
}
