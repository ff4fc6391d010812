//! homebot — a home assistant bot gateway.
//!
//! One process per household. Channels (see `channels/`) send [`turn::Turn`]s to the kernel; the
//! kernel runs each turn through the single [`modes::ModeManager`], the per-turn
//! [`agent`] and the [`provider`], and hands the reply back to the channel.
//!
//! Layout, in start-up order:
//! - [`kernel`] — starts the actors; `submit` is the one door for channels;
//!   [`scheduler`] — per-chat FIFOs, chats in parallel; [`commands`] — slash commands
//!   and the status text; [`outbound`] — the doors through which the kernel speaks to
//!   running channels (the channel contract itself is `channels::contract`); [`home`] —
//!   the door through which Home Assistant reaches the home tools and the fast path;
//!   [`presence`] — which channel links are up, and since when (channels report, the
//!   dashboard reads).
//! - [`lock`] — one owner per workspace (the control socket a CLI beside a running
//!   gateway routes through is the CLI channel's, `channels/cli/control.rs`).
//! - [`modes`] — run modes: manifests, the registry, switch validation, `action.json`,
//!   session files, and the supervised `ModeManager` actor that owns all of them;
//!   [`chats`] — normal-operation chat histories; [`history`] — the record format both use.
//! - [`agent`] / [`prompt`] / [`tools`] — one turn: prompt layout, tool loop, tools;
//!   [`speech`] — a reply said sentence by sentence while the model writes it;
//!   [`knowledge`] — retrieval over the active mode's knowledge folders for the tail;
//!   [`summarizer`] — model-written summaries of sessions that ended without one;
//!   [`context`] — the token budget, chunked trimming and compaction of the history.
//! - [`provider`] — LLM clients (OpenAI-compatible chat completions, Anthropic
//!   Messages), retries, usage and the audit trail; [`audit`] — `homebot audit` and
//!   `homebot stats` read that trail back.
//! - [`memory`] — scene memory: fingerprints, emergent scenes, recall by situation
//!   (SQLite, one memory thread).
//! - [`metrics`] — process-wide Prometheus counters (turns, provider calls, tokens, cost,
//!   modes) and their text format; it imports only `config`, so anything may count.
//! - [`strategy`] — how the agent works (Build / Plan / Spec / Reflect / Assist /
//!   Custom), run by the kernel around the agent's tool loop; `ask_user_choice` answers.
//! - [`cron`] — the Cron actor: mode expiry and reminders; [`actor`] — the actor kit:
//!   an actor's named thread, its stop and join with the kernel's shutdown, the
//!   supervised state cell (restart from disk after a panic, capped backoff), the tracked
//!   background tasks.
//! - [`config`] / [`workspace`] / [`clock`] / [`fsutil`] — configuration, workspace
//!   paths, time, crash-safe file writes; [`heap`] — freed heap pages given back to the
//!   system (the gateway, every 10 s); [`failpoint`] — stop points for crash tests;
//!   [`netutil`] — connection caps, the descriptor budget, the accept loop (used by
//!   the channels).
//! - [`addon`] — as a Home Assistant OS add-on, the gateway announces its URL and agent
//!   token to Home Assistant through the Supervisor's discovery (`config::addon` reads
//!   the add-on's options).
//! - [`channels`] (folder `channels/`) — the channel adapters; [`skills`] (folder
//!   `skills/`) — skill folders and the table of compiled-in mode plugins; [`dashboard`]
//!   (folder `dashboard/`) — the household's web page and its JSON API (`[http]`);
//!   [`demo`] (folder `demo/`) — `homebot demo`, which drives the channels as a household
//!   would.
//!
//! Which way imports run (no circles; `tests/it/imports/layering.rs` checks it): `main` → `demo` → `channels`
//! → `kernel` → `commands` → `strategy` → `agent` → `tools` → `memory` → `prompt` → `context` → `modes` → `chats`
//! → `history`, and below them all `config`, `workspace`, `fsutil`. `skills` depends on
//! `modes` (plugins implement `ModePlugin`); the kernel hands the registry the
//! `skills::PLUGINS` table and the mode core `prompt::frozen_mode_prompt`, so `modes`
//! imports neither. `dashboard` uses the kernel (and `channels`' shared pieces) like a
//! channel does; nothing else imports it. The kernel never imports `channels`: channels reach it through
//! `Kernel`, and it reaches them only through their registered [`outbound`] doors.

pub mod actor;
pub mod addon;
pub mod agent;
pub mod audit;
pub mod chats;
pub mod clock;
pub mod commands;
pub mod config;
pub mod context;
pub mod cron;
pub mod doctor;
pub mod failpoint;
pub mod fsutil;
pub mod heap;
pub mod history;
pub mod home;
pub mod kernel;
pub mod knowledge;
pub mod lock;
pub mod memory;
pub mod metrics;
pub mod modes;
pub mod netutil;
pub mod outbound;
pub mod presence;
pub mod prompt;
pub mod provider;
pub mod reminders;
pub mod scheduler;
pub mod speech;
pub mod strategy;
pub mod summarizer;
pub mod tools;
pub mod turn;
pub mod workspace;
pub mod zone;

#[path = "../channels/mod.rs"]
pub mod channels;
#[path = "../dashboard/mod.rs"]
pub mod dashboard;
#[path = "../demo/mod.rs"]
pub mod demo;
#[path = "../skills/mod.rs"]
pub mod skills;
