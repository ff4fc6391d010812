//! Kernel overhead, measured (not asserted): `cargo bench --bench kernel`.
//!
//! A zero-latency in-process provider isolates what homebot itself costs per turn:
//! scheduling, the ModeManager round trips, prompt assembly, and the fsync'd append of
//! every record. Prints tables; compare runs as ratios, these machines are noisy.
//!
//! The real path too: mode sessions answered through the OpenAI-compatible client by a
//! loopback HTTP server that reads and parses every request body — the kernel cost per
//! turn near turn 10 and near the last turn of one long session with compaction on, and
//! the prefix-cache hit ratio the server computes from the byte-identical prefix of
//! consecutive request bodies (a mode session of three speakers on two channels, and a
//! normal chat past its trim point).
//!
//! At the limit: 50 chats at once against a loopback server that takes 50 ms per request,
//! with `provider.max_concurrent = 64` and at the default (8 slots): turns/s, latency,
//! and the process's CPU time per turn (server included), which the machine's other load
//! does not change the way it changes the latency.
//!
//! `cargo bench --bench kernel -- limit` runs only the tables named (`overhead`,
//! `session`, `cache`, `limit`); `BENCH_ROW=<part of a label>` only those rows of the
//! `limit` table (`BENCH_DIST=1`: their latency percentiles and mean on stderr). Under `cargo test` (no `--bench` argument) it runs a tiny smoke version.

use async_trait::async_trait;
use homebot::channels::voice;
use homebot::kernel::{Kernel, KernelOptions};
use homebot::provider::{ChatModel, ChatRequest, ChatResponse, Provider, ProviderError};
use homebot::turn::Turn;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "kernel/limit.rs"]
mod limit;

struct ZeroLatency;

#[async_trait]
impl ChatModel for ZeroLatency {
    async fn complete(&self, _req: &ChatRequest<'_>) -> Result<ChatResponse, ProviderError> {
        Ok(ChatResponse {
            content: Some("好的，两个人放两个番茄，约一百五十克。".into()),
            ..Default::default()
        })
    }
    fn model_name(&self) -> &str {
        "zero-latency"
    }
}

fn kernel(ws: &std::path::Path) -> Kernel {
    std::fs::write(
        ws.join("config.toml"),
        "[agent]\nmax_queued_per_chat = 100000\n",
    )
    .unwrap();
    Kernel::start(
        ws,
        KernelOptions {
            provider: Some(Provider::with_model(
                Arc::new(ZeroLatency),
                100_000,
                0,
                ws.join("logs/usage.jsonl"),
            )),
            ..Default::default()
        },
    )
    .unwrap()
}

/// A turn of the load's own chats: a guest of no channel the kernel knows, each chat its
/// own scene.
fn bench_turn(chat: String, text: String) -> Turn {
    let facts = homebot::turn::Facts {
        memory_peer: Some(chat.clone()),
        ..Default::default()
    };
    Turn::new("bench", chat, "guest", text, facts)
}

