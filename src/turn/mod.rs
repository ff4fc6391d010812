//! What channels send into the kernel and what comes back: the turn (`message.rs`), its
//! reply (`reply.rs`) and the parts said before the reply is done (`partials.rs`). A turn's
//! typed facts — its audience, modality, trust and memory peer — are in [`facts`]; how it
//! ended, in [`outcome`]; a slash command, in [`command`].

pub mod command;
pub mod facts;
pub mod outcome;
pub use command::{ChatRef, Command};
pub use facts::{Audience, Facts, Modality, Trust};
pub use outcome::{Failure, Outcome, Refusal, TurnError};

mod message;
mod partials;
mod reply;

pub use message::Turn;
pub use partials::{Partial, Partials};
pub use reply::Reply;
