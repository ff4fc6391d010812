//! Threads and background tasks start through the actor kit (`src/actor/`: an actor's
//! named thread, the tracked tasks a shutdown cancels and joins), so none outlives the
//! kernel unseen. A bare `tokio::spawn`, a thread or an actix system started anywhere
//! else in the shipped library fails here, unless it is one of the few listed below with
//! the reason it may.

use super::scan::{self, code};

/// What starts a thread or an untracked task.
const STARTS: &[&str] = &[
    "tokio::spawn(",
    "std::thread::spawn(",
    "thread::Builder::new(",
    "System::new(",
    "Arbiter::new(",
];

/// Files that may, and why.
const ALLOWED: &[(&str, &str)] = &[
    (
        "src/memory/handle.rs",
        "the memory thread owns the SQLite connection (docs/architecture.md: two threads own a blocking resource without an actor)",
    ),
    (
        "src/provider/logwriter.rs",
        "the log writer's thread (docs/architecture.md, as above); the kernel joins it",
    ),
    (
        "channels/cli/chat.rs",
        "the `homebot chat` client process, not the gateway: its stdin reader and the listener of a remote chat",
    ),
    (
        "demo/model.rs",
        "`homebot demo`'s scripted model server, a peer the demo plays",
    ),
    (
        "demo/peers.rs",
        "`homebot demo`'s simulated devices (a OneBot implementation, a Wyoming client, a satellite)",
    ),
];

#[test]
fn threads_and_tasks_start_through_the_actor_kit() {
    let root = scan::repo();
    let mut found = Vec::new();
    for (_, path) in scan::library() {
        let shown = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if shown.starts_with("src/actor/") || ALLOWED.iter().any(|(f, _)| *f == shown) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in code(&text).lines().enumerate() {
            if let Some(s) = STARTS.iter().find(|s| line.contains(*s)) {
                found.push(format!("{shown}:{}: {s} {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "threads or untracked tasks started outside the actor kit (use Kernel::lifecycle: \
         start_actor_until, tasks().spawn, or Kernel::spawn_service / spawn_delivery):\n{}",
        found.join("\n")
    );
    // every exception still needs its exception
    for (file, why) in ALLOWED {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(
            STARTS.iter().any(|s| code(&text).contains(s)),
            "{file} no longer starts anything ({why}): take it off the list"
        );
    }
}
