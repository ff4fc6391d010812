//! `homebot audit`: the last N records, one line each — readable, or the JSON record.
//!
//! A readable line is `key=value` fields separated by two spaces, in this order (absent
//! ones left out): the timestamp, `purpose`, `model`, `chat` (channel/chat id),
//! `session`, `prompt`, `cached`, `completion`, `reasoning` (the part of `completion`
//! spent reasoning, when reported), `hit` (cached ÷ prompt), `latency`,
//! `retries`, `blocks` (name:tokens,…; `memory_scene` and `memory_wording` are the
//! recalled memories' blocks), `history` (from..to), `compacted` (turns before it are in
//! the checkpoint), `snippets`, `knowledge` (per knowledge reference, in the mode's
//! order: `recipes:3×180/200t` — snippets sent × their tokens / the reference's cap —
//! and `+1held` when the window held some of its snippets already), `memories_scene` and `memories_wording` (the ids each
//! recall brought), `aside`, `prefix` (the prefix hash, 12 hex digits), then `ok`,
//! `error: <text>` or `cancelled: <text>` last.

use crate::provider::audit::AuditRecord;

/// At most `last` records (all when `None`), newest last.
pub fn tail(records: &[AuditRecord], last: Option<usize>) -> &[AuditRecord] {
    let n = last.unwrap_or(records.len()).min(records.len());
    &records[records.len() - n..]
}

pub fn json_line(r: &AuditRecord) -> String {
    serde_json::to_string(r).expect("an audit record always encodes")
}

pub fn readable_line(r: &AuditRecord) -> String {
    let mut f: Vec<String> = vec![r.timestamp.clone(), format!("purpose={}", r.purpose)];
    if let Some(m) = &r.model {
        f.push(format!("model={m}"));
    }
    if let Some(p) = &r.provider {
        f.push(format!("provider={p}"));
    }
    f.push(format!("chat={}/{}", r.channel, r.chat_id));
    if let Some(s) = &r.session_id {
        f.push(format!("session={s}"));
    }
    if let Some(u) = &r.usage {
        f.push(format!("prompt={}", u.prompt));
        f.push(format!("cached={}", u.cached));
        f.push(format!("completion={}", u.completion));
        if u.reasoning > 0 {
            f.push(format!("reasoning={}", u.reasoning));
        }
        f.push(format!("hit={}", percent(u.cached, u.prompt)));
    }
    f.push(format!("latency={}ms", r.latency_ms));
    f.push(format!("retries={}", r.retries));
    if let Some(s) = &r.shape {
        if !s.blocks.is_empty() {
            let blocks: Vec<String> = s
                .blocks
                .iter()
                .map(|b| format!("{}:{}", b.name, b.tokens))
                .collect();
            f.push(format!("blocks={}", blocks.join(",")));
        }
        f.push(format!("history={}..{}", s.history_from, s.history_to));
        if let Some(c) = s.compacted_through {
            f.push(format!("compacted={c}"));
        }
        if !s.snippets.is_empty() {
            f.push(format!("snippets={}", s.snippets.join(",")));
        }
        if !s.knowledge.is_empty() {
            // per reference: snippets sent × their tokens / its cap, and those the window
            // held (`recipes:2×120/200t,basics:0×0/140t+1held`)
            let refs: Vec<String> = s
                .knowledge
                .iter()
                .map(|k| {
                    let held = if k.held > 0 {
                        format!("+{}held", k.held)
                    } else {
                        String::new()
                    };
                    format!("{}:{}×{}/{}t{held}", k.name, k.sent.len(), k.tokens, k.cap)
                })
                .collect();
            f.push(format!("knowledge={}", refs.join(",")));
        }
        for (name, ids) in [
            ("memories_scene", &s.memories_scene),
            ("memories_wording", &s.memories_wording),
        ] {
            if !ids.is_empty() {
                let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
                f.push(format!("{name}={}", ids.join(",")));
            }
        }
        if s.aside {
            f.push("aside".into());
        }
        if !s.prefix_hash.is_empty() {
            f.push(format!(
                "prefix={}",
                s.prefix_hash.chars().take(12).collect::<String>()
            ));
        }
    }
    match &r.error {
        Some(e) => f.push(format!("{}: {e}", r.outcome)),
        None => f.push(r.outcome.clone()),
    }
    f.join("  ")
}

/// `cached ÷ prompt` as a percentage with one decimal, `-` when nothing was prompted.
pub fn percent(cached: u64, prompt: u64) -> String {
    if prompt == 0 {
        return "-".into();
    }
    format!("{:.1}%", cached as f64 * 100.0 / prompt as f64)
}
