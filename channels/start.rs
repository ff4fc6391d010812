//! Which channels the configuration enables, and starting them: each one in turn, then
//! what they provide resolved — the doors and the house registered with the kernel, Home
//! Assistant's satellites in the ports registry, the HTTP routes handed back for the one
//! HTTP server (the gateway's job; `homebot demo` starts them the same way). The order
//! carries no meaning: what one channel needs of another is resolved after all started.

use super::contract::{Channel, Provides, StartError};
use super::ctx::ChannelCtx;
use super::ports::Ports;
use super::spoken::Spoken;
use super::{cli, home_assistant, qq, voice};
use crate::config::Config;
use crate::kernel::Kernel;
use tracing::{info, warn};

/// The channels the configuration enables. Voice and Home Assistant share the spoken
/// kit (`spoken`, started when either runs) and see each other only through `ports`.
pub fn enabled(cfg: &Config, spoken: Option<&Spoken>) -> Vec<Box<dyn Channel>> {
    // the CLI is always there: the control socket, and the door to listening terminals
    let mut v: Vec<Box<dyn Channel>> = vec![Box::new(cli::CliChannel)];
    if cfg.qq.enabled() {
        v.push(Box::new(qq::QqChannel::new(cfg.qq.clone())));
    }
    let Some(spoken) = spoken else {
        return v;
    };
    // with Home Assistant, voice's door reaches its satellites and areas too
    if cfg.voice.enabled() || cfg.home_assistant.enabled() {
        v.push(Box::new(voice::VoiceChannel::new(
            cfg.voice.clone(),
            spoken.clone(),
        )));
    }
    if home_assistant::HomeAssistantChannel::enabled(cfg) {
        v.push(Box::new(home_assistant::HomeAssistantChannel::new(
            cfg,
            spoken.clone(),
        )));
    }
    v
}

/// Whether a channel that speaks runs (voice, or Home Assistant): then the spoken kit does.
fn speaks(cfg: &Config) -> bool {
    cfg.voice.enabled() || home_assistant::HomeAssistantChannel::enabled(cfg)
}

/// The running channels: how many, the servers they bound (label, address), and the
/// HTTP routes they provide (for `dashboard::start`, the one HTTP server).
pub struct Running {
    pub channels: usize,
    pub bound: Vec<(&'static str, std::net::SocketAddr)>,
    pub routes: Option<axum::Router>,
}

/// Start every channel the configuration enables (the gateway's job), then resolve what
/// they provide. Logs each bound address as `channel listening` so tools (and tests) can
/// find ports chosen with `:0`.
pub async fn start_enabled(kernel: &Kernel) -> Result<Running, StartError> {
    let cfg = kernel.config();
    let ports = Ports::default();
    let spoken = match speaks(cfg) {
        true => Some(
            Spoken::start(&ChannelCtx::of(kernel), ports.clone())
                .map_err(|e| StartError::new("spoken", "-", e))?,
        ),
        false => None,
    };
    let channels = enabled(cfg, spoken.as_ref());
    if channels.iter().all(|c| c.name() == cli::CHANNEL) {
        warn!("no channel is enabled, so nothing can reach this gateway; set HOMEBOT_QQ_LISTEN, HOMEBOT_WYOMING_LISTEN or HOMEBOT_VOICE_WS_LISTEN (or [qq] / [voice] in config.toml); `homebot chat` works beside it");
    }
    let n = channels.len();
    let mut provided: Vec<(&'static str, Provides)> = Vec::with_capacity(n);
    let mut bound = Vec::new();
    for ch in channels {
        let name = ch.name();
        let started = ch.start(ChannelCtx::of(kernel)).await?;
        for (label, addr) in &started.bound {
            info!(channel = *label, addr = %addr, "channel listening");
        }
        bound.extend(started.bound);
        provided.push((name, started.provides));
    }
    let mut routes: Option<axum::Router> = None;
    for (name, p) in provided {
        if let Some(door) = p.door {
            kernel.doors().register(name, door);
        }
        if let Some(home) = p.home {
            kernel.doors().provide_home(home);
        }
        if let Some(s) = p.satellites {
            ports.provide_satellites(s);
        }
        if let Some(r) = p.routes {
            routes = Some(match routes {
                Some(all) => all.merge(r),
                None => r,
            });
        }
    }
    Ok(Running {
        channels: n,
        bound,
        routes,
    })
}
