//! A sub-mode's push and pop under concurrent turns: voice wakes, QQ groups and the
//! terminal all talking while 烘焙模式 is entered inside a cooking session, left with
//! "回到做饭模式", entered again and ended with its parent. Afterwards: every turn is
//! recorded exactly once, in the session its prompt was built for; every JSONL line is
//! whole; every ended baking session's conclusion is in a cooking session exactly once;
//! `action.json` and `paused.json` were valid documents whenever a watcher looked.

use crate::common;

use common::*;
use homebot::modes::action::ActionDoc;
use homebot::modes::paused::PausedDoc;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn jitter(n: usize) -> u64 {
    let mut x = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x % 30
}

/// The mode session a request was built in (the frozen prompt's `[本次会话]` block).
fn session_in_system(system: &str) -> Option<String> {
    let i = system.find("\n[本次会话]\n会话: ")?;
    let rest = &system[i + "\n[本次会话]\n会话: ".len()..];
    Some(rest.split_whitespace().next()?.to_string())
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "jsonl")
            && p.file_name().is_none_or(|n| n != "audit.jsonl")
        {
            out.push(p);
        }
    }
}

fn session_of(file: &Path) -> Option<String> {
    (file.file_name()? == "conversation.jsonl")
        .then(|| file.parent()?.file_name()?.to_str().map(String::from))
        .flatten()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn turns_from_every_channel_during_the_push_and_the_pop_corrupt_no_session() {
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::write(
        ws.join("config.toml"),
        "[agent]\nmax_queued_per_chat = 64\n[provider]\nmax_concurrent = 16\n",
    )
    .unwrap();
    // words → the session its first request was built in
    let seen: Arc<Mutex<HashMap<String, Option<String>>>> = Arc::default();
    let seen2 = seen.clone();
    let fake = FakeLlm::start(move |body, n| {
        let msgs = body["messages"].as_array().unwrap();
        let last = msgs.last().unwrap();
        if last["role"] == "user" {
            let system = msgs[0]["content"].as_str().unwrap();
            seen2
                .lock()
                .unwrap()
                .insert(user_words(last), session_in_system(system));
        }
        FakeReply::Delay(Duration::from_millis(jitter(n)), Box::new(scripted(body)))
    })
    .await;
    let kernel = start_kernel(&ws, &fake);

    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, modes) = (stop.clone(), ws.join("modes"));
        std::thread::spawn(move || {
            let mut paused_seen = 0usize;
            while !stop.load(Ordering::Relaxed) {
                match ActionDoc::read(&modes.join("action.json")) {
                    Ok(_) => {}
                    Err(e) => panic!("action.json was not a valid document: {e}"),
                }
                match PausedDoc::read(&PausedDoc::path(&modes)) {
                    Ok(Some(_)) => paused_seen += 1,
                    Ok(None) => {}
                    Err(e) => panic!("paused.json was not a valid document: {e}"),
                }
            }
            paused_seen
        })
    };

    let chats: Vec<(&str, &str)> = vec![
        ("qq", "group:5550001"),
        ("voice", "wake-1"),
        ("voice", "wake-2"),
        ("qq", "group:5550002"),
        ("cli", "local"),
        ("qq", "private:10001"),
    ];
    const PER_CHAT: usize = 16;
    let switches: HashMap<(usize, usize), &str> = HashMap::from([
        ((0, 0), "打开做饭模式"),
        ((3, 4), "打开烘焙模式"),
        ((1, 8), "回到做饭模式"),
        ((4, 10), "打开烘焙模式"),
        ((2, 14), "结束做饭模式"),
    ]);
    let mut expected = Vec::new();
    let mut pending = Vec::new();
    for i in 0..PER_CHAT {
        for (c, (channel, chat)) in chats.iter().enumerate() {
            let text = match switches.get(&(c, i)) {
                Some(w) => format!("{w} [{c}#{i}]"),
                None => format!("问题 [{c}#{i}]"),
            };
            expected.push(text.clone());
            pending.push(kernel.submit(turn_of(channel, chat.to_string(), "mom", text)));
        }
    }
    for p in pending {
        let r = p.reply().await;
        assert!(r.is_answered(), "{r:?}");
    }
    stop.store(true, Ordering::Relaxed);
    let paused_seen = watcher
        .join()
        .expect("the documents stayed valid throughout");

    let mut all = Vec::new();
    files(&ws.join("modes/sessions"), &mut all);
    files(&ws.join("chats"), &mut all);
    let mut recorded: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
    let mut conclusions: BTreeMap<String, usize> = BTreeMap::new();
    for f in &all {
        let mut last: HashMap<usize, usize> = HashMap::new();
        for rec in jsonl(f) {
            if rec["channel"] == "mode" {
                assert!(f.to_string_lossy().contains("/cooking/"), "{}", f.display());
                *conclusions
                    .entry(rec["chat_id"].as_str().unwrap().to_string())
                    .or_default() += 1;
                continue;
            }
            let user = rec["user"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: {rec}", f.display()))
                .to_string();
            let tag = user.rsplit('[').next().unwrap().trim_end_matches(']');
            let (c, i) = tag
                .split_once('#')
                .unwrap_or_else(|| panic!("{}: {rec}", f.display()));
            let (c, i): (usize, usize) = (c.parse().unwrap(), i.parse().unwrap());
            if let Some(prev) = last.insert(c, i) {
                assert!(prev < i, "{}: chat {c} out of order", f.display());
            }
            recorded.entry(user).or_default().push(session_of(f));
        }
    }
    let seen = seen.lock().unwrap().clone();
    for text in &expected {
        let at = recorded.get(text).cloned().unwrap_or_default();
        assert_eq!(at.len(), 1, "{text:?} recorded {} times", at.len());
        let switch = switches.values().any(|w| text.starts_with(w));
        if !switch {
            // in the session its prompt was built for (a turn that begins while the
            // sub-mode is exiting joins the parent, in both)
            assert_eq!(seen.get(text), Some(&at[0]), "{text:?}");
        }
    }
    // every ended baking session brought its conclusion back exactly once
    let bakes: Vec<PathBuf> = std::fs::read_dir(ws.join("modes/sessions/baking"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(!bakes.is_empty(), "the sub-mode was entered");
    assert!(paused_seen > 0);
    for b in &bakes {
        let id = b.file_name().unwrap().to_str().unwrap();
        if b.join("summary.md").exists() {
            assert_eq!(conclusions.get(id), Some(&1), "{id}");
        }
    }
    assert_eq!(
        conclusions.len(),
        bakes
            .iter()
            .filter(|b| b.join("summary.md").exists())
            .count()
    );
}
