//! Model-written summaries of sessions that ended without one (expiry after midnight,
//! recovery at start, an exit with no summary). The archive itself never waits for the
//! LLM: the ModeManager writes the mechanical `summary.md` (a header and an excerpt of
//! the dialogue) and a `summary.pending` job, and tells this service. The service, a
//! task of its own, asks the provider for a summary, rewrites `summary.md` with it,
//! lets the mode's plugin refresh its copy, and only then removes the job.
//!
//! Crash-safe and resumable: every write is atomic and the job goes last, so a crash
//! anywhere leaves either the old summary with its job (done again at the next start)
//! or the new summary. At start every `summary.pending` under the sessions is picked
//! up. With the provider down the mechanical summary stands: the job is kept for the
//! next start and dropped after [`MAX_ATTEMPTS`] failures.

use crate::fsutil;
use crate::modes::dirs::read_dirs;
use crate::modes::plugin::PluginContext;
use crate::modes::session::{
    self, load_records, SummaryJob, CONVERSATION_FILE, SUMMARY_FILE, SUMMARY_PENDING_FILE,
};
use crate::modes::ModeRegistry;
use crate::provider::{purpose, CallMeta, ChatRequest, Message, Provider};
use crate::workspace::Workspace;
use std::path::{Path, PathBuf};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// Failed attempts after which the mechanical summary is kept for good.
pub const MAX_ATTEMPTS: u32 = 3;
/// The most of a session's dialogue sent to be summarized (characters, newest kept).
const MAX_TRANSCRIPT_CHARS: usize = 24_000;
/// The longest summary kept (characters).
const MAX_SUMMARY_CHARS: usize = 2_000;

const INSTRUCTION: &str = "你是家庭助手 homebot 的会话总结员。下面是一次运行模式会话的完整对话记录（可能只保留了后半段）。";
/// What a summary holds when the mode says nothing of its own
/// (`context.summary_instructions`).
pub const DEFAULT_FOCUS: &str =
    "做了什么、定下了什么（人数、时间、偏好等）、进行到哪一步、还有什么没做完。";
const OUTPUT_RULE: &str = "只写总结本身，不要寒暄，不要编造记录里没有的内容。";

/// The summarizer's system message for a mode whose own focus is `focus`.
pub fn instruction(focus: Option<&str>) -> String {
    format!(
        "{INSTRUCTION}\n请用中文写一段不超过 300 字的总结：{}\n{OUTPUT_RULE}",
        focus.unwrap_or(DEFAULT_FOCUS)
    )
}

/// Everything the service needs.
pub struct Summarizer {
    pub ws: Workspace,
    pub registry: std::sync::Arc<ModeRegistry>,
    pub provider: Provider,
}

impl Summarizer {
    /// Run until `cancel`: first every job left from before, then each newly archived
    /// session as the ModeManager reports it.
    pub async fn run(self, mut archived: UnboundedReceiver<PathBuf>, cancel: CancellationToken) {
        for dir in pending_jobs(&self.ws) {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = self.summarize(&dir) => {}
            }
        }
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                next = archived.recv() => match next {
                    Some(dir) => tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = self.summarize(&dir) => {}
                    },
                    None => return,
                },
            }
        }
    }

    /// Do one job (if it is still there). Never fails: what goes wrong is logged and
    /// the job kept or dropped.
    pub async fn summarize(&self, dir: &Path) {
        if !self.provider.is_configured() {
            return; // kept: summarized once a provider is configured
        }
        let job_path = dir.join(SUMMARY_PENDING_FILE);
        if !dir.join(SUMMARY_FILE).exists() {
            // the archive has not finished (it resumes at the next start, and the job
            // is found then): replacing a summary that is not there yet would race it
            return;
        }
        let Some(mut job) = read_job(&job_path) else {
            return;
        };
        let records = {
            let path = dir.join(CONVERSATION_FILE);
            match tokio::task::spawn_blocking(move || load_records(&path)).await {
                Ok(Ok(l)) => l.records,
                _ => Vec::new(),
            }
        };
        if records.is_empty() {
            remove_job(&job_path);
            return;
        }
        let focus = self
            .registry
            .get(&job.mode_id)
            .and_then(|m| m.manifest.context.as_ref())
            .and_then(|c| c.summary_instructions.clone());
        let messages = [
            Message::System {
                content: instruction(focus.as_deref().map(str::trim)),
            },
            Message::User {
                content: transcript(&records),
            },
        ];
        let meta = CallMeta {
            channel: "system".into(),
            chat_id: job.session_id.clone(),
            session_id: Some(job.session_id.clone()),
            session_dir: Some(dir.to_path_buf()),
            purpose: purpose::SUMMARY,
            shape: None,

            turn: None,
        };
        let req = ChatRequest {
            messages: &messages,
            tools: &[],
            depth: None,
        };
        let answer = self
            .provider
            .complete(&req, &meta)
            .await
            .map(|r| r.content.unwrap_or_default().trim().to_string());
        match answer {
            Ok(text) if !text.is_empty() => {
                let text = crate::agent::cap_reply(text, MAX_SUMMARY_CHARS);
                // atomic writes fsync: off the async workers
                let (ws, registry, d, j) = (
                    self.ws.clone(),
                    self.registry.clone(),
                    dir.to_path_buf(),
                    job.clone(),
                );
                let written = tokio::task::spawn_blocking(move || {
                    write_summary(&ws, &registry, &d, &j, &records, &text)
                })
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
                match written {
                    Ok(()) => {
                        remove_job(&job_path);
                        info!(session = %job.session_id, "session summary written by the model");
                    }
                    Err(e) => {
                        // counted like a failed call: a summary that cannot be written
                        // must not cost a model call at every start forever
                        self.count_failure(&job_path, &mut job, &e.to_string());
                    }
                }
            }
            other => {
                let why = match other {
                    Err(e) => e.to_string(),
                    Ok(_) => "the model returned an empty summary".into(),
                };
                self.count_failure(&job_path, &mut job, &why);
            }
        }
    }

    /// One more failed attempt: the job is kept for the next start, or dropped after
    /// [`MAX_ATTEMPTS`] (the excerpt summary stays).
    fn count_failure(&self, job_path: &Path, job: &mut SummaryJob, why: &str) {
        job.attempts += 1;
        if job.attempts >= MAX_ATTEMPTS {
            warn!(session = %job.session_id, error = %why, "no model summary after {MAX_ATTEMPTS} attempts; the excerpt summary stays");
            remove_job(job_path);
        } else {
            warn!(session = %job.session_id, error = %why, attempt = job.attempts, "cannot summarize the session now; the excerpt summary stands and it is tried again at the next start");
            let json = serde_json::to_vec_pretty(&job).expect("a summary job serializes");
            if let Err(e) = fsutil::write_atomic(job_path, &json) {
                warn!(path = %job_path.display(), error = %e, "cannot update the summary job");
            }
        }
    }
}

