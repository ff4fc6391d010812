//! Channel adapters: each folder is one channel actor that turns its transport into
//! [`crate::turn::Turn`]s for [`crate::kernel::Kernel::handle_turn`] and delivers replies.
//!
//! - [`cli`] — the terminal: interactive chat and one-shot `-m`.
//! - [`qq`] — QQ through OneBot v11 (reverse and forward WebSocket).
//! - [`voice`] — speakers: a Wyoming handle service and a native satellite WebSocket.
//! - [`text`] — reply shaping shared by channels (markdown flattening, splitting);
//!   [`auth`] — token checks shared by their servers.

pub mod auth;
pub mod cli;
pub mod qq;
pub mod text;
pub mod voice;

use crate::kernel::Kernel;
use tracing::info;

/// Start every channel the configuration enables (the gateway's job). Logs each bound
/// address as `channel listening` so tools (and tests) can find ports chosen with `:0`.
pub async fn start_enabled(kernel: &Kernel) -> std::io::Result<()> {
    let cfg = kernel.config().clone();
    if cfg.qq.enabled() {
        let (_qq, addr) = qq::QqChannel::start(kernel.clone(), cfg.qq.clone()).await?;
        if let Some(a) = addr {
            info!(channel = "qq", addr = %a, "channel listening");
        }
    }
    if cfg.voice.wyoming_listen.is_some() || cfg.voice.ws_listen.is_some() {
        let (_voice, wy, ws) =
            voice::VoiceChannel::start(kernel.clone(), cfg.voice.clone()).await?;
        if let Some(a) = wy {
            info!(channel = "wyoming", addr = %a, "channel listening");
        }
        if let Some(a) = ws {
            info!(channel = "voice-ws", addr = %a, "channel listening");
        }
    }
    Ok(())
}
