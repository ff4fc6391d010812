//! The CLI channel: a terminal on the home server. One-shot (`chat -m`) prints the reply
//! (as the model writes it, with a streaming provider) and returns; interactive chat
//! keeps a line history (`<workspace>/logs/cli_history`) and ends on Ctrl-D, Ctrl-C or
//! `/quit`. Turns carry `channel = "cli"`.
//!
//! The CLI reaches the kernel through a [`Door`]: its own kernel when it can take the
//! workspace lock, otherwise the control socket ([`control`]) of the process that holds it
//! (a running gateway) — never a second writer. The process that owns the workspace runs
//! the CLI channel's actor ([`actor::Terminals`]): it owns the control connections and the
//! terminals listening for proactive messages, and it is the channel's outbound door.
//!
//! Layout: `channel` — [`CliChannel`] and [`serve`]; `options` — [`CliOptions`]; `door` —
//! [`Door`] and [`Typed`]; `interrupts` — Ctrl-C; `chat` — one-shot and interactive
//! chat; `shown` — an answer as the terminal prints it (the partials as they come, then
//! the rest); `served` — a control client's turn (cancelled when it hangs up, streamed
//! when asked); `actor` — the terminal actor; `control` — the control socket.

pub mod actor;
mod channel;
mod chat;
pub mod control;
mod door;
mod interrupts;
mod options;
mod served;
mod shown;

pub use channel::{serve, CliChannel};
pub use chat::{interactive, one_shot};
pub use door::{Door, Typed};
pub use interrupts::Interrupts;
pub use options::{terminal_facts, turn, CliOptions, CHANNEL};
