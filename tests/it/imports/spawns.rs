//! Threads and background tasks start through the actor kit (`src/actor/`: an actor's
//! named thread, the tracked tasks a shutdown cancels and joins), so none outlives the
//! kernel unseen. A bare `tokio::spawn`, a thread or an actix system started anywhere
//! else in the shipped library fails here, unless it is one of the few listed below with
//! the reason it may.

use super::scan::{self, code};

/// What starts a thread or an untracked task: tokio's free functions and a runtime
/// handle's method (`Handle::spawn`, on whatever a handle is named here), actix's
/// `spawn` and arbiters, std's threads, and an actix system. (An actor's own
/// `ctx.spawn` is the kit's: it stops with the actor.)
const STARTS: &[&str] = &[
    "tokio::spawn(",
    "tokio::task::spawn(",
    "task::spawn_local(",
    "actix::spawn(",
    "actix_rt::spawn(",
    "Arbiter::spawn(",
    "arbiter.spawn(",
    "Arbiter::current().spawn(",
    "Handle::current().spawn(",
    "runtime.spawn(",
    "handle.spawn(",
    "rt.spawn(",
    "std::thread::spawn(",
    "thread::spawn(",
    "thread::Builder::new(",
    "System::new(",
    "Arbiter::new(",
];

/// The form of `line` that starts a thread or an untracked task, if any.
fn start_in(line: &str) -> Option<&'static str> {
    STARTS.iter().copied().find(|s| line.contains(s))
}

/// Every form is caught, the two a gateway once used untracked among them; the kit's
/// own spawns are not.
#[test]
fn every_spawning_form_is_seen() {
    for line in [
        "tokio::spawn(async move { x.await });",
        "let t = tokio::task::spawn(fut);",
        "tokio::task::spawn_local(fut);",
        "actix::spawn(super::session::run(s, rx, f));",
        "Arbiter::current().spawn(fut);",
        "runtime.spawn(outbox::run_queue(handle(addr), queue));",
        "tokio::runtime::Handle::current().spawn(fut);",
        "let h = std::thread::spawn(|| ());",
        "std::thread::Builder::new().name(n).spawn(f)",
        "let sys = actix::System::new();",
    ] {
        assert!(start_in(line).is_some(), "not seen: {line}");
    }
    for kit in [
        "kernel.lifecycle().tasks().spawn(fut);",
        "tasks.spawn_on(&runtime, fut);",
        "ctx.spawn(actix::fut::wrap_future(fut));",
        "kernel.tasks().spawn_in(crate::actor::Group::Service, fut);",
        "tokio::task::spawn_blocking(move || read(&p)).await",
    ] {
        assert_eq!(start_in(kit), None, "{kit}");
    }
}

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
            if let Some(s) = start_in(line) {
                found.push(format!("{shown}:{}: {s} {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "threads or untracked tasks started outside the actor kit (use Kernel::lifecycle: \
         start_actor_until, or Kernel::tasks: spawn, spawn_in(Group::…)):\n{}",
        found.join("\n")
    );
    // every exception still needs its exception
    for (file, why) in ALLOWED {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(
            code(&text).lines().any(|l| start_in(l).is_some()),
            "{file} no longer starts anything ({why}): take it off the list"
        );
    }
}
