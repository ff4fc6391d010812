//! `set_strategy` from the strategy side: a call the tool accepted (the user's own words
//! asked for it) changes the household's strategy through the same path as `/strategy
//! NAME`, and the journal keeps who asked, where and in which words.

use super::journal::{self, clip, Entry};
use super::Strategies;
use crate::turn::Turn;

/// The turn's [`crate::tools::set_strategy::Setter`]: handed to the tools by
/// [`super::flows`] on every request it prepares.
pub(super) struct SpokenSetter {
    pub(super) st: Strategies,
    /// (mode id, session id) the turn runs in.
    pub(super) mode: Option<(String, String)>,
    pub(super) channel: String,
    pub(super) chat_id: String,
    pub(super) speaker_id: String,
    pub(super) words: String,
    pub(super) stamp: String,
}

impl SpokenSetter {
    pub(super) fn new(
        st: &Strategies,
        mode: Option<(&str, &str)>,
        turn: &Turn,
        words: &str,
        stamp: String,
    ) -> Self {
        Self {
            st: st.clone(),
            mode: mode.map(|(m, s)| (m.to_string(), s.to_string())),
            channel: turn.channel.clone(),
            chat_id: turn.chat_id.clone(),
            speaker_id: turn.speaker_id.clone(),
            words: words.to_string(),
            stamp,
        }
    }
}

#[async_trait::async_trait]
impl crate::tools::set_strategy::Setter for SpokenSetter {
    async fn set(&self, name: &str) -> Result<String, crate::tools::set_strategy::SetError> {
        let mode = self.mode.as_ref().map(|(m, s)| (m.as_str(), s.as_str()));
        let done = self.st.command(name, true, mode).await?;
        let e = Entry {
            timestamp: self.stamp.clone(),
            flow: "strategy",
            stage: "set-by-voice",
            channel: &self.channel,
            chat_id: &self.chat_id,
            speaker_id: &self.speaker_id,
            session_id: mode.map(|(_, s)| s),
            text: clip(&self.words),
            detail: Some(serde_json::json!({ "name": name })),
        };
        journal::append(self.st.workspace(), &e).await;
        Ok(done)
    }
}
