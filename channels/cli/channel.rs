//! [`CliChannel`]: the CLI as a channel of the gateway — the terminal actor (its
//! outbound door) and, on Unix, the control socket, for the process that owns the
//! workspace.

use super::actor::Terminals;
use super::control;
use super::options::CHANNEL;
use crate::channels::contract::{Channel, StartError, Started};
use crate::channels::ctx::ChannelCtx;

/// The CLI as a channel: the control socket and the terminal actor, which is its
/// outbound door. A proactive message for a CLI chat prints in an interactive chat of this
/// process, or in every `homebot chat` of that chat listening through the control socket;
/// with none attached it is refused as undeliverable, so the sender can say so.
#[derive(Default)]
pub struct CliChannel;

/// Start the terminal actor and (on Unix) the control socket for the process that owns
/// the workspace; the actor's handle is the CLI's outbound door.
pub fn serve(ctx: &ChannelCtx) -> std::io::Result<Terminals> {
    let terminals = Terminals::start(ctx.lifecycle(), ctx.cancel().clone())?;
    #[cfg(unix)]
    control::spawn_server(ctx, terminals.clone());
    Ok(terminals)
}

#[async_trait::async_trait]
impl Channel for CliChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    async fn start(self: Box<Self>, ctx: ChannelCtx) -> Result<Started, StartError> {
        let terminals = serve(&ctx).map_err(|e| {
            let socket = ctx.workspace_root().join(control::SOCKET_FILE);
            StartError::new(CHANNEL, socket.display().to_string(), e)
        })?;
        Ok(Started::door(std::sync::Arc::new(terminals)))
    }
}
