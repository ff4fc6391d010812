//! `cargo bench --bench kernel -- bill`: scripted sessions (mode sessions of three
//! speakers, normal chats, a group, memories, a sub-mode, tool rounds, knowledge) through
//! the loopback provider, each billed under both caches, with `homebot stats` beside.

use super::*;

/// What a scripted session cost, as the loopback server billed it (tokens = bytes / 4),
/// from its second turn request on.
pub(super) struct Bill {
    pub(super) requests: u64,
    /// cached ÷ prompt: longest common prefix; DeepSeek's rule 1; rules 1 and 2.
    pub(super) ratio: f64,
    pub(super) unit_ratio: f64,
    pub(super) unit_ratio_r2: f64,
    /// Σ (prompt − cached) ÷ requests, under the longest-prefix model and DeepSeek's rule 1.
    pub(super) uncached_lcp: f64,
    pub(super) uncached_units: f64,
    /// Turn requests that held the previous turn request whole, of those after the first.
    pub(super) prev_unit_hits: u64,
    /// The last request's replayed history ÷ the dialogue it replays (conservative
    /// counts: each message's text plus the template's 4 tokens, over the user's words
    /// and the replies alone).
    pub(super) history_per_dialogue: f64,
    pub(super) compactions: u64,
    /// Returns to a session after another's requests (a sub-mode's parent resumed), and
    /// those that held that session's last request whole.
    pub(super) returns: (u64, u64),
    /// `homebot stats` over the session's audit records.
    pub(super) stats: String,
    /// The `[工具结果]` blocks' tokens over the session (the audit shapes'
    /// `tool_results` blocks, each request once), and how many requests sent one.
    pub(super) tool_results: (u64, usize),
}

/// The replayed history of the last request body ÷ the dialogue it holds: the replayed
/// messages (text plus the template's 4 tokens each, the checkpoint pair left out)
/// against the user's words and replies of the records they replay (`records`: the
/// chat's or session's log, whose last record is the last request's own turn).
pub(super) fn history_per_dialogue(body: &[u8], records: &[serde_json::Value]) -> f64 {
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
pub(super) fn log_records(dir: &std::path::Path, mode: bool) -> Vec<serde_json::Value> {
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
pub(super) enum Cast {
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
pub(super) struct Script {
    pub(super) name: &'static str,
    pub(super) cast: Cast,
    pub(super) mode: bool,
    pub(super) turns: usize,
    pub(super) window: u32,
    pub(super) ask: fn(usize) -> String,
    /// Household memories kept beforehand for each speaker's chat, recalled every turn.
    pub(super) memories: Memories,
    /// A sub-mode inside the mode session: 烘焙模式 entered before turn `.0` and left
    /// (`/mode enter cooking`, back to the same cooking session) before turn `.1`.
    pub(super) sub: Option<(usize, usize)>,
}

/// What the household remembered before the session, and how a turn finds it.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Memories {
    None,
    /// In the scene of each speaker's chat: recalled by the scene.
    Scene,
    /// Kept from each speaker's chat but in a scene of its own the turns never stand in:
    /// found only by wording (the turn's words share the memories' words).
    Wording,
}

pub(super) const MEMBERS: &str = "[[members]]\nid = \"mom\"\nname = \"妈妈\"\n[[members]]\nid = \"kid\"\nname = \"小明\"\n[[members]]\nid = \"dad\"\nname = \"爸爸\"\n";

/// A scripted session over loopback HTTP under `replay` (`exact` / `lean`).
pub(super) async fn session_bill(sc: &Script, replay: &str) -> Bill {
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
pub(super) async fn keep_memories(k: &homebot::kernel::Kernel, sc: &Script) {
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
pub(super) fn speaker_of(cast: Cast, i: usize) -> (String, String, &'static str) {
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
pub(super) fn cooking_question(i: usize) -> String {
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

pub(super) fn one_question(i: usize) -> String {
    format!("第{i}个问题：番茄炒蛋先放什么？")
}

/// Every third turn sets a kitchen timer (a tool round: `set_reminder`, whose result the
/// record keeps and the next request sends once as `[工具结果]`); the others ask one
/// question.
pub(super) fn timer_question(i: usize) -> String {
    if i.is_multiple_of(3) {
        format!("十分钟后提醒我关火（第{i}轮）")
    } else {
        one_question(i)
    }
}

/// The bill of the scripted sessions under both ways of replaying, each billed under
/// both kinds of cache, and `homebot stats` over the first.
pub(super) async fn bill_tables(full: bool) {
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