/// A turn of the household's cast, as its channel (QQ or voice) builds it.
fn cast_turn(channel: &str, chat: &str, who: &str, text: String) -> Turn {
    use homebot::channels::{qq, voice};
    if channel == voice::CHANNEL {
        voice::turn(chat, who, text)
    } else {
        qq::turn(chat, who, text)
    }
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

async fn concurrency(chats: usize, turns_per_chat: usize) -> (f64, Duration, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel(dir.path());
    k.command("/mode enter cooking").await;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..chats {
        let k = k.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(turns_per_chat);
            for i in 0..turns_per_chat {
                let t0 = Instant::now();
                let r = k
                    .handle_turn(bench_turn(format!("chat{c}"), format!("第{i}问")))
                    .await;
                assert!(r.is_answered(), "{r:?}");
                lat.push(t0.elapsed());
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let wall = started.elapsed();
    all.sort();
    let tps = all.len() as f64 / wall.as_secs_f64();
    (tps, pct(&all, 0.5), pct(&all, 0.99))
}

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
struct Seen {
    prev: Vec<u8>,
    turns: u64,
    compactions: u64,
    /// Σ over turn requests from the second: body bytes, LCP-cached bytes.
    prompt_bytes: u64,
    cached_bytes: u64,
    /// Σ over turn requests from the second: message bytes (tools included), cached
    /// under DeepSeek's rule 1, under rules 1 and 2.
    unit_bytes: u64,
    unit_cached: u64,
    unit_cached_r2: u64,
    /// Rule-1 units persisted, and every message-level prefix seen (rule 2).
    units: std::collections::HashSet<u64>,
    prefixes: std::collections::HashSet<u64>,
    /// The previous turn request's own unit (its end), and how many turn requests held
    /// it whole.
    prev_unit: Option<u64>,
    prev_unit_hits: u64,
    /// By system message (a mode session's frozen prompt): the end of its last request.
    /// A turn request whose system message differs from the previous one's but was
    /// seen before goes back to a session (a sub-mode's parent resumed): counted in
    /// `returns`, and in `return_hits` when it held that session's last request whole.
    last_of: std::collections::HashMap<u64, u64>,
    prev_system: Option<u64>,
    returns: u64,
    return_hits: u64,
}

impl Seen {
    fn ratio(&self) -> f64 {
        frac(self.cached_bytes, self.prompt_bytes)
    }
    fn unit_ratio(&self) -> f64 {
        frac(self.unit_cached, self.unit_bytes)
    }
    fn unit_ratio_r2(&self) -> f64 {
        frac(self.unit_cached_r2, self.unit_bytes)
    }

    /// Bill one turn request (parsed `v`, raw `body`) and persist its units; `out` is
    /// the assistant message it gets (words, or tool calls).
    fn bill(&mut self, v: &serde_json::Value, body: &[u8], out: &serde_json::Value) {
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

fn frac(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// A message as the model's template sees it: its role, its text and its tool calls
/// (a reply the model wrote and the same reply replayed are one message).
fn message_key(m: &serde_json::Value) -> String {
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
async fn loopback_llm() -> (String, Arc<std::sync::Mutex<Seen>>) {
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
fn http_kernel(ws: &std::path::Path, url: &str, window: u32, extra: &str) -> Kernel {
    http_kernel_with(ws, url, window, extra, "")
}

/// [`http_kernel`] with `agent` lines (`extra`, which may open later tables) and
/// top-level `tail` lines (e.g. `[[members]]`) in its configuration.
fn http_kernel_with(
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
async fn long_session(turns: usize, window: u32) -> (Duration, Duration, u64, usize) {
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

/// What a scripted session cost, as the loopback server billed it (tokens = bytes / 4),
/// from its second turn request on.
struct Bill {
    requests: u64,
    /// cached ÷ prompt: longest common prefix; DeepSeek's rule 1; rules 1 and 2.
    ratio: f64,
    unit_ratio: f64,
    unit_ratio_r2: f64,
    /// Σ (prompt − cached) ÷ requests, under the longest-prefix model and DeepSeek's rule 1.
    uncached_lcp: f64,
    uncached_units: f64,
    /// Turn requests that held the previous turn request whole, of those after the first.
    prev_unit_hits: u64,
    /// The last request's replayed history ÷ the dialogue it replays (conservative
    /// counts: each message's text plus the template's 4 tokens, over the user's words
    /// and the replies alone).
    history_per_dialogue: f64,
    compactions: u64,
    /// Returns to a session after another's requests (a sub-mode's parent resumed), and
    /// those that held that session's last request whole.
    returns: (u64, u64),
    /// `homebot stats` over the session's audit records.
    stats: String,
    /// The `[工具结果]` blocks' tokens over the session (the audit shapes'
    /// `tool_results` blocks, each request once), and how many requests sent one.
    tool_results: (u64, usize),
}

/// The replayed history of the last request body ÷ the dialogue it holds: the replayed
/// messages (text plus the template's 4 tokens each, the checkpoint pair left out)
/// against the user's words and replies of the records they replay (`records`: the
/// chat's or session's log, whose last record is the last request's own turn).
fn history_per_dialogue(body: &[u8], records: &[serde_json::Value]) -> f64 {
    use homebot::context::tokens::{conservative_count, PER_MESSAGE};
    let v: serde_json::Value = serde_json::from_slice(body).expect("a JSON request");
    let msgs = v["messages"].as_array().cloned().unwrap_or_default();
    let mut sent = 0u64;
    let mut pairs = 0usize;
    for m in msgs.iter().skip(1).take(msgs.len().saturating_sub(2)) {
        let c = m["content"].as_str().unwrap_or_default();
        if c.starts_with("[之前的对话摘要]") || c.starts_with("好的，我记得之前的内容")
        {
            continue; // the checkpoint pair is not dialogue replayed per turn
        }
        sent += u64::from(conservative_count(c) + PER_MESSAGE);
        pairs += usize::from(m["role"] == "user");
    }
    let before_last = &records[..records.len().saturating_sub(1)];
    let said: u64 = before_last[before_last.len().saturating_sub(pairs)..]
        .iter()
        .map(|r| {
            let text = |k: &str| conservative_count(r[k].as_str().unwrap_or_default());
            u64::from(text("user") + text("assistant"))
        })
        .sum();
    if said == 0 {
        0.0
    } else {
        sent as f64 / said as f64
    }
}

/// The records of the one log below `dir`: a mode session's `conversation.jsonl`, or
/// (`mode` false) the chat's `*.jsonl` under `chats/`.
fn log_records(dir: &std::path::Path, mode: bool) -> Vec<serde_json::Value> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl")
                && if mode {
                    p.file_name().is_some_and(|n| n == "conversation.jsonl")
                } else {
                    p.components().any(|c| c.as_os_str() == "chats")
                }
            {
                return std::fs::read_to_string(&p)
                    .unwrap()
                    .lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect();
            }
        }
    }
    Vec::new()
}

/// Who speaks in a scripted session, and where.
#[derive(Clone, Copy)]
enum Cast {
    /// A mode session: mom and the kid in the QQ group, dad at the kitchen speaker.
    Mixed,
    /// One person's private QQ chat (no mode).
    Private,
    /// A QQ group (no mode) where mom and the kid take turns, each with a `USER.md`.
    Group,
    /// A mode session at the kitchen speaker only: a new wake (chat) every 3 turns.
    Voice,
}

/// A scripted session: its name, who speaks, in a mode or not, turns, window, turn
/// `i`'s words.
struct Script {
    name: &'static str,
    cast: Cast,
    mode: bool,
    turns: usize,
    window: u32,
    ask: fn(usize) -> String,
    /// Household memories kept beforehand for each speaker's chat, recalled every turn.
    memories: Memories,
    /// A sub-mode inside the mode session: 烘焙模式 entered before turn `.0` and left
    /// (`/mode enter cooking`, back to the same cooking session) before turn `.1`.
    sub: Option<(usize, usize)>,
}

/// What the household remembered before the session, and how a turn finds it.
#[derive(Clone, Copy, PartialEq)]
enum Memories {
    None,
    /// In the scene of each speaker's chat: recalled by the scene.
    Scene,
    /// Kept from each speaker's chat but in a scene of its own the turns never stand in:
    /// found only by wording (the turn's words share the memories' words).
    Wording,
}

const MEMBERS: &str = "[[members]]\nid = \"mom\"\nname = \"妈妈\"\n[[members]]\nid = \"kid\"\nname = \"小明\"\n[[members]]\nid = \"dad\"\nname = \"爸爸\"\n";

/// A scripted session over loopback HTTP under `replay` (`exact` / `lean`).
async fn session_bill(sc: &Script, replay: &str) -> Bill {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = loopback_llm().await;
    let extra = format!("normal_history_turns = 20\n[context]\nreplay = \"{replay}\"\n");
    std::fs::create_dir_all(dir.path().join("members/mom")).unwrap();
    std::fs::create_dir_all(dir.path().join("members/kid")).unwrap();
    std::fs::write(
        dir.path().join("members/mom/USER.md"),
        "妈妈，四十岁，口味清淡，不吃香菜；做饭时喜欢听到具体的克数和火候。",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("members/kid/USER.md"),
        "小明，十岁，上小学四年级，喜欢番茄炒蛋，对花生过敏。",
    )
    .unwrap();
    let k = http_kernel_with(dir.path(), &url, sc.window, &extra, MEMBERS);
    if sc.memories != Memories::None {
        keep_memories(&k, sc).await;
    }
    if sc.mode {
        k.command("/mode enter cooking").await;
    }
    for i in 0..sc.turns {
        match sc.sub {
            Some((enter, _)) if enter == i => {
                k.command("/mode enter baking").await;
            }
            Some((_, back)) if back == i => {
                k.command("/mode enter cooking").await;
            }
            _ => {}
        }
        let (ch, chat, who) = speaker_of(sc.cast, i);
        let r = k.handle_turn(cast_turn(&ch, &chat, who, (sc.ask)(i))).await;
        assert!(r.is_answered(), "{r:?}");
    }
    k.shutdown_gracefully(Duration::from_secs(10)).await;
    let ws = homebot::workspace::Workspace::open(&dir.path().canonicalize().unwrap()).unwrap();
    let audit = homebot::audit::load(&ws, None).unwrap();
    let stats = homebot::audit::stats::render(&homebot::audit::stats::compute(&audit.records));
    // a turn's tool rounds share its first request's shape: count each shape once
    let mut shapes: Vec<&homebot::provider::PromptShape> = audit
        .records
        .iter()
        .filter_map(|r| r.shape.as_ref())
        .collect();
    shapes.dedup();
    let tool_results = shapes
        .iter()
        .flat_map(|s| s.blocks.iter().filter(|b| b.name == "tool_results"))
        .fold((0, 0), |(t, n), b| (t + b.tokens, n + 1));
    let s = seen.lock().unwrap();
    let counted = s.turns.saturating_sub(1).max(1) as f64;
    Bill {
        requests: s.turns,
        ratio: s.ratio(),
        unit_ratio: s.unit_ratio(),
        unit_ratio_r2: s.unit_ratio_r2(),
        uncached_lcp: (s.prompt_bytes - s.cached_bytes) as f64 / 4.0 / counted,
        uncached_units: (s.unit_bytes - s.unit_cached) as f64 / 4.0 / counted,
        prev_unit_hits: s.prev_unit_hits,
        // a mode session's last request is the cooking session's (a sub-mode's is beside it)
        history_per_dialogue: history_per_dialogue(
            &s.prev,
            &log_records(
                &match sc.mode {
                    true => dir.path().join("modes/sessions/cooking"),
                    false => dir.path().to_path_buf(),
                },
                sc.mode,
            ),
        ),
        compactions: s.compactions,
        returns: (s.returns, s.return_hits),
        stats,
        tool_results,
    }
}

/// Three memories for the scene of each chat the first turns of `sc` speak in.
async fn keep_memories(k: &homebot::kernel::Kernel, sc: &Script) {
    assert!(k.memory().ready().await);
    let now = chrono::Utc::now().fixed_offset();
    for i in 0..6 {
        let (ch, chat, who) = speaker_of(sc.cast, i);
        let turn = cast_turn(&ch, &chat, who, (sc.ask)(i));
        let (keys, facts) = match sc.memories {
            Memories::Wording => (
                vec![homebot::memory::SceneKey::parse("chan:notes/peer:recipes").unwrap()],
                [
                    "番茄炒蛋先放鸡蛋，炒好盛出再放番茄",
                    "番茄炒蛋的问题：鸡蛋要先打匀",
                    "番茄炒蛋放一点糖",
                ],
            ),
            _ => (
                k.memory().scene_of(&turn, now).keys,
                [
                    "家里三个人吃饭",
                    "小明对花生过敏，菜里不放花生",
                    "周三晚上不吃辣",
                ],
            ),
        };
        for fact in facts {
            let origin = format!("{ch}:{chat}");
            k.memory()
                .commit(fact.into(), keys.clone(), origin, now.timestamp())
                .await
                .unwrap();
        }
    }
    k.memory().flush().await;
}

/// Who speaks turn `i` of a session with this cast: channel, chat, speaker.
fn speaker_of(cast: Cast, i: usize) -> (String, String, &'static str) {
    let wake = format!("kitchen-wake-{}", i / 3);
    let (ch, chat, who) = match cast {
        Cast::Mixed => [
            ("qq", "group:5550001", "mom"),
            ("voice", "kitchen", "dad"),
            ("qq", "group:5550001", "kid"),
        ][i % 3],
        Cast::Private => ("qq", "private:10001", "mom"),
        Cast::Group => [
            ("qq", "group:5550001", "mom"),
            ("qq", "group:5550001", "kid"),
        ][i % 2],
        Cast::Voice => ("voice", wake.as_str(), "dad"),
    };
    (ch.to_string(), chat.to_string(), who)
}

/// Questions of a cooking evening, several of which the cooking skill's knowledge
/// answers (so the message carries `[资料]` snippets).
fn cooking_question(i: usize) -> String {
    const Q: [&str; 8] = [
        "番茄炒蛋三个人要几个鸡蛋？",
        "红烧肉炒糖色用什么火？",
        "油温五六成热大概多少度？",
        "青椒肉丝的肉要腌多久？",
        "剩菜放冰箱能放几天？",
        "蛋液打好了，下一步呢？",
        "四季豆要炒多久才熟透？",
        "好了，盐放多少合适？",
    ];
    format!("{}（第{i}轮）", Q[i % Q.len()])
}

fn one_question(i: usize) -> String {
    format!("第{i}个问题：番茄炒蛋先放什么？")
}

/// Every third turn sets a kitchen timer (a tool round: `set_reminder`, whose result the
/// record keeps and the next request sends once as `[工具结果]`); the others ask one
/// question.
fn timer_question(i: usize) -> String {
    if i.is_multiple_of(3) {
        format!("十分钟后提醒我关火（第{i}轮）")
    } else {
        one_question(i)
    }
}

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The bill of the scripted sessions under both ways of replaying, each billed under
/// both kinds of cache, and `homebot stats` over the first.
async fn bill_tables(full: bool) {
    println!(
        "\nthe bill of scripted sessions over loopback HTTP, from the second turn request on (tokens = request bytes / 4)\n\
         LCP = longest common prefix with the previous turn request (OpenAI, llama.cpp); DS r1 = DeepSeek's units, \
         persisted at the end of each request's input and of its output, hit only whole (message by message); \
         +r2 = also any message-level prefix an earlier request shared (optimistic); prev = turn requests \
         that held the previous one whole"
    );
    println!(
        "{:<44} {:>6} {:>5} {:>7} {:>7} {:>7} {:>9} {:>9} {:>7} {:>8} {:>6}",
        "session",
        "replay",
        "reqs",
        "LCP",
        "DS r1",
        "+r2",
        "unc LCP",
        "unc r1",
        "prev",
        "hist/dlg",
        "compct"
    );
    let normal_turns = if full { 60 } else { 25 };
    let cooking_turns = if full { 90 } else { 30 };
    let scripts = [
        Script {
            name: "mode session, 3 speakers, one question",
            cast: Cast::Mixed,
            mode: true,
            turns: 30,
            window: 65_536,
            ask: one_question,
            memories: Memories::None,
            sub: None,
        },
        Script {
            name: "mode session, 3 speakers, an evening",
            cast: Cast::Mixed,
            mode: true,
            turns: 30,
            window: 65_536,
            ask: cooking_question,
            memories: Memories::None,
            sub: None,
        },
        Script {
            name: "mode session at the kitchen speaker, a wake/3",
            cast: Cast::Voice,
            mode: true,
            turns: 30,
            window: 65_536,
            ask: one_question,
            memories: Memories::None,
            sub: None,
        },
        Script {
            name: "normal chat (trim at 20 turns)",
            cast: Cast::Private,
            mode: false,
            turns: normal_turns,
            window: 65_536,
            ask: one_question,
            memories: Memories::None,
            sub: None,
        },
        Script {
            name: "group chat, mom and the kid in turn",
            cast: Cast::Group,
            mode: false,
            turns: normal_turns,
            window: 65_536,
            ask: one_question,
            memories: Memories::None,
            sub: None,
        },
        Script {
            name: "normal chat, memories recalled every turn",
            cast: Cast::Private,
            mode: false,
            turns: 30,
            window: 65_536,
            ask: one_question,
            memories: Memories::Scene,
            sub: None,
        },
        Script {
            name: "normal chat, memories found by wording",
            cast: Cast::Private,
            mode: false,
            turns: 30,
            window: 65_536,
            ask: one_question,
            memories: Memories::Wording,
            sub: None,
        },
        Script {
            name: "mode session, 3 speakers, memories every turn",
            cast: Cast::Mixed,
            mode: true,
            turns: 30,
            window: 65_536,
            ask: one_question,
            memories: Memories::Scene,
            sub: None,
        },
        Script {
            name: "mode session with 烘焙模式 in turns 10-19",
            cast: Cast::Mixed,
            mode: true,
            turns: 30,
            window: 65_536,
            ask: cooking_question,
            memories: Memories::None,
            sub: Some((10, 20)),
        },
        Script {
            name: "mode session, 3 speakers, a timer every 3rd",
            cast: Cast::Mixed,
            mode: true,
            turns: 30,
            window: 65_536,
            ask: timer_question,
            memories: Memories::None,
            sub: None,
        },
        Script {
            name: "normal chat, a timer every 3rd turn",
            cast: Cast::Private,
            mode: false,
            turns: 30,
            window: 65_536,
            ask: timer_question,
            memories: Memories::None,
            sub: None,
        },
        Script {
            name: "cooking, knowledge questions, window 9400",
            cast: Cast::Mixed,
            mode: true,
            turns: cooking_turns,
            window: 9_400,
            ask: cooking_question,
            memories: Memories::None,
            sub: None,
        },
    ];
    let mut first_stats = None;
    let mut returns = Vec::new();
    let mut wording_stats = None;
    let mut timers = Vec::new();
    for sc in &scripts {
        for replay in ["exact", "lean"] {
            let b = session_bill(sc, replay).await;
            println!(
                "{:<44} {:>6} {:>5} {:>6.1}% {:>6.1}% {:>6.1}% {:>9.0} {:>9.0} {:>7} {:>8.2} {:>6}",
                sc.name,
                replay,
                b.requests,
                b.ratio * 100.0,
                b.unit_ratio * 100.0,
                b.unit_ratio_r2 * 100.0,
                b.uncached_lcp,
                b.uncached_units,
                format!("{}/{}", b.prev_unit_hits, b.requests.saturating_sub(1)),
                b.history_per_dialogue,
                b.compactions
            );
            if b.tool_results.1 > 0 {
                timers.push(format!(
                    "{} ({replay}): {} requests sent a [工具结果] block, {} tokens in all",
                    sc.name, b.tool_results.1, b.tool_results.0
                ));
            }
            if sc.memories == Memories::Wording && replay == "exact" {
                wording_stats = Some(b.stats.clone());
            }
            first_stats.get_or_insert(b.stats);
            if sc.sub.is_some() {
                returns.push((sc.name, replay, b.returns));
            }
        }
    }
    for (name, replay, (n, hits)) in returns {
        println!(
            "{name} ({replay}): {hits} of {n} returns to the cooking session held its last request whole"
        );
    }
    for t in &timers {
        println!("{t}");
    }
    if let Some(s) = first_stats {
        println!("\n`homebot stats` over the 30-turn mode session (exact replay):\n{s}");
    }
    if let Some(s) = wording_stats {
        println!("`homebot stats` over the chat whose memories are found by wording (exact replay; `wording` = the tokens its wording blocks cost):\n{s}");
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = args.iter().any(|a| a == "--bench");
    // `cargo bench --bench kernel -- limit` runs only the tables named
    let only: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |name: &str| only.is_empty() || only.contains(&name);
    if run("overhead") {
        overhead_table(full).await;
    }
    if run("session") {
        session_table(full).await;
    }
    if run("bill") {
        bill_tables(full).await;
    }
    if run("limit") {
        limit::table(full).await;
    }
    match peak_rss_kib() {
        Some(k) => println!("\npeak RSS: {:.1} MiB", k as f64 / 1024.0),
        None => println!("\npeak RSS: unavailable"),
    }
}

async fn overhead_table(full: bool) {
    let total = if full { 2000 } else { 20 };
    println!("\nkernel overhead per turn (zero-latency provider, mode active, fsync per record)");
    println!(
        "{:>8} {:>8} {:>10} {:>10} {:>10}",
        "chats", "turns", "turns/s", "p50 ms", "p99 ms"
    );
    for chats in [1usize, 10, 100] {
        let per = (total / chats).max(1);
        let (tps, p50, p99) = concurrency(chats, per).await;
        println!(
            "{:>8} {:>8} {:>10.0} {:>10} {:>10}",
            chats,
            chats * per,
            tps,
            ms(p50),
            ms(p99)
        );
    }
}

async fn session_table(full: bool) {
    let (long, window) = if full { (10_000, 16_384) } else { (60, 16_384) };
    println!("\none mode session over loopback HTTP, compaction on (window {window} tokens)");
    println!(
        "{:>8} {:>16} {:>16} {:>12} {:>12}",
        "turns", "turn ~10 ms", "last turns ms", "compactions", "checkpoint"
    );
    let (early, late, compactions, through) = long_session(long, window).await;
    println!(
        "{:>8} {:>16} {:>16} {:>12} {:>12}",
        long,
        ms(early),
        ms(late),
        compactions,
        through
    );
}
