//! [`Interrupts`]: Ctrl-C as a stream, for a whole chat.

/// Ctrl-C (SIGINT) as a stream, caught for the whole chat: during a turn it cancels the
/// turn; between turns it ends the chat. (At a terminal prompt the line editor reads
/// Ctrl-C itself; this covers the time a turn runs, and input that is not a terminal.)
pub struct Interrupts {
    #[cfg(unix)]
    sigint: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    pub fn new() -> Self {
        Self {
            #[cfg(unix)]
            sigint: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok(),
        }
    }

    /// The next Ctrl-C (never, if it cannot be caught).
    pub async fn next(&mut self) {
        #[cfg(unix)]
        match self.sigint.as_mut() {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await
        }
    }
}

impl Default for Interrupts {
    fn default() -> Self {
        Self::new()
    }
}
