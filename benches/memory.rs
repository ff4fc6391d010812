//! Scene memory's costs, measured (not asserted): `cargo bench --bench memory`.
//!
//! - recall: what building a prompt pays (an in-memory snapshot, no I/O);
//! - observe: what the memory thread pays per turn (one SQLite transaction, off the turn);
//! - publish: rebuilding the snapshot after a write;
//! - topic words: jieba segmentation of a typical message.
//!
//! Prints a table; compare runs as ratios. Under `cargo test` it runs a tiny smoke version.

use homebot::channels::qq;
use homebot::config::MemoryConfig;
use homebot::memory::{topic, SceneKey, Store, TurnScene};
use std::time::Instant;

fn at(day: u32, hour: u32) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(&format!("2026-03-{day:02}T{hour:02}:00:00+08:00"))
        .unwrap()
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (groups, memories_per_group, turns) = if full { (200, 10, 2000) } else { (3, 2, 20) };
    let dir = tempfile::tempdir().unwrap();
    let cfg = MemoryConfig {
        max_memories: 100_000,
        max_scenes: 100_000,
        ..Default::default()
    };
    let mut store = Store::open(&dir.path().join("memory.db"), cfg.clone()).unwrap();
    let text = "今晚晚饭做番茄炒蛋和紫菜蛋花汤，三个人吃，米饭要煮多少？";
    for g in 0..groups {
        let key = SceneKey::parse(&format!("chan:qq/peer:group_{g}")).unwrap();
        for m in 0..memories_per_group {
            store
                .commit(
                    &format!("第{g}个群的第{m}条约定：回答要简短"),
                    std::slice::from_ref(&key),
                    "bench",
                    0,
                )
                .unwrap();
        }
    }
    let t = Instant::now();
    for i in 0..turns {
        let turn = qq::turn(format!("group:{}", i % groups), "qq:1", text);
        let scene = TurnScene::of(&turn, at(2 + (i % 20) as u32, 19), &cfg);
        store
            .observe(&scene, &["set_reminder".into()], i as i64)
            .unwrap();
    }
    let observe = t.elapsed() / turns as u32;
    let t = Instant::now();
    let idx = store.snapshot().unwrap();
    let publish = t.elapsed();
    let turn = qq::turn("group:1", "qq:1", text);
    let scene = TurnScene::of(&turn, at(9, 8), &cfg);
    let rounds = if full { 10_000 } else { 10 };
    let t = Instant::now();
    let mut found = 0;
    for _ in 0..rounds {
        found += idx.recall(&scene, &cfg, 0).len();
    }
    let recall = t.elapsed() / rounds;
    let t = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(topic::topic_words(text, cfg.max_topic_words));
    }
    let words = t.elapsed() / rounds;
    assert!(found > 0);
    println!(
        "scene memory: {groups} scenes, {} memories",
        groups * memories_per_group
    );
    println!("  recall (per prompt, in memory)   {recall:>12?}");
    println!("  topic words (per message)        {words:>12?}");
    println!("  observe (per turn, memory thread) {observe:>11?}");
    println!("  publish snapshot (per write)     {publish:>12?}");
}
