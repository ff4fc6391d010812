//! Which channels the configuration enables, in start order, and starting them with their
//! outbound doors registered (the gateway's job; `homebot demo` starts them the same way).

use super::contract::{Channel, StartError};
use super::{cli, home_assistant, qq, voice};
use crate::config::Config;
use crate::kernel::Kernel;
use tracing::{info, warn};

/// The channels the configuration enables, in start order.
pub fn enabled(cfg: &Config) -> Vec<Box<dyn Channel>> {
    // the CLI is always there: the control socket, and the door to listening terminals
    let mut v: Vec<Box<dyn Channel>> = vec![Box::new(cli::CliChannel)];
    if cfg.qq.enabled() {
        v.push(Box::new(qq::QqChannel::new(cfg.qq.clone())));
    }
    // Home Assistant first: voice speaks through its client once it has started
    let ha = home_assistant::HaSlot::default();
    if cfg.home_assistant.enabled() {
        v.push(Box::new(home_assistant::HomeAssistantChannel::new(
            cfg.home_assistant.clone(),
            ha.clone(),
        )));
    }
    // Home Assistant's agent endpoint runs voice turns
    let ha_agent = cfg.http.listen.is_some() && cfg.http.ha_agent_token.is_some();
    if cfg.voice.enabled() || cfg.home_assistant.enabled() || ha_agent {
        v.push(Box::new(
            voice::VoiceChannel::new(cfg.voice.clone()).with_home_assistant(ha),
        ));
    }
    v
}

/// Start every channel the configuration enables (the gateway's job): each one in turn,
/// its outbound door registered with the kernel. Logs each bound address as
/// `channel listening` so tools (and tests) can find ports chosen with `:0`. Returns how
/// many channels run.
pub async fn start_enabled(kernel: &Kernel) -> Result<usize, StartError> {
    let channels = enabled(kernel.config());
    if channels.iter().all(|c| c.name() == cli::CHANNEL) {
        warn!("no channel is enabled, so nothing can reach this gateway; set HOMEBOT_QQ_LISTEN, HOMEBOT_WYOMING_LISTEN or HOMEBOT_VOICE_WS_LISTEN (or [qq] / [voice] in config.toml); `homebot chat` works beside it");
    }
    let n = channels.len();
    for ch in channels {
        let name = ch.name();
        let started = ch
            .start(kernel.clone(), kernel.cancel_token().child_token())
            .await?;
        for (label, addr) in &started.bound {
            info!(channel = *label, addr = %addr, "channel listening");
        }
        if let Some(door) = started.outbound {
            kernel.doors().register(name, door);
        }
    }
    Ok(n)
}
