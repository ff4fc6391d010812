//! The supervised state cell: an actor keeps its state in a [`Supervised`] and reaches it
//! only through [`Supervised::run`], so no handler can touch the state unsupervised — a
//! panic in any of them fails that request alone, and the state is reopened (or, for a
//! state that lives only in memory, kept) as [`super::supervisor`] describes.

use super::supervisor::{Supervisor, Unavailable};

/// How a state is read afresh after a panic: from disk (given the old state, to carry
/// over what is not on disk, and what the panic hit), or not at all.
type Reopen<S> = Box<dyn FnMut(&mut S, &str) -> Result<S, Box<dyn std::error::Error>>>;

/// A state and its restart record; the one door to the state is [`Supervised::run`].
pub struct Supervised<S> {
    state: S,
    supervisor: Supervisor,
    /// `None`: the state lives in memory only and is kept after a panic.
    reopen: Option<Reopen<S>>,
}

impl<S> Supervised<S> {
    /// A state that lives in memory only (a channel's connections, its queues): a panic
    /// fails its request and is logged, and the actor goes on with the state it has.
    pub fn in_memory(actor: &'static str, state: S) -> Self {
        Self {
            state,
            supervisor: Supervisor::new(actor),
            reopen: None,
        }
    }

    /// A state that lives in memory only (a channel's connections, its queues), which
    /// `rebuild` makes afresh after a panic — from its defaults, closing what the old one
    /// held open so its peers reconnect — so nothing a panic left half-changed survives.
    pub fn rebuilt_by(
        actor: &'static str,
        state: S,
        mut rebuild: impl FnMut(&mut S, &str) -> S + 'static,
    ) -> Self {
        Self::reopened_by(actor, state, move |old: &mut S, hit: &str| {
            Ok::<_, std::convert::Infallible>(rebuild(old, hit))
        })
    }

    /// A state that `reopen` reads afresh (from disk, as at start-up) after a panic.
    pub fn reopened_by<E: std::error::Error + 'static>(
        actor: &'static str,
        state: S,
        mut reopen: impl FnMut(&mut S, &str) -> Result<S, E> + 'static,
    ) -> Self {
        Self {
            state,
            supervisor: Supervisor::new(actor),
            reopen: Some(Box::new(move |s, hit| Ok(reopen(s, hit)?))),
        }
    }

    /// Run `f` on the state, supervised: a panic in it is caught, this request gets
    /// [`Unavailable`], and the state is reopened (after a capped pause when panics repeat).
    pub fn run<R>(
        &mut self,
        what: &'static str,
        f: impl FnOnce(&mut S) -> R,
    ) -> Result<R, Unavailable> {
        match &mut self.reopen {
            Some(reopen) => self
                .supervisor
                .run(&mut self.state, what, f, |s, hit| reopen(s, hit)),
            None => self.supervisor.run_in_memory(&mut self.state, what, f),
        }
    }

    /// Panics in the current streak.
    pub fn streak(&self) -> u32 {
        self.supervisor.streak()
    }
}

#[cfg(test)]
mod tests {
    use super::super::supervisor::InMemoryOnly;
    use super::*;

    #[test]
    fn a_panicking_handler_fails_its_request_and_the_state_is_reopened() {
        let mut cell = Supervised::reopened_by("test actor", 1u32, |_, hit: &str| {
            assert!(hit.contains("boom (bad state)"), "{hit}");
            Ok::<_, InMemoryOnly>(10)
        });
        assert_eq!(cell.run("add", |s| *s += 1), Ok(()));
        let e = cell
            .run("boom", |_| -> () { panic!("bad state") })
            .unwrap_err();
        assert!(
            matches!(e, Unavailable::Restarted { what: "boom", .. }),
            "{e}"
        );
        assert_eq!(cell.run("read", |s| *s), Ok(10), "reopened from its source");
        assert_eq!(cell.streak(), 1);
    }

    #[test]
    fn a_rebuilt_state_keeps_nothing_a_panic_half_changed() {
        let mut cell = Supervised::rebuilt_by("test actor", vec![1, 2], |old, hit| {
            assert!(hit.contains("boom (x)"), "{hit}");
            assert_eq!(
                *old,
                [1, 2, 3],
                "the rebuild sees the old state, half-changed"
            );
            Vec::new()
        });
        let e = cell
            .run("boom", |v| -> () {
                v.push(3);
                panic!("x")
            })
            .unwrap_err();
        assert!(e.to_string().contains("test actor"), "{e}");
        assert_eq!(cell.run("read", |v| v.clone()), Ok(vec![]));
    }

    #[test]
    fn an_in_memory_state_survives_a_panic_as_it_was() {
        let mut cell = Supervised::in_memory("test actor", vec![1, 2]);
        let e = cell
            .run("boom", |v| -> () {
                v.push(3);
                panic!("x")
            })
            .unwrap_err();
        assert!(e.to_string().contains("test actor"), "{e}");
        assert_eq!(cell.run("read", |v| v.clone()), Ok(vec![1, 2, 3]));
    }
}
