//! Failpoints for crash tests. With `HOMEBOT_FAILPOINT=<name>` set, the process stops
//! dead at that point — it prints `homebot: failpoint <name> reached` on stderr and then
//! blocks forever, so a test can SIGKILL it at exactly that step. Unset (always, in
//! normal use), a failpoint is one comparison against an empty string.
//!
//! Names: `archive.after_marker`, `archive.after_summary`, `archive.after_index`,
//! `append.partial` (half a record written and fsynced, then stop).

use std::io::Write;
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
