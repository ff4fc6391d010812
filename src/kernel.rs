//! The kernel: starts the actors and is the one door channels use.
//!
//! `Kernel::start` opens the workspace and config, loads the mode registry, starts the
//! ModeManager and Cron actors on their own arbiter thread, and prepares the Provider and
//! the Agent. `Kernel::handle_turn` runs a turn: slash commands directly, chat through
//! begin-turn → agent → end-turn. The turn runs in its own task, so a caller that goes
//! away (a dropped connection) cannot leave a turn begun but never recorded.

use crate::agent::{Agent, AgentOutcome};
use crate::clock::{SharedClock, SystemClock};
use crate::config::{Config, ConfigError, EnvOverrides};
use crate::cron::Cron;
use crate::modes::core::{ModeError, TurnMeta};
use crate::modes::switch::SwitchAction;
use crate::modes::{ModeCore, ModeManager, ModeRegistry, ModesHandle, Record};
use crate::prompt::{self, TailInfo};
use crate::provider::Provider;
use crate::turn::{Reply, Turn};
use crate::workspace::Workspace;
use actix::Actor;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tracing::{error, info, warn};

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("workspace {path}: {source}")]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("mode state: {0}")]
    Modes(#[from] ModeError),
    #[error("provider: {0}")]
    Provider(#[from] crate::provider::ProviderError),
    #[error("could not start the actor system: {0}")]
    Actors(String),
}

/// Knobs for embedding and tests; `Default` is what `homebot` itself uses.
#[derive(Default)]
pub struct KernelOptions {
    pub clock: Option<SharedClock>,
    /// Use this provider instead of the configured one.
    pub provider: Option<Provider>,
    /// Environment overrides; `None` reads the process environment.
    pub env: Option<EnvOverrides>,
    /// Override `cron.expiry_check_secs`.
    pub expiry_period: Option<Duration>,
    /// Skill folders to use instead of the default search path.
    pub skills_dirs: Option<Vec<PathBuf>>,
}

struct Inner {
    cfg: Config,
    ws: Workspace,
    modes: ModesHandle,
    agent: Agent,
    clock: SharedClock,
    tz: chrono_tz::Tz,
    system: actix::System,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.system.stop();
    }
}

#[derive(Clone)]
pub struct Kernel {
    inner: Arc<Inner>,
}

impl Kernel {
    pub fn start(root: &Path, opts: KernelOptions) -> Result<Self, KernelError> {
        let ws = Workspace::open(root).map_err(|source| KernelError::Workspace {
            path: root.to_path_buf(),
            source,
        })?;
        let cfg = Config::load_or_init(ws.root())?;
        let tz = cfg.timezone();
        let clock = opts.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let dirs = opts
            .skills_dirs
            .unwrap_or_else(|| skill_search_path(&ws, &cfg));
        let registry = Arc::new(ModeRegistry::load(&dirs));
        let env = opts.env.unwrap_or_else(EnvOverrides::from_env);
        let provider = match opts.provider {
            Some(p) => p,
            None => match cfg.resolve_provider(&env) {
                Some(r) => {
                    info!(base_url = %r.base_url, model = %r.model, "provider configured");
                    Provider::from_config(&r, ws.usage_log())?
                }
                None => {
                    info!("no LLM provider configured; chat turns will explain how to set one");
                    Provider::unconfigured()
                }
            },
        };
        let extra = std::fs::read_to_string(ws.system_extra()).ok();
        let base = prompt::base_system_prompt(&cfg.household.name, &registry, extra.as_deref());
        let tools = crate::tools::definitions(&registry.ids());
        let core = ModeCore::open(ws.clone(), registry, tz, clock.now())?;
        let period = opts
            .expiry_period
            .unwrap_or(Duration::from_secs(cfg.cron.expiry_check_secs));
        let (modes, system) = start_actors(core, clock.clone(), period)?;
        let agent = Agent {
            provider,
            base_prompt: base.into(),
            tools,
            max_tool_rounds: cfg.agent.max_tool_rounds,
            normal_history_turns: cfg.agent.normal_history_turns,
            workspace: ws.root().to_path_buf(),
        };
        Ok(Self {
            inner: Arc::new(Inner {
                cfg,
                ws,
                modes,
                agent,
                clock,
                tz,
                system,
            }),
        })
    }

