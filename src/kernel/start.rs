//! Start-up: the workspace and its lock, the configuration, the registry, the provider,
//! the mode state and the actors, the agent and its services, in that order.

use super::actors::{start_actors, CronParts};
use super::*;
use crate::actor::{Group, Lifecycle};
use crate::agent::Agent;
use crate::clock::{SharedClock, SystemClock};
use crate::config::{Config, EnvOverrides};
use crate::cron::CronHandle;
use crate::lock::WorkspaceLock;
use crate::modes::{ModeCore, ModeRegistry, ModesHandle};
use crate::outbound::Doors;
use crate::prompt;
use crate::provider::Provider;
use crate::scheduler::ChatQueues;
use crate::workspace::Workspace;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::{error, info};

/// The workspace, its lock and what is read from it before anything starts.
struct Opened {
    ws: Workspace,
    lock: WorkspaceLock,
    cfg: Config,
    env: EnvOverrides,
    tz: crate::zone::Zone,
    clock: SharedClock,
    registry: Arc<ModeRegistry>,
}

/// The mode state and the actors that own it.
struct Actors {
    modes: ModesHandle,
    cron: CronHandle,
    lifecycle: Lifecycle,
    doors: Arc<Doors>,
    /// Sessions archived without a model summary, for the summarizer (`None`: no runtime).
    archived: Option<tokio::sync::mpsc::UnboundedReceiver<PathBuf>>,
}

impl Kernel {
    pub fn start(root: &Path, mut opts: KernelOptions) -> Result<Self, KernelError> {
        crate::metrics::mark_start();
        let provider = opts.provider.take();
        let (retry, expiry_period) = (opts.reminder_retry, opts.expiry_period);
        let o = open(root, opts)?;
        let provider = make_provider(&o, provider)?;
        let base = {
            let extra = std::fs::read_to_string(o.ws.system_extra()).ok();
            prompt::base_system_prompt(
                &o.cfg.household.name,
                &o.registry,
                extra.as_deref(),
                o.cfg.context.replay,
            )
        };
        let actors = start_actors_for(&o, retry, expiry_period)?;
        let agent = make_agent(&o, &actors, provider, base.into())?;
        Ok(assemble(o, actors, agent))
    }
}

/// The workspace, its lock, the configuration (with the environment applied), the clock
/// and the mode registry.
fn open(root: &Path, opts: KernelOptions) -> Result<Opened, KernelError> {
    let ws = Workspace::open(root).map_err(|source| KernelError::Workspace {
        path: root.to_path_buf(),
        source,
    })?;
    let lock = WorkspaceLock::acquire(ws.root(), opts.lock_wait.unwrap_or(Duration::from_secs(2)))?;
    let mut cfg = Config::load_or_init(ws.root())?;
    let env = opts.env.unwrap_or_else(EnvOverrides::from_env);
    cfg.apply_env(&env)?;
    let tz = cfg.timezone();
    let clock = opts.clock.unwrap_or_else(|| Arc::new(SystemClock));
    let dirs = opts
        .skills_dirs
        .unwrap_or_else(|| skill_search_path(&ws, &cfg));
    let registry = Arc::new(ModeRegistry::load(&dirs, crate::skills::PLUGINS));
    Ok(Opened {
        ws,
        lock,
        cfg,
        env,
        tz,
        clock,
        registry,
    })
}

/// The injected provider, else the configured one, else one that explains how to set it.
fn make_provider(o: &Opened, injected: Option<Provider>) -> Result<Provider, KernelError> {
    let (cfg, tz) = (&o.cfg, o.tz);
    Ok(match injected {
        Some(p) => p.with_timezone(tz).with_prices(&cfg.prices()),
        None => match cfg.resolve_provider(&o.env) {
            Some(r) => {
                info!(base_url = %crate::config::display_url(&r.base_url), model = %r.model, "provider configured");
                let fallbacks = cfg.resolve_fallbacks(&o.env);
                Provider::from_setup(&r, &fallbacks, cfg.breaker(), o.ws.usage_log())?
                    .with_timezone(tz)
                    .with_prices(&cfg.prices())
            }
            None => {
                info!("no LLM provider configured; chat turns will explain how to set one");
                Provider::unconfigured()
            }
        },
    })
}

