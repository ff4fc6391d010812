//! Channel adapters: each folder is one channel actor that turns its transport into
//! [`crate::turn::Turn`]s for [`crate::kernel::Kernel::handle_turn`] and delivers replies.
//!
//! - [`cli`] — the terminal: interactive chat and one-shot `-m`.

pub mod cli;