    pub fn workspace(&self) -> &Workspace {
        &self.inner.ws
    }
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }
    pub fn modes(&self) -> &ModesHandle {
        &self.inner.modes
    }

    /// Run one turn to its reply. Never fails: errors become an explanatory reply.
    pub async fn handle_turn(&self, turn: Turn) -> Reply {
        let this = self.clone();
        match tokio::spawn(async move { this.run_turn(turn).await }).await {
            Ok(r) => r,
            Err(e) => {
                error!(error = %e, "turn task failed");
                Reply::failed("抱歉，处理这条消息时出错了。", e.to_string())
            }
        }
    }

    async fn run_turn(&self, turn: Turn) -> Reply {
        let text = turn.text.trim();
        if text.is_empty() {
            return Reply::failed("（收到一条空消息。）", "empty message");
        }
        let max = self.inner.cfg.agent.max_message_chars;
        let len = text.chars().count();
        if len > max {
            return Reply::failed(
                format!("消息太长了（{len} 字），上限是 {max} 字，请分几次说。"),
                format!("message of {len} characters exceeds the limit of {max}"),
            );
        }
        if text.starts_with('/') {
            return self.command(text).await;
        }
        let inner = &self.inner;
        let meta = TurnMeta {
            channel: turn.channel.clone(),
            chat_id: turn.chat_id.clone(),
            speaker_id: turn.speaker_id.clone(),
        };
        let ticket = match inner.modes.begin_turn(meta).await {
            Ok(t) => t,
            Err(e) => return Reply::failed("抱歉，系统正在关闭，请稍后再试。", e.to_string()),
        };
        let member = inner.cfg.member_for(&turn.speaker_id);
        let profile = match (&ticket.mode, member) {
            (None, Some(m)) => std::fs::read_to_string(inner.ws.user_profile(&m.id)).ok(),
            _ => None,
        };
        let tail = TailInfo {
            now: ticket.began_at,
            channel: &turn.channel,
            chat_id: &turn.chat_id,
            speaker_id: &turn.speaker_id,
            speaker_name: member.and_then(|m| m.name.as_deref()),
            channel_hint: None,
            workspace: inner.ws.root(),
        };
        let limit = Duration::from_secs(inner.cfg.agent.turn_timeout_secs);
        let outcome = match tokio::time::timeout(
            limit,
            inner
                .agent
                .run(&ticket, &tail, profile.as_deref(), text, &inner.modes),
        )
        .await
        {
            Ok(o) => o,
            Err(_) => {
                warn!(channel = %turn.channel, chat = %turn.chat_id, secs = limit.as_secs(), "turn watchdog fired");
                AgentOutcome {
                    reply: "抱歉，这次处理时间太长，已经停止了，请再说一次。".into(),
                    error: Some(format!("turn exceeded {} s", limit.as_secs())),
                }
            }
        };
        let record = Record {
            timestamp: ticket
                .began_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
            channel: turn.channel.clone(),
            chat_id: turn.chat_id.clone(),
            speaker_id: turn.speaker_id.clone(),
            user: text.to_string(),
            assistant: outcome.reply.clone(),
            error: outcome.error.clone(),
        };
        match inner.modes.end_turn(ticket.turn_id, record).await {
            Ok(o) => {
                if let Some(sid) = o.recorded_in {
                    tracing::debug!(session = %sid, "turn recorded in mode session");
                }
            }
            Err(e) => error!(error = %e, "turn could not be recorded"),
        }
        Reply {
            text: outcome.reply,
            error: outcome.error,
        }
    }

    /// Slash commands: `/mode enter <id>`, `/mode exit [id]`, `/mode status`, `/status`,
    /// `/help`. They change or show state without the LLM and are not recorded.
    pub async fn command(&self, text: &str) -> Reply {
        let words: Vec<&str> = text.split_whitespace().collect();
        let modes = &self.inner.modes;
        let result = match words.as_slice() {
            ["/mode", "enter", id] => {
                modes
                    .switch(SwitchAction::Enter, Some(id.to_string()), None, None)
                    .await
            }
            ["/mode", "enter"] => Err("用法: /mode enter <mode_id>".to_string()),
            ["/mode", "exit"] => modes.switch(SwitchAction::Exit, None, None, None).await,
            ["/mode", "exit", id] => {
                modes
                    .switch(SwitchAction::Exit, Some(id.to_string()), None, None)
                    .await
            }
            ["/mode"] | ["/mode", "status"] | ["/status"] => Ok(self.status_text().await),
            _ => Ok(HELP.to_string()),
        };
        match result {
            Ok(t) => Reply::ok(t),
            Err(t) => Reply::failed(t.clone(), t),
        }
    }

    pub async fn status_text(&self) -> String {
        let inner = &self.inner;
        let st = match inner.modes.status().await {
            Ok(s) => s,
            Err(e) => return format!("status unavailable: {e}"),
        };
        let a = &st.action;
        let mut out = format!("homebot · {} · {}\n", inner.cfg.household.name, inner.tz);
        if a.active {
            out.push_str(&format!(
                "模式: {} ({}) 活动中{} · 会话 {} · 开始 {} · 到期 {} · 已记录 {} 轮\n",
                a.display_name.as_deref().unwrap_or("?"),
                a.mode_id.as_deref().unwrap_or("?"),
                if st.exiting { "（正在结束）" } else { "" },
                a.session_id.as_deref().unwrap_or("?"),
                a.started_at.as_deref().unwrap_or("?"),
                a.expires_at.as_deref().unwrap_or("?"),
                st.turns_recorded
            ));
        } else {
            out.push_str(&format!(
                "模式: 无活动模式（上次结束原因: {}）\n",
                a.exit_reason.as_deref().unwrap_or("—")
            ));
        }
        let modes: Vec<String> = st
            .modes
            .iter()
            .map(|(id, name)| format!("{name} ({id})"))
            .collect();
        out.push_str(&format!(
            "可用模式: {}\n",
            if modes.is_empty() {
                "—".into()
            } else {
                modes.join(", ")
            }
        ));
        out.push_str(&format!(
            "模型: {}\n",
            inner
                .agent
                .provider
                .model_name()
                .unwrap_or("未配置 (not configured)")
        ));
        out.push_str(&format!("进行中的轮次: {}\n", st.in_flight));
        for w in &st.warnings {
            out.push_str(&format!("警告: {w}\n"));
        }
        out
    }

    /// The current time in the household's zone.
    pub fn now(&self) -> chrono::DateTime<chrono::FixedOffset> {
        self.inner
            .clock
            .now()
            .with_timezone(&self.inner.tz)
            .fixed_offset()
    }

    /// Stop the actor system. In-flight calls to the ModeManager fail after this.
    pub fn shutdown(&self) {
        self.inner.system.stop();
    }
}

