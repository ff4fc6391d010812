//! The integration tests, one binary with a module per behaviour (as cargo's own
//! `tests/testsuite`): each test binary links the whole crate, and on a small machine
//! the linking, not the testing, was most of a run. The peers every module shares — the
//! fake model, the OneBot simulator, the Wyoming client, [`common::eventually`] — are in
//! `tests/common/`, which `tests/soak` and `benches/` include too.
//!
//! Tests here run in parallel threads of one process, so none of them may touch
//! process-wide state: configuration goes in explicitly (`KernelOptions`, a child's own
//! environment), never through `std::env::set_var`. What cannot work that way stays a
//! binary of its own:
//!
//! - `tests/recording.rs`, `tests/supervision.rs`, `tests/supervision_cron.rs` arm a
//!   failpoint (`HOMEBOT_FAILPOINT`) inside the test process; the library reads it once
//!   per process, so each needs its own process and its own setting;
//! - `tests/metrics.rs` compares the process's Prometheus registry before and after its
//!   turns: the turns of any other test in the same process would move the counters.
//!
//! `tests/docs` is a binary of its own for another reason: it checks the Markdown against
//! the repository's files and uses nothing of the crate, so it needs none of this kit.
//!
//! Tests that kill processes (`crash`, the SIGKILLed gateway of `reminders_channels`)
//! kill `homebot` children, never this process, and are at home here.

#[path = "../common/mod.rs"]
mod common;

mod ha_fake;
mod real_ha;

mod audit;
mod binary;
mod cache_units;
mod cache_units_bases;
mod channels_mixed;
mod chat_memory;
mod cli;
mod concurrency;
mod config_bounds;
mod context;
mod corrupt_workspace;
mod crash;
mod dashboard;
mod dashboard_browser;
mod dashboard_cost;
mod dashboard_examples;
mod dashboard_links;
mod dashboard_live;
mod dashboard_token;
mod demo;
mod doctor;
mod examples;
mod expiry;
mod frozen_prompt;
mod gateway;
mod ha_addon;
mod ha_agent;
mod ha_agent_ask;
mod ha_agent_wakes;
mod ha_faults;
mod ha_held;
mod ha_home;
mod ha_integration;
mod ha_integration_turns;
mod ha_pipeline;
mod ha_ports;
mod ha_real;
mod ha_real_home;
mod ha_supervision;
mod ha_tls;
mod imports;
mod interrupt;
mod knowledge;
mod limits_flood;
mod limits_idle;
mod limits_net;
mod memory;
mod memory_home;
mod memory_policy;
mod memory_rooms;
mod memory_scenes;
mod memory_wording;
mod mode_confirm;
mod mode_offer;
mod mode_offer_answer;
mod mode_session;
mod ownership;
mod provider;
mod provider_anthropic;
mod provider_breaker;
mod provider_depth;
mod provider_depth_anthropic;
mod provider_wire;
mod qq;
mod qq_connection;
mod qq_delivery;
mod reminders;
mod reminders_channels;
mod skills_load;
mod strategy;
mod strategy_choice;
mod strategy_spoken;
mod strategy_stream;
mod strategy_switch;
mod streaming;
mod submode;
mod submode_ask;
mod submode_concurrency;
mod submode_confirm;
mod submode_crash;
mod submode_expiry;
mod terminal;
mod tool_limits;
mod tool_list;
mod tool_registry;
mod tool_results;
mod voice;
mod voice_identity;
mod voice_stream;
mod why;
