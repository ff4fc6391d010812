//! The kernel: starts the actors and is the one door channels use.
//!
//! `Kernel::start` opens the workspace, takes its lock (one owner per workspace, see
//! `lock`), loads the config and the mode registry, starts the ModeManager and the Cron
//! actor, each on its own thread (`actors`), and prepares the Provider and the Agent.
//!
//! Channels call [`Kernel::submit`] at arrival: the turn joins its chat's FIFO (see
//! `scheduler`) and runs in that chat's worker task — slash commands directly (see
//! `commands`), chat through begin-turn → agent → end-turn. The caller only waits for the
//! reply, so a caller that goes away (a dropped connection) cannot leave a turn begun but
//! never recorded.
//!
//! One turn's way through is `turn_run`'s `TurnRun`: admit → begin → answer → record.
//!
//! Lifecycle: every task is in one of the [`crate::actor::Tasks`] groups of the
//! [`crate::actor::Lifecycle`] (`Kernel::tasks`): chat workers and reply deliveries in `Turn`, channel
//! servers in `Service` (they stop when its token fires), compactions, reminder
//! deliveries, the listen-again and the heap trim in `Background`; the actor threads are
//! the `Lifecycle`'s too. A graceful shutdown closes admission (under the queue lock, so
//! no turn slips in unseen), waits for the turns up to the grace period, then stops the
//! services and waits for them (the control socket removes its file on the way out),
//! cancels the background tasks and waits for them, and stops the actor threads and
//! joins them.
//!
//! Layout: `handle` — `Kernel` and what it owns, and every method of it but `start`;
//! `submit` — the door's machinery (admission to a chat's FIFO, `PendingReply`, the chat's
//! worker); `turn_run` — one turn (`TurnRun`); `shutdown` — the drain; `start`
//! and `actors` — start-up; `options` — `KernelOptions` and the skill search path; `error`
//! — `KernelError`.

mod actors;
mod start;
mod turn_run;
pub use turn_run::{turn_outcome, CANCELLED};

mod error;
mod handle;
mod options;
mod shutdown;
mod submit;

pub use error::KernelError;
pub use handle::{Kernel, KernelInner};
pub use options::{skill_search_path, KernelOptions};
pub use submit::PendingReply;
