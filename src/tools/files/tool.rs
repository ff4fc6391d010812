//! `read_file`, `list_files`, `write_file`: the tools over [`crate::tools::files`] (which
//! holds the zones and what a file may be). The work blocks on the disk, so it runs on
//! the blocking pool, never on an async worker: a slow disk or a file that would block
//! must not stall other chats.

use super::access::{self as files, ZoneLimits};
use super::zones::FileAccess;
use crate::config::ToolsConfig;
use crate::provider::ToolCall;
use crate::tools::env::ToolEnv;
use crate::tools::result::{ToolError, ToolResult};
use crate::tools::tool::{Permission, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

/// Run `f` (file-tool work that blocks on the disk) on the blocking pool.
async fn blocking(f: impl FnOnce() -> ToolResult + Send + 'static) -> ToolResult {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| ToolResult::err(ToolError::Failed(e)))
}

pub struct ReadFile {
    files: Arc<FileAccess>,
}

impl ReadFile {
    pub fn new(files: Arc<FileAccess>) -> Self {
        Self { files }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    // required for the model; a call without it still reaches the path check, which
    // says "a path is required"
    #[schemars(required)]
    pub path: Option<String>,
}

#[async_trait::async_trait]
impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    type Args = ReadArgs;

    fn description(&self) -> String {
        "Read a UTF-8 text file in the household workspace (an index, a note, a session summary; the paths the [上下文] block names). Paths are relative to the workspace.".into()
    }

    async fn call(&self, env: &ToolEnv, a: ReadArgs, _call: &ToolCall) -> ToolResult {
        let (fa, mode) = (self.files.clone(), env.mode());
        let path = a.path.unwrap_or_default();
        blocking(move || files::read_file_in(&fa, &path, mode.as_deref())).await
    }
}

pub struct ListFiles {
    files: Arc<FileAccess>,
}

impl ListFiles {
    pub fn new(files: Arc<FileAccess>) -> Self {
        Self { files }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// default: the workspace root
    pub path: Option<String>,
}

#[async_trait::async_trait]
impl Tool for ListFiles {
    const NAME: &'static str = "list_files";
    type Args = ListArgs;

    fn description(&self) -> String {
        "List a folder of the household workspace (folders end with /).".into()
    }

    async fn call(&self, env: &ToolEnv, a: ListArgs, _call: &ToolCall) -> ToolResult {
        let (fa, mode) = (self.files.clone(), env.mode());
        let path = a.path.unwrap_or_else(|| ".".into());
        blocking(move || files::list_files_in(&fa, &path, mode.as_deref())).await
    }
}

/// Writes below the writable folders, named in its description (fixed at start), each
/// folder within its quota.
pub struct WriteFile {
    files: Arc<FileAccess>,
    writable: Vec<String>,
    zone: ZoneLimits,
}

impl WriteFile {
    pub fn new(files: Arc<FileAccess>, limits: &ToolsConfig) -> Self {
        Self {
            writable: files.writable_names(),
            files,
            zone: ZoneLimits {
                max_bytes: limits.max_zone_bytes,
                max_files: limits.max_zone_files,
            },
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    pub path: String,
    pub content: String,
}

#[async_trait::async_trait]
impl Tool for WriteFile {
    const NAME: &'static str = "write_file";
    type Args = WriteArgs;
    const PERMISSIONS: &'static [Permission] = &[Permission::WritesFiles];

    fn description(&self) -> String {
        format!(
            "Create or replace a text file in the household workspace, e.g. to keep something the family asked you to save. Allowed only below: {}.",
            self.writable.join(", ")
        )
    }

    /// Where the file went matters later.
    fn keeps_result(&self) -> bool {
        true
    }

    fn bytes_to_write(&self, a: &WriteArgs) -> u64 {
        a.content.len() as u64
    }

    async fn call(&self, env: &ToolEnv, a: WriteArgs, _call: &ToolCall) -> ToolResult {
        let (fa, mode, zone) = (self.files.clone(), env.mode(), self.zone);
        blocking(move || files::write_file_in(&fa, &a.path, &a.content, mode.as_deref(), &zone))
            .await
    }
}