/// Open the mode state and start the ModeManager and Cron actors on it.
fn start_actors_for(
    o: &Opened,
    retry: Option<crate::cron::RetryPolicy>,
    expiry_period: Option<Duration>,
) -> Result<Actors, KernelError> {
    let mut core = ModeCore::open(
        o.ws.clone(),
        o.registry.clone(),
        o.tz,
        o.clock.now(),
        prompt::frozen_mode_prompt,
    )?;
    core.keep_chat_history(o.cfg.agent.normal_history_turns);
    core.compare_examples_by(Some(crate::memory::topic::topic_words));
    // sessions archived without a model summary get one from the summarizer, a
    // service of its own (it needs a runtime; without one they keep the excerpt
    // summary until the next start that has)
    let runtime = tokio::runtime::Handle::try_current().ok();
    let (archived_tx, archived_rx) = tokio::sync::mpsc::unbounded_channel();
    if runtime.is_some() {
        core.notify_archives(Some(archived_tx));
    }
    let period = expiry_period.unwrap_or(Duration::from_secs(o.cfg.cron.expiry_check_secs));
    let doors = Arc::new(Doors::default());
    let lifecycle = Lifecycle::default();
    let (modes, cron) = start_actors(
        &lifecycle,
        core,
        o.clock.clone(),
        CronParts {
            period,
            tz: o.tz,
            path: o.ws.reminders_file(),
            doors: doors.clone(),
            retry: retry.unwrap_or_default(),
        },
    )?;
    Ok(Actors {
        modes,
        cron,
        lifecycle,
        doors,
        archived: runtime.map(|_| archived_rx),
    })
}

/// The agent: the context budget, the provider, the tools and the services they use.
fn make_agent(
    o: &Opened,
    a: &Actors,
    provider: Provider,
    base_prompt: Arc<str>,
) -> Result<Agent, KernelError> {
    let (cfg, ws, registry) = (&o.cfg, &o.ws, &o.registry);
    let home = Arc::new(crate::tools::home::HomeAccess::new(
        a.doors.clone(),
        cfg,
        ws.root()
            .join(crate::workspace::LOGS_DIR)
            .join(crate::provider::audit::AUDIT_DIR),
    ));
    // the tools hold the services they act through
    let tools = crate::tools::ToolRegistry::new(crate::tools::ToolSetup {
        modes: registry,
        services: crate::tools::ToolServices {
            files: Arc::new(crate::tools::FileAccess::for_registry(ws, registry)),
            modes: Some(a.modes.clone()),
            reminders: Some(a.cron.clone()),
            home: cfg.home_assistant.enabled().then(|| home.clone()),
        },
        limits: cfg.tools.clone(),
    });
    let memory = crate::memory::Memory::open(&ws.memory_db(), cfg.memory.clone(), o.clock.clone())
        .unwrap_or_else(|e| {
            error!(error = %e, "scene memory is unavailable; running without it");
            crate::memory::Memory::disabled(cfg.memory.clone(), o.clock.clone())
        });
    let context = crate::context::Context::from_config(cfg, &o.env, tools.definitions(), registry)?
        .with_tasks(a.lifecycle.tasks().clone());
    Ok(Agent {
        context: Arc::new(context),
        provider,
        base_prompt,
        tools,
        max_tool_rounds: cfg.agent.max_tool_rounds,
        normal_history_turns: cfg.agent.normal_history_turns,
        max_reply_chars: cfg.agent.max_reply_chars,
        tool_limits: cfg.tools.clone(),
        knowledge: Arc::new(crate::knowledge::Knowledge::for_registry(
            ws.root(),
            registry,
        )),
        memory,
        home,
    })
}

/// The kernel from its parts, with the summarizer running when there is a runtime.
fn assemble(o: Opened, a: Actors, agent: Agent) -> Kernel {
    let strategies = crate::strategy::Strategies::open(
        o.ws.root(),
        o.cfg.strategy.clone(),
        o.registry
            .modes()
            .iter()
            .filter_map(|m| Some((m.manifest.id.clone(), m.manifest.strategy?)))
            .collect(),
    );
    let summarizer = crate::summarizer::Summarizer {
        ws: o.ws.clone(),
        registry: o.registry.clone(),
        provider: agent.provider.clone(),
    };
    let queue_cap = o.cfg.agent.max_queued_per_chat;
    let presence = crate::presence::Presence::new(o.clock.clone(), o.tz);
    let kernel = Kernel {
        inner: Arc::new(KernelInner {
            cfg: o.cfg,
            ws: o.ws,
            modes: a.modes,
            cron: a.cron,
            registry: o.registry,
            agent,
            strategies,
            clock: o.clock,
            tz: o.tz,
            lifecycle: a.lifecycle,
            queues: Mutex::new(ChatQueues::new(queue_cap)),
            doors: a.doors,
            presence,
            _lock: o.lock,
        }),
    };
    if let Some(archived) = a.archived {
        let tasks = kernel.tasks();
        let cancel = tasks.token(Group::Service);
        tasks.spawn_in(Group::Service, summarizer.run(archived, cancel));
    }
    kernel
}
