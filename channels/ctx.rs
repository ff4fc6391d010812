//! What a channel may use of the kernel: [`ChannelCtx`], the narrow view every channel is
//! started with (and the spoken kit, and the control socket). A channel submits turns,
//! starts its tasks and actors in the kernel's groups, stops when its own token fires,
//! reports its links, and reads the configuration; the control socket also reads the
//! status and delivers an announcement. Nothing else of the kernel (the modes, the
//! provider, the memory, the registry, the shutdown) is reachable from a channel.

use crate::actor::{Lifecycle, Tasks};
use crate::config::Config;
use crate::kernel::{Kernel, KernelInner, PendingReply};
use crate::outbound::DeliveryError;
use crate::presence::Presence;
use crate::turn::Turn;
use std::path::Path;
use std::sync::Weak;
use tokio_util::sync::CancellationToken;

/// The kernel as one channel sees it. Cheap to clone; it keeps the kernel alive, as a
/// running channel does (a handle that must not, such as an HTTP route's, holds a
/// [`WeakChannelCtx`]).
#[derive(Clone)]
pub struct ChannelCtx {
    kernel: Kernel,
    /// The channel's own token: a child of the kernel's service token.
    cancel: CancellationToken,
}

impl ChannelCtx {
    /// The view a channel gets, with its own token (a child of the services' token, so
    /// the shutdown stops it after the turns).
    pub fn of(kernel: &Kernel) -> Self {
        Self {
            kernel: kernel.clone(),
            cancel: kernel.cancel_token().child_token(),
        }
    }

    /// Admit a turn to its chat's FIFO now (at arrival) and get its reply later
    /// ([`Kernel::submit`]).
    pub fn submit(&self, turn: Turn) -> PendingReply {
        self.kernel.submit(turn)
    }

    /// [`Self::submit`], with a token the sender may cancel.
    pub fn submit_cancellable(&self, turn: Turn, cancel: CancellationToken) -> PendingReply {
        self.kernel.submit_cancellable(turn, cancel)
    }

    /// The kernel's task groups: a reply's delivery in `Group::Turn`, a server in
    /// `Group::Service`, anything else `spawn` (background).
    pub fn tasks(&self) -> &Tasks {
        self.kernel.tasks()
    }

    /// Where the channel starts its actor threads (stopped by the shutdown).
    pub fn lifecycle(&self) -> &Lifecycle {
        self.kernel.lifecycle()
    }

    /// Fires when the channel must stop.
    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Where the channel reports its links (see [`crate::presence`]).
    pub fn presence(&self) -> &Presence {
        self.kernel.presence()
    }

    /// The configuration, read only. A channel reads its own section and the
    /// household-wide settings it applies: `[agent]`'s limits, the members (who a QQ
    /// number or an HA user is), the household's name, and for voice the speakers of
    /// `[home_assistant]`.
    pub fn config(&self) -> &Config {
        self.kernel.config()
    }

    /// The workspace's directory (the control socket's file lives there).
    pub fn workspace_root(&self) -> &Path {
        self.kernel.workspace().root()
    }

    /// Whether the model's answers arrive as a stream (a spoken channel then speaks them
    /// sentence by sentence).
    pub fn streams(&self) -> bool {
        self.kernel.provider().streams()
    }

    /// Deliver `message` to `origin`'s chat through whichever running channel carries it,
    /// retried by `retry` (a Home Assistant watch that fires goes to the chat that set
    /// it). The doors themselves stay the kernel's: a channel cannot register one.
    pub async fn deliver_to(
        &self,
        origin: &crate::reminders::Origin,
        message: &str,
        retry: crate::cron::RetryPolicy,
    ) -> Result<(), DeliveryError> {
        crate::cron::deliver(self.kernel.doors(), origin, message, retry).await
    }

    /// Deliver a message through a running channel's door (the owner's `announce`).
    pub async fn deliver(
        &self,
        channel: &str,
        target: &str,
        text: &str,
    ) -> Result<(), DeliveryError> {
        self.kernel.deliver(channel, target, text).await
    }

    /// The status text (the owner's `homebot status` over the control socket).
    pub async fn status_text(&self) -> String {
        self.kernel.status_text().await
    }

    /// A handle that does not keep the kernel alive.
    pub fn downgrade(&self) -> WeakChannelCtx {
        WeakChannelCtx {
            kernel: self.kernel.downgrade(),
            cancel: self.cancel.clone(),
        }
    }
}

/// A [`ChannelCtx`] that does not keep the kernel alive: an HTTP route's or a
/// connection's, which must not hold a stopped kernel open.
#[derive(Clone)]
pub struct WeakChannelCtx {
    kernel: Weak<KernelInner>,
    cancel: CancellationToken,
}

impl WeakChannelCtx {
    /// The channel's view, while the kernel runs.
    pub fn upgrade(&self) -> Option<ChannelCtx> {
        Kernel::upgrade(&self.kernel).map(|kernel| ChannelCtx {
            kernel,
            cancel: self.cancel.clone(),
        })
    }
}
