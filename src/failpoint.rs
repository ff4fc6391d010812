//! Failpoints for crash tests. With `HOMEBOT_FAILPOINT=<name>` set, the process stops
//! dead at that point — it prints `homebot: failpoint <name> reached` on stderr and then
//! blocks forever, so a test can SIGKILL it at exactly that step. Unset (always, in
//! normal use), a failpoint is one comparison against an empty string.
//!
//! Names: `archive.after_marker`, `archive.after_summary`, `archive.after_index`,
//! `append.partial` (half a record written and fsynced, then stop); and
//! `modes.begin_turn.panic` (the ModeManager panics once while beginning a turn, for the
//! supervision test).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

fn configured() -> &'static str {
    static POINT: OnceLock<String> = OnceLock::new();
    POINT.get_or_init(|| std::env::var("HOMEBOT_FAILPOINT").unwrap_or_default())
}

pub fn active(name: &str) -> bool {
    let c = configured();
    !c.is_empty() && c == name
}

/// Stop here for good if `name` is the configured failpoint.
pub fn hit(name: &str) {
    if active(name) {
        let _ = writeln!(std::io::stderr(), "homebot: failpoint {name} reached");
        let _ = std::io::stderr().flush();
        loop {
            std::thread::park();
        }
    }
}

/// Panic here, once per process, if `<name>.panic` is the configured failpoint.
pub fn panic_once(name: &str) {
    static FIRED: AtomicBool = AtomicBool::new(false);
    let c = configured();
    if c.strip_suffix(".panic") == Some(name) && !FIRED.swap(true, Ordering::SeqCst) {
        panic!("failpoint {name}.panic");
    }
}
