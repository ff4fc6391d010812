//! Waiting in tests: the one place that polls. A test never sleeps a fixed time for
//! something to happen; it asks until it holds, and fails with what it waited for once
//! the deadline has passed. Deadlines are real time (`std::time::Instant`), so a paused
//! tokio clock neither stretches nor cuts them.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

/// Between two probes: short, since most conditions hold within milliseconds.
const FIRST_PAUSE: Duration = Duration::from_millis(5);
/// The pause doubles up to this (a probe may start a process or make a request).
const LONGEST_PAUSE: Duration = Duration::from_millis(100);

/// Ask `probe` until it answers `Ok`; `Err(seen)` is "not yet", and the last `seen` is
/// in the failure, with `what`, once `deadline` has passed.
pub async fn eventually_async<T, D, F>(
    what: &str,
    deadline: Duration,
    mut probe: impl FnMut() -> F,
) -> T
where
    D: Display,
    F: Future<Output = Result<T, D>>,
{
    let end = Instant::now() + deadline;
    let mut pause = FIRST_PAUSE;
    loop {
        match probe().await {
            Ok(v) => return v,
            Err(seen) => assert!(
                Instant::now() < end,
                "{what}: not so after {deadline:?}; last seen: {seen}"
            ),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// Poll `cond` until it holds, failing with `what` after `deadline`.
pub async fn eventually(what: &str, deadline: Duration, mut cond: impl FnMut() -> bool) {
    eventually_some(what, deadline, || cond().then_some(())).await
}

/// Poll `probe` until it gives a value, failing with `what` after `deadline`.
pub async fn eventually_some<T>(
    what: &str,
    deadline: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> T {
    eventually_async(what, deadline, || {
        let got = probe().ok_or("not yet");
        async move { got }
    })
    .await
}

/// [`eventually`] with a 30 s deadline, for a condition the test names by its place.
#[track_caller]
pub fn until(cond: impl FnMut() -> bool) -> impl Future<Output = ()> {
    let at = std::panic::Location::caller().to_string();
    async move {
        eventually(
            &format!("the condition at {at}"),
            Duration::from_secs(30),
            cond,
        )
        .await
    }
}
