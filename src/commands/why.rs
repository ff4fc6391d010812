//! `/why` (and "你为什么这么说"): why the last answer in this chat was what it was — the
//! mode and strategy, the knowledge files, the memories, how much history was replayed
//! and how much was compacted, the tokens and the cached share — short, in the
//! household's language. Read from the audit trail ([`crate::audit::last_turn`]) of the
//! asker's own chat only; the memories named are those this chat may see.

use super::Context;
use crate::audit::last_turn::{last_turn, TurnCalls};
use crate::config::Language;
use std::collections::BTreeSet;

/// `/why` for the chat `ctx.turn` came from: its last turn in the audit trail, explained.
pub async fn answer(ctx: &Context<'_>) -> String {
    let Some(turn) = ctx.turn else {
        return nothing(ctx.language);
    };
    // the last turn's lines may still be on their way to the disk
    ctx.calls.flush().await;
    let (ws, channel, chat) = (
        ctx.workspace.clone(),
        turn.channel.clone(),
        turn.chat_id.clone(),
    );
    // the audit files are read off the async workers
    let found = tokio::task::spawn_blocking(move || {
        let calls = last_turn(&ws, &channel, &chat)?;
        let mode_id = calls
            .records
            .iter()
            .find_map(|r| r.session_id.as_deref())
            .and_then(|id| crate::audit::session_dir(&ws, id).ok())
            .and_then(|dir| Some(dir.parent()?.file_name()?.to_string_lossy().into_owned()));
        Some((calls, mode_id))
    })
    .await
    .ok()
    .flatten();
    let Some((calls, mode_id)) = found else {
        return nothing(ctx.language);
    };
    let mode = mode_id.map(|id| match ctx.registry.get(&id) {
        Some(m) => format!("{} ({id})", m.manifest.display_name),
        None => id,
    });
    let memories = memories_seen(ctx, turn, &calls);
    render(&Explained {
        calls: &calls,
        mode,
        memories,
        language: ctx.language,
        tz: ctx.tz,
    })
}

/// A memory the turn was given, as `/why` names it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryLine {
    pub id: i64,
    /// The memory's words (clipped).
    pub text: String,
    /// Found by wording beside the scene, not by the scene itself.
    pub by_wording: bool,
}

/// What `/why` says of one turn.
pub struct Explained<'a> {
    pub calls: &'a TurnCalls,
    /// The mode session's mode, as the household names it (`做饭模式 (cooking)`).
    pub mode: Option<String>,
    /// The memories the turn was given that this chat may see.
    pub memories: Vec<MemoryLine>,
    pub language: Language,
    pub tz: crate::zone::Zone,
}

/// The memories the turn was given (by scene, then by wording) that the asking chat may
/// see — the rule of `memory_search` — with their words as they are now (a memory
/// forgotten since is left out).
fn memories_seen(
    ctx: &Context<'_>,
    asker: &crate::turn::Turn,
    calls: &TurnCalls,
) -> Vec<MemoryLine> {
    let Some(shape) = calls.records.iter().find_map(|r| r.shape.as_ref()) else {
        return Vec::new();
    };
    let index = ctx.memory.index();
    let scene = ctx
        .memory
        .scene_of(asker, chrono::Utc::now().fixed_offset());
    let owner = asker.facts().trust == crate::turn::Trust::Owner;
    let origin = format!("{}:{}", asker.channel, asker.chat_id);
    let ids = (shape.memories_scene.iter().map(|id| (*id, false)))
        .chain(shape.memories_wording.iter().map(|id| (*id, true)));
    let mut out: Vec<MemoryLine> = Vec::new();
    for (id, by_wording) in ids {
        let Some(m) = index.memories.get(&id) else {
            continue;
        };
        let keys: Vec<&crate::memory::SceneKey> = (index.scenes.iter())
            .filter(|s| s.links.iter().any(|l| l.memory == id))
            .map(|s| &s.key)
            .collect();
        let may = crate::tools::memory::visible(&scene, owner, &origin, &m.origin, &keys);
        if may && !out.iter().any(|l| l.id == id) {
            out.push(MemoryLine {
                id,
                text: m.content.clone(),
                by_wording,
            });
        }
    }
    out
}

/// At most this many characters of a memory are shown.
const MEMORY_CHARS: usize = 40;
/// At most this many knowledge files are named (then "… and N more").
const MAX_FILES: usize = 5;

/// The answer when the chat has no turn in the audit trail's newest files.
pub fn nothing(language: Language) -> String {
    match language {
        Language::Zh => "这里还没有可以解释的回答（最近的记录里没有这个对话调用模型的轮次）。".into(),
        Language::En => "There is no answer to explain here yet (the recent audit trail has no model call for this chat).".into(),
    }
}