/// `summary.md` again with the model's summary, and the plugin's copy.
fn write_summary(
    ws: &Workspace,
    registry: &ModeRegistry,
    dir: &Path,
    job: &SummaryJob,
    records: &[session::Record],
    text: &str,
) -> std::io::Result<()> {
    let md = session::render_summary(&session::SummaryInput {
        display_name: &job.display_name,
        mode_id: &job.mode_id,
        session_id: &job.session_id,
        started_at: &job.started_at,
        ended_at: &job.ended_at,
        exit_reason: &job.exit_reason,
        llm_summary: Some(text),
        records,
    });
    fsutil::write_atomic(&dir.join(SUMMARY_FILE), md.as_bytes())?;
    if let Some(m) = registry.get(&job.mode_id) {
        let ctx = PluginContext {
            workspace: ws,
            manifest: &m.manifest,
            skill_dir: &m.skill_dir,
            skill_name: &m.skill_name,
        };
        m.plugin.summary_updated(&ctx, &job.session_id, &md, text)?;
    }
    Ok(())
}

#[cfg(test)]
#[test]
fn the_summary_instruction_is_generic_unless_the_mode_words_it() {
    let generic = instruction(None);
    assert!(
        generic.contains(DEFAULT_FOCUS) && !generic.contains('菜'),
        "{generic}"
    );
    let own = instruction(Some("写下错题"));
    assert!(own.contains("写下错题") && !own.contains(DEFAULT_FOCUS));
    assert!(own.starts_with(INSTRUCTION) && own.ends_with(OUTPUT_RULE));
}

/// Session folders with a job, oldest first.
pub fn pending_jobs(ws: &Workspace) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = read_dirs(&ws.sessions_root())
        .iter()
        .flat_map(|m| read_dirs(m))
        .filter(|d| d.join(SUMMARY_PENDING_FILE).is_file())
        .collect();
    out.sort();
    out
}

fn read_job(path: &Path) -> Option<SummaryJob> {
    let bytes = std::fs::read(path).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(j) => Some(j),
        Err(e) => {
            warn!(path = %path.display(), error = %e, "unreadable summary job; the excerpt summary stays");
            remove_job(path);
            None
        }
    }
}

fn remove_job(path: &Path) {
    if let Err(e) = std::fs::remove_file(path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            warn!(path = %path.display(), error = %e, "cannot remove the summary job");
        }
    }
}

/// The dialogue as the summarizer reads it: who said what, on which channel, and what
/// their tools returned that matters later (a reminder's time); the newest
/// [`MAX_TRANSCRIPT_CHARS`] characters when it is longer.
fn transcript(records: &[session::Record]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut used = 0;
    for r in records.iter().rev() {
        if r.error.is_some() {
            continue;
        }
        let mut line = format!(
            "[{} {}@{}] 用户: {}\n助手: {}\n",
            r.timestamp.get(11..16).unwrap_or(&r.timestamp),
            r.speaker_id,
            r.channel,
            r.user.trim(),
            r.assistant.trim()
        );
        for kept in r.kept_lines() {
            line.push_str(&format!("工具结果: {kept}\n"));
        }
        used += line.chars().count();
        if used > MAX_TRANSCRIPT_CHARS && !lines.is_empty() {
            lines.push("（更早的对话略）\n".into());
            break;
        }
        lines.push(line);
    }
    lines.reverse();
    lines.concat()
}
