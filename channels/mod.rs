//! Channel adapters: each folder is one channel actor that turns its transport into
//! [`crate::turn::Turn`]s for [`crate::kernel::Kernel::handle_turn`] and delivers replies.
//!
//! - [`cli`] — the terminal: interactive chat and one-shot `-m`.
//! - [`qq`] — QQ through OneBot v11 (reverse and forward WebSocket).

pub mod cli;
pub mod qq;

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
    Ok(())
}