pub fn render(e: &Explained<'_>) -> String {
    let recs = &e.calls.records;
    let first = &recs[0];
    let zh = e.language == Language::Zh;
    let when = chrono::DateTime::parse_from_rfc3339(&first.timestamp)
        .map(|t| {
            let t = t.with_timezone(&e.tz);
            if zh {
                t.format("%-m月%-d日 %H:%M").to_string()
            } else {
                t.format("%b %-d, %H:%M").to_string()
            }
        })
        .unwrap_or_else(|_| first.timestamp.clone());
    let mut out = vec![if zh {
        format!("上一次回答（{when}）：")
    } else {
        format!("The last answer here ({when}):")
    }];
    if first.purpose == crate::home::FAST_PATH {
        out.push(if zh {
            "· 由 Home Assistant 自己的语音助手直接回答，没有调用模型。".into()
        } else {
            "· Home Assistant's own assistant answered it; no model was called.".into()
        });
        return out.join("\n");
    }
    out.push(mode_line(e, zh));
    out.push(strategy_line(e.calls, zh));
    out.push(files_line(e.calls, zh));
    out.push(memories_line(&e.memories, zh));
    out.push(history_line(e.calls, zh));
    out.push(usage_line(e.calls, zh));
    out.join("\n")
}

fn mode_line(e: &Explained<'_>, zh: bool) -> String {
    match (&e.mode, zh) {
        (Some(m), true) => format!("· 模式：{m}"),
        (Some(m), false) => format!("· Mode: {m}"),
        (None, true) => "· 模式：无（普通对话）".into(),
        (None, false) => "· Mode: none (a normal chat)".into(),
    }
}

/// The strategy, and the steps its calls were (a plan's steps, a review) when more than
/// the turn's own.
fn strategy_line(c: &TurnCalls, zh: bool) -> String {
    let name = c
        .records
        .iter()
        .find_map(|r| r.turn.as_ref()?.strategy.clone())
        .unwrap_or_else(|| if zh { "未记录" } else { "not recorded" }.into());
    let mut steps: Vec<(String, usize)> = Vec::new();
    for r in c.records.iter().filter(|r| r.purpose != "turn") {
        match steps.iter_mut().find(|(p, _)| *p == r.purpose) {
            Some((_, n)) => *n += 1,
            None => steps.push((r.purpose.clone(), 1)),
        }
    }
    let steps: Vec<String> = steps
        .into_iter()
        .map(|(p, n)| if n > 1 { format!("{p}×{n}") } else { p })
        .collect();
    match (steps.is_empty(), zh) {
        (true, true) => format!("· 策略：{name}"),
        (true, false) => format!("· Strategy: {name}"),
        (false, true) => format!("· 策略：{name}（步骤：{}）", steps.join("、")),
        (false, false) => format!("· Strategy: {name} (steps: {})", steps.join(", ")),
    }
}

fn files_line(c: &TurnCalls, zh: bool) -> String {
    let files: BTreeSet<&str> = c
        .records
        .iter()
        .filter_map(|r| r.shape.as_ref())
        .flat_map(|s| s.snippets.iter().map(String::as_str))
        .collect();
    if files.is_empty() {
        return if zh {
            "· 资料：没用到"
        } else {
            "· Knowledge: none used"
        }
        .into();
    }
    let mut named: Vec<&str> = files.iter().copied().take(MAX_FILES).collect();
    let more = files.len() - named.len();
    let more = match (more, zh) {
        (0, _) => String::new(),
        (n, true) => format!(" 等另外 {n} 个"),
        (n, false) => format!(" and {n} more"),
    };
    named.dedup();
    if zh {
        format!("· 资料：{}{more}", named.join("、"))
    } else {
        format!("· Knowledge: {}{more}", named.join(", "))
    }
}

fn memories_line(m: &[MemoryLine], zh: bool) -> String {
    if m.is_empty() {
        return if zh {
            "· 记忆：没用到"
        } else {
            "· Memories: none"
        }
        .into();
    }
    let items: Vec<String> = m
        .iter()
        .map(|l| {
            let mut text: String = l.text.chars().take(MEMORY_CHARS).collect();
            if l.text.chars().count() > MEMORY_CHARS {
                text.push('…');
            }
            let how = match (l.by_wording, zh) {
                (false, true) => "场景",
                (true, true) => "按字面",
                (false, false) => "scene",
                (true, false) => "wording",
            };
            format!("#{} {text}（{how}）", l.id)
        })
        .collect();
    if zh {
        format!("· 记忆：{}", items.join("；"))
    } else {
        format!("· Memories: {}", items.join("; "))
    }
}

/// How much of the history the first request replayed, and what a summary stood for.
fn history_line(c: &TurnCalls, zh: bool) -> String {
    let Some(s) = c.records.iter().find_map(|r| r.shape.as_ref()) else {
        return if zh {
            "· 历史：未记录"
        } else {
            "· History: not recorded"
        }
        .into();
    };
    let replayed = s.history_to.saturating_sub(s.history_from);
    let span = match replayed {
        1 => s.history_to.to_string(),
        _ => format!("{}–{}", s.history_from + 1, s.history_to),
    };
    let compacted = match (s.compacted_through, zh) {
        (Some(n), true) if n > 0 => format!("；更早的 {n} 轮已压缩成摘要"),
        (Some(n), false) if n > 0 => {
            format!("; the {n} turns before them were compacted into a summary")
        }
        _ => String::new(),
    };
    match (replayed, zh) {
        (0, true) => format!("· 历史：没有回放之前的对话{compacted}"),
        (0, false) => format!("· History: nothing earlier replayed{compacted}"),
        (n, true) => format!("· 历史：回放了最近 {n} 轮（第 {span} 轮）{compacted}"),
        (n, false) => format!("· History: the last {n} turn(s) replayed ({span}){compacted}"),
    }
}

