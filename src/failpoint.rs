//! Failpoints for crash and full-disk tests. With `HOMEBOT_FAILPOINT=<name>` set, the
//! named point misbehaves; unset (always, in normal use), a failpoint is one comparison
//! against an empty string. `HOMEBOT_FAILPOINT=<name>@<path>` arms it only while `<path>`
//! exists, so a test can "free the disk" again by removing a file.
//!
//! Stop points ([`hit`]): the process prints `homebot: failpoint <name> reached` on stderr
//! and blocks forever, so a test can SIGKILL it at exactly that step —
//! `archive.after_marker`, `archive.after_summary`, `archive.after_index`,
//! `session.before_rename` (a new session folder is complete under its temporary name),
//! `submode.after_paused` (a sub-mode's `paused.json` written, `action.json` not yet),
//! `submode.after_parent_marker` (a paused parent's `exit.json` written, its sub-mode's
//! not yet), `archive.after_conclusion` (a sub-mode's conclusion appended to its parent),
//! `archive.after_resume` (`action.json` names the parent again, `paused.json` still there),
//! `append.partial` (half a record written and fsynced, then stop),
//! `reminder.before_marked` (a reminder delivered, not yet marked fired).
//!
//! Error points ([`enospc`]): the operation fails with ENOSPC as on a full disk —
//! `append.enospc` (every JSONL append and the space probe), `write.enospc` (every atomic
//! replace and every new private file).
//!
//! `modes.begin_turn.panic`: the ModeManager panics once while beginning a turn, for the
//! supervision test; `ha.registries.panic`: the Home Assistant actor panics once while
//! applying the registries (the rooms replaced, the exposed list and the view not yet),
//! for its supervision test.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The configured failpoint: its name, and the file that arms it (if any).
fn configured() -> (&'static str, Option<&'static Path>) {
    static POINT: OnceLock<String> = OnceLock::new();
    let c = POINT.get_or_init(|| std::env::var("HOMEBOT_FAILPOINT").unwrap_or_default());
    match c.split_once('@') {
        Some((name, flag)) => (name, Some(Path::new(flag))),
        None => (c.as_str(), None),
    }
}

pub fn active(name: &str) -> bool {
    let (c, flag) = configured();
    !c.is_empty() && c == name && flag.is_none_or(Path::exists)
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

/// The error a full disk gives, if `name` is the configured (and armed) failpoint.
pub fn enospc(name: &str) -> std::io::Result<()> {
    if active(name) {
        // ENOSPC is 28 on Linux and the BSDs alike
        return Err(std::io::Error::from_raw_os_error(28));
    }
    Ok(())
}

/// Panic here, once per process, if `<name>.panic` is the configured failpoint.
pub fn panic_once(name: &str) {
    static FIRED: AtomicBool = AtomicBool::new(false);
    let (c, flag) = configured();
    let armed = flag.is_none_or(Path::exists);
    if armed && c.strip_suffix(".panic") == Some(name) && !FIRED.swap(true, Ordering::SeqCst) {
        panic!("failpoint {name}.panic");
    }
}
