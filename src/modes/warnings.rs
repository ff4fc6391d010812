//! What went wrong that the household should see in `homebot status`: logged when it
//! happens, the latest few kept.

use tracing::warn;

const MAX_WARNINGS: usize = 50;

/// The latest [`MAX_WARNINGS`] warnings of the mode state, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Warnings(Vec<String>);

impl Warnings {
    /// Log `msg` and keep it, dropping the oldest past the bound.
    pub fn push(&mut self, msg: String) {
        warn!("{msg}");
        if self.0.len() >= MAX_WARNINGS {
            self.0.remove(0);
        }
        self.0.push(msg);
    }

    pub fn to_vec(&self) -> Vec<String> {
        self.0.clone()
    }
}
