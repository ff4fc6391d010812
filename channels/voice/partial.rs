//! A satellite's turns in flight. Admitting one with a partial-text sink when the provider
//! streams (`provider.stream = true`) is `Voice::submit_satellite` (in `handle`): its
//! answer then goes out sentence by sentence through the spoken kit
//! (`channels::spoken::deliver`).
//!
//! A new `transcript` from the satellite while its reply streams, or a `stop`, cancels
//! its turns in flight: the kernel records them as cancelled with what was already said,
//! no partial frame of them is sent any more, and their reply frame says `cancelled`.

use std::collections::HashMap;
use tokio_util::sync::CancellationToken;

/// One connection's turns in flight, by front end (satellite id): a front's turns
/// share a token, cancelled together. At most one entry per id the connection holds.
#[derive(Default)]
pub(super) struct InFlight {
    fronts: HashMap<String, CancellationToken>,
}

impl InFlight {
    /// The token for a new turn of `front`; with `barge_in` the front's turns still in
    /// flight are cancelled first.
    pub(super) fn next(&mut self, front: &str, barge_in: bool) -> CancellationToken {
        if barge_in {
            self.stop(front);
        }
        self.fronts
            .entry(front.to_string())
            .or_default()
            .child_token()
    }

    /// Cancel `front`'s turns in flight.
    pub(super) fn stop(&mut self, front: &str) {
        if let Some(t) = self.fronts.get_mut(front) {
            t.cancel();
            *t = CancellationToken::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_cancels_the_fronts_turns_and_later_turns_run() {
        let mut f = InFlight::default();
        let a = f.next("kitchen", false);
        let b = f.next("kitchen", false);
        let other = f.next("hall", false);
        f.stop("kitchen");
        assert!(a.is_cancelled() && b.is_cancelled());
        assert!(!other.is_cancelled(), "another satellite's turn goes on");
        let c = f.next("kitchen", false);
        assert!(!c.is_cancelled(), "a turn after the stop runs");
        let d = f.next("kitchen", true);
        assert!(c.is_cancelled(), "barged in on");
        assert!(!d.is_cancelled());
        f.stop("nobody"); // nothing in flight: nothing happens
        assert_eq!(f.fronts.len(), 2);
    }
}
