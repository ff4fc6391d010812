//! homebot — a home assistant bot gateway.
//!
//! One process per household. Channel actors send [`turn::Turn`]s to the kernel; the
//! kernel runs each turn through the single [`modes::ModeManager`], the per-turn
//! [`agent`] and the [`provider`], and hands the reply back to the channel.
//!
//! Layout:
//! - [`kernel`] — wires the actors together; `submit` / `handle_turn` is the one entry
//!   for channels. [`scheduler`] — per-chat FIFOs, chats in parallel.
//! - [`control`] — the workspace lock and the local control socket (one owner per
//!   workspace; a CLI beside a running gateway routes through it).
//! - [`modes`] — run modes: `mode.json` manifests, the registry, switch validation,
//!   `action.json`, session files, and the `ModeManager` actor that owns all of them.
//! - [`agent`] / [`prompt`] / [`tools`] — one turn: prompt layout, tool loop, tools.
//! - [`provider`] — LLM clients (OpenAI-compatible chat completions), retries, usage.
//! - [`cron`] — the Cron actor: mode expiry (and later user timers).
//! - [`config`] / [`workspace`] / [`clock`] / [`fsutil`] — configuration, workspace
//!   paths, time, crash-safe file writes; [`failpoint`] — stop points for crash tests.
//! - [`channels`] (folder `channels/`) — the channel adapters; [`skills`] (folder
//!   `skills/`) — skill folders and the compiled-in mode plugins they name.

pub mod agent;
pub mod channel;
pub mod clock;
pub mod commands;
pub mod config;
pub mod control;
pub mod cron;
pub mod doctor;
pub mod failpoint;
pub mod fsutil;
pub mod kernel;
pub mod lock;
pub mod modes;
pub mod prompt;
pub mod provider;
pub mod scheduler;
pub mod tools;
pub mod turn;
pub mod workspace;

#[path = "../channels/mod.rs"]
pub mod channels;
#[path = "../skills/mod.rs"]
pub mod skills;
