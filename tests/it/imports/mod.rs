//! Imports run one way, read from the source by one scanner ([`scan`]), so a change that
//! adds a circle fails here, not in a reviewer's head: between the crate's top-level
//! modules and inside each module folder ([`layering`]), and strictly inside `src/tools`
//! ([`tools`]); threads and background tasks start through the actor kit ([`spawns`]);
//! a type's methods live in at most two files or a folder of its own ([`impls`]); no
//! error is only a `String` and no channel builds a `json!` frame ([`habits`]).

mod habits;
mod impls;
mod layering;
mod scan;
mod spawns;
mod tools;
