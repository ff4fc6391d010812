//! Start-up: the workspace and its lock, the configuration, the registry, the provider,
//! the mode state and the actors, the agent and its services, in that order.

use super::*;

impl Kernel {
    pub fn start(root: &Path, opts: KernelOptions) -> Result<Self, KernelError> {
        crate::metrics::mark_start();
        let ws = Workspace::open(root).map_err(|source| KernelError::Workspace {
            path: root.to_path_buf(),
            source,
        })?;
        let lock =
            WorkspaceLock::acquire(ws.root(), opts.lock_wait.unwrap_or(Duration::from_secs(2)))?;
        let mut cfg = Config::load_or_init(ws.root())?;
        let env = opts.env.unwrap_or_else(EnvOverrides::from_env);
        cfg.apply_env(&env)?;
        let tz = cfg.timezone();
        let clock = opts.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let dirs = opts
            .skills_dirs
            .unwrap_or_else(|| skill_search_path(&ws, &cfg));
        let registry = Arc::new(ModeRegistry::load(&dirs, crate::skills::PLUGINS));
        let provider = match opts.provider {
            Some(p) => p.with_timezone(tz).with_prices(&cfg.prices()),
            None => match cfg.resolve_provider(&env) {
                Some(r) => {
                    info!(base_url = %crate::config::display_url(&r.base_url), model = %r.model, "provider configured");
                    let fallbacks = cfg.resolve_fallbacks(&env);
                    Provider::from_setup(&r, &fallbacks, cfg.breaker(), ws.usage_log())?
                        .with_timezone(tz)
                        .with_prices(&cfg.prices())
                }
                None => {
                    info!("no LLM provider configured; chat turns will explain how to set one");
                    Provider::unconfigured()
                }
            },
        };
        let extra = std::fs::read_to_string(ws.system_extra()).ok();
        let base = prompt::base_system_prompt(
            &cfg.household.name,
            &registry,
            extra.as_deref(),
            cfg.context.replay,
        );
        let files = Arc::new(crate::tools::FileAccess::for_registry(&ws, &registry));
        let tools = crate::tools::ToolRegistry::new(&crate::tools::ToolSetup {
            modes: &registry,
            writable: &files.writable_names(),
            home: cfg.home_assistant.enabled(),
        });
        let mut core = ModeCore::open(
            ws.clone(),
            registry.clone(),
            tz,
            clock.now(),
            prompt::frozen_mode_prompt,
        )?;
        core.keep_chat_history(cfg.agent.normal_history_turns);
        // sessions archived without a model summary get one from the summarizer, a
        // service of its own (it needs a runtime; without one they keep the excerpt
        // summary until the next start that has)
        let runtime = tokio::runtime::Handle::try_current().ok();
        let (archived_tx, archived_rx) = tokio::sync::mpsc::unbounded_channel();
        if runtime.is_some() {
            core.notify_archives(Some(archived_tx));
        }
        let period = opts
            .expiry_period
            .unwrap_or(Duration::from_secs(cfg.cron.expiry_check_secs));
        let doors = Arc::new(Doors::default());
        let lifecycle = Lifecycle::default();
        let (modes, cron) = start_actors(
            &lifecycle,
            core,
            clock.clone(),
            CronParts {
                period,
                tz,
                path: ws.reminders_file(),
                doors: doors.clone(),
                retry: opts.reminder_retry.unwrap_or_default(),
            },
        )?;
        let memory =
            crate::memory::Memory::open(&ws.memory_db(), cfg.memory.clone(), clock.clone())
                .unwrap_or_else(|e| {
                    error!(error = %e, "scene memory is unavailable; running without it");
                    crate::memory::Memory::disabled(cfg.memory.clone(), clock.clone())
                });
        let context =
            crate::context::Context::from_config(&cfg, &env, tools.definitions(), &registry)?
                .with_tasks(lifecycle.tasks().clone());
        let agent = Agent {
            context: Arc::new(context),
            provider,
            base_prompt: base.into(),
            tools,
            max_tool_rounds: cfg.agent.max_tool_rounds,
            normal_history_turns: cfg.agent.normal_history_turns,
            files,
            max_reply_chars: cfg.agent.max_reply_chars,
            tool_limits: cfg.tools.clone(),
            reminders: cron.clone(),
            knowledge: Arc::new(crate::knowledge::Knowledge::for_registry(
                ws.root(),
                &registry,
            )),
            memory,
            home: Arc::new(crate::tools::home::HomeAccess::new(
                doors.clone(),
                &cfg,
                ws.root()
                    .join(crate::workspace::LOGS_DIR)
                    .join(crate::provider::audit::AUDIT_DIR),
            )),
        };
        let strategies = crate::strategy::Strategies::open(
            ws.root(),
            cfg.strategy.clone(),
            registry
                .modes()
                .iter()
                .filter_map(|m| Some((m.manifest.id.clone(), m.manifest.strategy?)))
                .collect(),
        );
        let queue_cap = cfg.agent.max_queued_per_chat;
        let summarizer = crate::summarizer::Summarizer {
            ws: ws.clone(),
            registry: registry.clone(),
            provider: agent.provider.clone(),
        };
        let presence = crate::presence::Presence::new(clock.clone(), tz);
        let kernel = Self {
            inner: Arc::new(KernelInner {
                cfg,
                ws,
                modes,
                cron,
                registry,
                agent,
                strategies,
                clock,
                tz,
                lifecycle,
                queues: Mutex::new(ChatQueues::new(queue_cap)),
                turns: TaskTracker::new(),
                services: TaskTracker::new(),
                cancel: CancellationToken::new(),
                stragglers: CancellationToken::new(),
                doors,
                presence,
                _lock: lock,
            }),
        };
        if runtime.is_some() {
            let cancel = kernel.inner.cancel.clone();
            kernel.spawn_service(summarizer.run(archived_rx, cancel));
        }
        Ok(kernel)
    }
}
