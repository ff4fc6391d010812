//! `homebot demo`: the whole product in one command, with no key and no device.
//!
//! It makes a fresh workspace, starts a model — the [`script`]ed one built into the
//! binary (a real OpenAI-compatible server on loopback whose every answer is labelled
//! [`script::LABEL`]), or a real endpoint given with `--model-url` — then the real
//! gateway in this process with QQ (reverse WebSocket) and voice (Wyoming and the
//! satellite WebSocket) on `127.0.0.1:0`, and plays a short cooking session ([`story`])
//! through real clients of those servers ([`peers`]) and the terminal. Then, unless
//! `--exit`, it keeps the gateway running with the dashboard ([`dashboard`]) until Ctrl-C.
//!
//! This folder sits beside `channels/` (not in `src/`): it drives the channels, and the
//! kernel side never imports them (`tests/it/imports/layering.rs`). Only `main` imports it.
//!
//! Layout: `launch` — [`run`]; `args` — `DemoArgs`; `workspace` — its fresh workspace and
//! config; `household` — the household's fixed ids; `readback` — what the story reads back.

pub mod dashboard;
pub mod model;
pub mod peers;
pub mod script;
pub mod story;

mod args;
mod household;
mod launch;
mod readback;
mod workspace;

pub use args::{DemoArgs, ModelChoice};
pub use household::{BOT_QQ, GROUP, HA_SPEAKER, MOM_QQ, SATELLITE, SATELLITE_SPEAKER};
pub use launch::run;
pub use readback::{failure, read};
