//! The dashboard as the demo leaves it open: on a free loopback port (the demo's config;
//! `HOMEBOT_HTTP_LISTEN` picks another address), with the demo's own fresh owner token in
//! its link so the page's buttons (exit the mode, cancel a reminder) work.

/// Start the dashboard for `kernel` and return its URL with the owner token, e.g.
/// `http://127.0.0.1:41234/?token=…` (the page trades it for a cookie at once).
pub async fn start(kernel: &crate::kernel::Kernel, token: &str) -> Option<String> {
    match crate::dashboard::start(kernel, None).await {
        Ok(Some(addr)) => Some(format!("http://{addr}/?token={token}")),
        Ok(None) => None,
        Err(e) => {
            eprintln!("dashboard: {e}");
            None
        }
    }
}
