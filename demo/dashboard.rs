//! The dashboard as the demo leaves it open. The dashboard itself is built on another
//! branch (`[http] listen` / `HOMEBOT_HTTP_LISTEN`); this file is the one place the demo
//! touches it, completed when the branches are merged.

/// Listen on a free loopback port unless the caller chose an address.
pub fn default_listen() {
    if std::env::var_os("HOMEBOT_HTTP_LISTEN").is_none() {
        // set before the kernel starts, which reads it; nothing else of the demo is running
        std::env::set_var("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0");
    }
}

/// Start the dashboard for `kernel` (if the gateway does not already) and return its
/// URL, e.g. `http://127.0.0.1:41234/`.
///
/// MERGE(dashboard): this branch has no dashboard, so this returns `None` and the demo
/// prints "dashboard: not in this build". At merge, return the address the dashboard
/// bound (its `dashboard listening` address, from wherever the dashboard branch exposes
/// it), formatted as a URL; nothing else in the demo changes.
pub async fn start(_kernel: &crate::kernel::Kernel) -> Option<String> {
    None
}
