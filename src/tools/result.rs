//! What a tool call returns to the model, and the errors the registry itself answers
//! with (before or around a tool: oversized or invalid arguments, an unknown name, the
//! turn's write budget, a tool that panicked). The texts are what the model reads: each
//! says what happened and what to do instead.

use thiserror::Error;

/// What a tool call did: the text returned to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub content: String,
    pub is_error: bool,
}

impl ToolResult {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
        }
    }
    /// An error result; its text is the error's `Display` (it starts `error:` or
    /// `refused:`).
    pub fn err(content: impl ToString) -> Self {
        Self {
            content: content.to_string(),
            is_error: true,
        }
    }
}

/// Why the registry answered a call without (or after) running its tool.
#[derive(Debug, Error)]
pub enum ToolError {
    #[error("error: the arguments of this {name} call are {len} bytes; the limit is {max}. It was not run; split the work into smaller calls.")]
    ArgumentsTooLong {
        name: String,
        len: usize,
        max: usize,
    },
    #[error(
        "error: invalid arguments for {name}: {source}. Call it again with valid JSON arguments."
    )]
    InvalidArguments {
        name: String,
        source: serde_json::Error,
    },
    #[error("error: there is no tool named {name:?}; available: {available}")]
    NoSuchTool { name: String, available: String },
    #[error("error: not written: this turn has written {so_far} bytes and {len} more would pass the limit of {budget} bytes per turn; finish the answer, the rest can be saved in a later message")]
    WriteBudget { so_far: u64, len: u64, budget: u64 },
    #[error("refused: this sender may not use {name} here (it needs {missing:?}, which the channel does not grant them)")]
    NotPermitted {
        name: &'static str,
        missing: super::permission::Permission,
    },
    #[error("error: the tool failed: {0}")]
    Failed(#[from] tokio::task::JoinError),
}