fn usage_line(c: &TurnCalls, zh: bool) -> String {
    let calls = c.records.len();
    let (mut prompt, mut cached, mut completion, mut reasoning) = (0u64, 0u64, 0u64, 0u64);
    for u in c.records.iter().filter_map(|r| r.usage.as_ref()) {
        prompt += u.prompt;
        cached += u.cached;
        completion += u.completion;
        reasoning += u.reasoning;
    }
    let share = crate::audit::show::percent(cached, prompt);
    let failed = c.records.iter().filter(|r| r.outcome != "ok").count();
    let (thought, failed) = match zh {
        true => (
            (reasoning > 0).then(|| format!("（其中思考 {reasoning}）")),
            (failed > 0).then(|| format!("，其中 {failed} 次没成功")),
        ),
        false => (
            (reasoning > 0).then(|| format!(" ({reasoning} of them reasoning)")),
            (failed > 0).then(|| format!(", {failed} of them failed")),
        ),
    };
    let (thought, failed) = (thought.unwrap_or_default(), failed.unwrap_or_default());
    if zh {
        format!("· 用量：调用模型 {calls} 次{failed}；输入 {prompt} tokens，缓存命中 {share}；输出 {completion}{thought}")
    } else {
        format!("· Tokens: {calls} model call(s){failed}; {prompt} in, {share} of them cached; {completion} out{thought}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::audit::{AuditRecord, AuditUsage};
    use crate::provider::PromptShape;
    use crate::provider::TurnTag;

    fn rec(purpose: &str, prompt: u64, cached: u64) -> AuditRecord {
        AuditRecord {
            timestamp: "2026-12-06T19:55:02.000+08:00".into(),
            purpose: purpose.into(),
            model: Some("deepseek-chat".into()),
            provider: None,
            channel: "qq".into(),
            chat_id: "group_1".into(),
            session_id: None,
            shape: Some(PromptShape {
                history_from: 12,
                history_to: 20,
                compacted_through: Some(12),
                snippets: vec!["recipes/红烧肉.md".into()],
                ..PromptShape::default()
            }),
            usage: Some(AuditUsage {
                prompt,
                cached,
                completion: 50,
                reasoning: 0,
            }),
            latency_ms: 5,
            retries: 0,
            outcome: "ok".into(),
            error: None,
            stream: false,
            turn: Some(TurnTag {
                id: "1-1".into(),
                strategy: Some("plan · careful".into()),
            }),
        }
    }

    #[test]
    fn every_line_a_household_asked_for() {
        let calls = TurnCalls {
            records: vec![
                rec("plan", 1000, 900),
                rec("plan-step", 1000, 900),
                rec("plan-step", 1000, 900),
            ],
        };
        let text = render(&Explained {
            calls: &calls,
            mode: Some("做饭模式 (cooking)".into()),
            memories: vec![
                MemoryLine {
                    id: 3,
                    text: "在这个群里回答要简短".into(),
                    by_wording: false,
                },
                MemoryLine {
                    id: 9,
                    text: "周末的菜单发到群里，不要太长，一道主菜两道配菜一个汤，甜点可以不写"
                        .into(),
                    by_wording: true,
                },
            ],
            language: Language::Zh,
            tz: crate::zone::Zone::utc(),
        });
        for want in [
            "上一次回答（12月6日 11:55）",
            "模式：做饭模式 (cooking)",
            "策略：plan · careful（步骤：plan、plan-step×2）",
            "资料：recipes/红烧肉.md",
            "记忆：#3 在这个群里回答要简短（场景）；#9 周末的菜单发到群里，不要太长，一道主菜两道配菜一个汤，甜点可以不写（按字面）",
            "回放了最近 8 轮（第 13–20 轮）；更早的 12 轮已压缩成摘要",
            "调用模型 3 次；输入 3000 tokens，缓存命中 90.0%；输出 150",
        ] {
            assert!(text.contains(want), "{want:?} missing in:\n{text}");
        }
    }

    #[test]
    fn english_and_a_fast_path_answer() {
        let mut r = rec("turn", 100, 0);
        r.purpose = crate::home::FAST_PATH.into();
        let calls = TurnCalls { records: vec![r] };
        let text = render(&Explained {
            calls: &calls,
            mode: None,
            memories: vec![],
            language: Language::En,
            tz: crate::zone::Zone::utc(),
        });
        assert!(text.contains("no model was called"), "{text}");
        let calls = TurnCalls {
            records: vec![rec("turn", 100, 0)],
        };
        let text = render(&Explained {
            calls: &calls,
            mode: None,
            memories: vec![],
            language: Language::En,
            tz: crate::zone::Zone::utc(),
        });
        assert!(
            text.contains("Mode: none") && text.contains("Memories: none"),
            "{text}"
        );
    }
}
