//! What a backend is to the provider, and what a caller hands it besides the request: the
//! [`ChatModel`] each dialect implements, the [`DeltaSink`] streamed text goes to, and the
//! [`CallMeta`] the usage log, the audit trail and the token calibration read.

use super::error::ProviderError;
use super::types::{ChatRequest, ChatResponse, PromptShape};
use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// Where a streamed answer goes as it arrives: its text, and the two things a listener
/// must know to use that text before the answer is complete — that the answer went on to
/// call a tool, and that a failed attempt is being retried (its text starts over).
pub trait DeltaSink: Send + Sync {
    /// A piece of the answer's text.
    fn text(&self, piece: &str);
    /// The answer has begun a tool call.
    fn tool_call(&self) {}
    /// The attempt failed and another one follows: the text so far is void.
    fn retry(&self) {}
}

/// Text only, as it comes.
impl DeltaSink for UnboundedSender<String> {
    fn text(&self, piece: &str) {
        let _ = self.send(piece.to_string());
    }
}

/// One LLM backend.
#[async_trait]
pub trait ChatModel: Send + Sync {
    async fn complete(&self, req: &ChatRequest<'_>) -> Result<ChatResponse, ProviderError>;
    /// The same, handing text deltas to `deltas` as they arrive when the model streams
    /// (a model that does not stream answers whole and sends none).
    async fn complete_with(
        &self,
        req: &ChatRequest<'_>,
        deltas: Option<&dyn DeltaSink>,
    ) -> Result<ChatResponse, ProviderError> {
        let _ = deltas;
        self.complete(req).await
    }
    /// The model asked for, as the usage log and `status` should name it.
    fn model_name(&self) -> &str;
}

/// The token calibration hand-off: given the prompt tokens an answer reports, the caller
/// learns how far its estimate was off. The provider calls it only when the primary
/// endpoint answered — a fallback's tokenizer counts differently, and its counts would
/// skew the primary's calibration.
pub type Calibrate<'a> = &'a (dyn Fn(u64) + Send + Sync);

/// Who a call is for and what it was made of, for the usage log and the audit trail.
#[derive(Debug, Clone, Default)]
pub struct CallMeta {
    pub channel: String,
    pub chat_id: String,
    pub session_id: Option<String>,
    /// The mode session's folder (its `audit.jsonl` lives there); `None` outside a mode.
    pub session_dir: Option<PathBuf>,
    /// Why the call is made: `turn` (empty means the same), a strategy's step (`plan`,
    /// `reflect-review`, …), or one of the background [`purpose`]s.
    pub purpose: &'static str,
    /// The request's blocks, history range and prefix hash, when the builder knows them.
    pub shape: Option<Arc<PromptShape>>,
    /// The turn the call is made for (`None`: background work), so the audit trail can
    /// say what one turn did (`/why`).
    pub turn: Option<super::types::TurnTag>,
}

/// The purposes of the calls nobody waits on: they yield their concurrency slot to turns
/// (`slots::Priority::of`). Every other purpose is a turn's.
pub mod purpose {
    /// A chat's history folded into a summary while the chat is quiet.
    pub const COMPACTION: &str = "compaction";
    /// A mode session's summary, written after it ended.
    pub const SUMMARY: &str = "summary";
}
