//! The actor kit: the one way homebot starts, supervises and stops its actors.
//!
//! Layout: `thread` — [`ActorThread`], an actix system on a named thread, started with
//! its actors and handing back their addresses; `lifecycle` — [`Lifecycle`], the kernel's
//! record of those threads (its shutdown stops and joins them) and of the [`Tasks`];
//! `tasks` — [`Tasks`], every task in three named groups (turns, services, background)
//! the shutdown drains in order; `cell` — [`Supervised`], the state cell whose only
//! door is the supervised run; `gather` — the batch a blocking owner (the memory
//! thread, the log writer) takes after a wake, cut short by whatever a caller waits for;
//! `supervisor` — the restart record behind it (a panic fails
//! one request, the state is reopened, repeated panics wait a capped backoff).
//!
//! Who uses it: the kernel (the ModeManager and Cron threads), the provider (its own
//! thread, owned by the provider's handles), the channels (their actors, through the
//! kernel's [`Lifecycle`]), and every actor with state (its [`Supervised`] cell).

mod cell;
mod gather;
mod lifecycle;
mod supervisor;
mod tasks;
mod thread;

pub use cell::Supervised;
pub use gather::gather;
pub use lifecycle::Lifecycle;
pub use supervisor::{pause_after, InMemoryOnly, Unavailable, CALM, MAX_PAUSE};
pub use tasks::{Group, TaskGuard, Tasks};
pub use thread::ActorThread;
