//! [`CliChannel`]: the CLI as a channel of the gateway — the terminal actor (its
//! outbound door) and, on Unix, the control socket, for the process that owns the
//! workspace.

use super::actor::Terminals;
use super::control;
use super::options::CHANNEL;
use crate::channels::contract::{Channel, StartError, Started};
use crate::kernel::Kernel;
use tokio_util::sync::CancellationToken;

/// The CLI as a channel: the control socket and the terminal actor, which is its
/// outbound door. A proactive message for a CLI chat prints in an interactive chat of this
/// process, or in every `homebot chat` of that chat listening through the control socket;
/// with none attached it is refused as undeliverable, so the sender can say so.
#[derive(Default)]
pub struct CliChannel;

/// Start the terminal actor and (on Unix) the control socket for the process that owns
/// the workspace; the actor's handle is the CLI's outbound door.
pub fn serve(kernel: &Kernel) -> std::io::Result<Terminals> {
    let terminals = Terminals::start(kernel.lifecycle(), kernel.cancel_token().child_token())?;
    #[cfg(unix)]
    control::spawn_server(kernel, terminals.clone());
    Ok(terminals)
}

#[async_trait::async_trait]
impl Channel for CliChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    async fn start(
        self: Box<Self>,
        kernel: Kernel,
        _cancel: CancellationToken,
    ) -> Result<Started, StartError> {
        let terminals = serve(&kernel).map_err(|e| {
            let socket = kernel.workspace().root().join(control::SOCKET_FILE);
            StartError::new(CHANNEL, socket.display().to_string(), e)
        })?;
        Ok(Started::door(std::sync::Arc::new(terminals)))
    }
}