const HELP: &str = "命令:\n  /mode enter <mode_id>  进入模式\n  /mode exit             退出当前模式\n  /mode status | /status 查看状态\n  /help                  本帮助";

/// Skill folders, first wins: the workspace's own, configured ones, `$HOMEBOT_SKILLS_DIR`,
/// then the skills shipped with homebot.
pub fn skill_search_path(ws: &Workspace, cfg: &Config) -> Vec<PathBuf> {
    let mut dirs = vec![ws.skills_dir()];
    dirs.extend(cfg.skills.dirs.iter().cloned());
    if let Ok(d) = std::env::var("HOMEBOT_SKILLS_DIR") {
        dirs.push(PathBuf::from(d));
    }
    if let Some(d) = crate::skills::builtin_dir() {
        dirs.push(d);
    }
    dirs
}

/// Start the ModeManager and Cron actors on a dedicated arbiter thread.
fn start_actors(
    core: ModeCore,
    clock: SharedClock,
    period: Duration,
) -> Result<(ModesHandle, actix::System), KernelError> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("homebot-actors".into())
        .spawn(move || {
            let sys = actix::System::new();
            sys.block_on(async move {
                let addr = ModeManager::new(core, clock).start();
                let modes = ModesHandle::new(addr);
                Cron::new(modes.clone(), period).start();
                let _ = tx.send((modes, actix::System::current()));
            });
            if let Err(e) = sys.run() {
                error!(error = %e, "actor system stopped with an error");
            }
        })
        .map_err(|e| KernelError::Actors(e.to_string()))?;
    rx.recv()
        .map_err(|_| KernelError::Actors("the actor thread exited during start".into()))
}
