//! `homebot memory`: the scenes with their keys, features and linked memories, and
//! `forget ID`. It opens the database itself (WAL, busy timeout), so it works whether
//! or not a gateway runs; a running gateway notices the change within seconds.

use super::key::SceneKey;
use super::store::maintain::decayed;
use super::store::{MemoryError, Store};
use chrono::TimeZone;
use std::collections::BTreeSet;
use std::fmt::Write;

fn when(t: i64, tz: crate::zone::Zone) -> String {
    tz.timestamp_opt(t, 0)
        .single()
        .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| t.to_string())
}

/// The listing: every scene (or those `filter` covers), its features by frequency and its
/// memories with their current link strength; then the memories no scene links.
pub fn render(
    store: &Store,
    filter: Option<&SceneKey>,
    tz: crate::zone::Zone,
    now: i64,
) -> Result<String, MemoryError> {
    let idx = store.snapshot()?;
    let hl = store.cfg.link_half_life_days;
    let mut out = String::new();
    let mut linked = BTreeSet::new();
    let mut shown = 0;
    for s in &idx.scenes {
        for l in &s.links {
            linked.insert(l.memory);
        }
        if filter.is_some_and(|f| !f.covers(&s.key)) {
            continue;
        }
        shown += 1;
        let _ = writeln!(
            out,
            "scene {} {} — {} occurrence(s), {}, last seen {}",
            s.id,
            s.key,
            s.occurrences,
            s.origin,
            when(s.last_seen, tz)
        );
        if !s.features.is_empty() {
            let f: Vec<String> = s
                .features
                .iter()
                .take(12)
                .map(|(f, c)| format!("{f} ×{c}"))
                .collect();
            let _ = writeln!(out, "  features: {}", f.join(", "));
        }
        for l in &s.links {
            if let Some(m) = idx.memories.get(&l.memory) {
                let _ = writeln!(
                    out,
                    "  memory {} (strength {:.2}, last used {}): {}",
                    l.memory,
                    decayed(l.strength, l.decayed_at, now, hl),
                    when(l.last_used, tz),
                    m.content
                );
            }
        }
    }
    if shown == 0 {
        out.push_str(match filter {
            Some(_) => "no scene under that key\n",
            None => "no scenes yet (a scene appears when a situation occurs a second time, or when a memory is committed)\n",
        });
    }
    if filter.is_none() {
        let loose: Vec<_> = idx
            .memories
            .iter()
            .filter(|(id, _)| !linked.contains(id))
            .collect();
        if !loose.is_empty() {
            out.push_str("memories without a scene (found by memory_search only):\n");
            for (id, m) in loose {
                let _ = writeln!(
                    out,
                    "  memory {id} ({}): {}",
                    when(m.created_at, tz),
                    m.content
                );
            }
        }
    }
    let st = store.stats()?;
    let _ = writeln!(
        out,
        "{} memories, {} scenes, {} situations seen once (evidence)",
        st.memories, st.scenes, st.evidence
    );
    if idx.unreadable > 0 {
        let _ = writeln!(
            out,
            "warning: {} scene(s) with an unreadable key are not shown",
            idx.unreadable
        );
    }
    Ok(out)
}
