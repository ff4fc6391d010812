//! [`ToolRegistry`]: the tools offered to the model, built once at start in a fixed
//! order. The definitions are made once, when it is built: their order and bytes are part
//! of the stable prompt prefix (tests/it/tool_list.rs pins them), and switching modes or
//! strategies never changes them.
//!
//! Adding a tool: write it as a [`Tool`] (a file, or a folder with its rules, in
//! `src/tools/`) holding the services it acts through (say whether its result matters
//! to later turns: `Tool::keeps_result`), then `add` it in
//! [`ToolRegistry::new`] — at the end of the list, so the tools before it keep their
//! bytes. A tool offered only while its feature is configured is added when its service
//! is in [`ToolServices`] (give `ToolServices` the field it needs): unconfigured, it is
//! neither in the list the model sees nor callable.

use super::choice::tool::AskUserChoice;
use super::env::ToolEnv;
use super::files::tool::{ListFiles, ReadFile, WriteFile};
use super::home::tools::{HomeControl, HomeState};
use super::memory::tool::{MemoryCommit, MemorySearch};
use super::reminders::{CancelReminder, ListReminders, SetReminder};
use super::result::{ToolError, ToolResult};
use super::services::ToolServices;
use super::set_strategy::tool::SetStrategy;
use super::switch_mode::SwitchMode;
use super::tool::{Offered, Permission, Tool};
use crate::config::ToolsConfig;
use crate::modes::ModeRegistry;
use crate::provider::{ToolCall, ToolDef};

/// What the tools are built from at start.
pub struct ToolSetup<'a> {
    /// The modes `switch_mode` names.
    pub modes: &'a ModeRegistry,
    /// What the tools act through; with `home`, `home_state` and `home_control` are
    /// offered.
    pub services: ToolServices,
    /// The caps of `[tools]`.
    pub limits: ToolsConfig,
}

/// The tools offered to the model, in their fixed order.
pub struct ToolRegistry {
    tools: Vec<Box<dyn Offered>>,
    definitions: Vec<ToolDef>,
    /// The caps of `[tools]` every call runs within.
    limits: ToolsConfig,
}

impl ToolRegistry {
    /// The household's tools, in the order the model sees them.
    pub fn new(setup: ToolSetup<'_>) -> Self {
        let ToolServices {
            files,
            modes,
            reminders,
            home,
        } = setup.services;
        let mut r = Self::empty();
        r.limits = setup.limits;
        r.add(SwitchMode::new(setup.modes, modes));
        r.add(SetStrategy);
        r.add(ReadFile::new(files.clone()));
        r.add(ListFiles::new(files.clone()));
        r.add(WriteFile::new(files, &r.limits));
        r.add(SetReminder::new(reminders.clone()));
        r.add(ListReminders::new(reminders.clone()));
        r.add(CancelReminder::new(reminders));
        r.add(MemoryCommit);
        r.add(MemorySearch);
        // offered in every strategy, so switching strategy never changes the tools
        r.add(AskUserChoice);
        if let Some(home) = home {
            r.add(HomeState::new(home.clone()));
            r.add(HomeControl::new(home));
        }
        r
    }

    /// No tools at all.
    pub fn empty() -> Self {
        Self {
            tools: Vec::new(),
            definitions: Vec::new(),
            limits: ToolsConfig::default(),
        }
    }

    /// Offer `tool` after the ones already added.
    ///
    /// # Panics
    /// If a tool of that name is already offered: two tools of one name would make the
    /// model's calls ambiguous, a mistake of the code that builds the registry.
    pub fn add<T: Tool>(&mut self, tool: T) -> &mut Self {
        assert!(
            self.get(T::NAME).is_none(),
            "two tools are named {}",
            T::NAME
        );
        self.definitions.push(tool.definition());
        self.tools.push(Box::new(tool));
        self
    }

    /// The definitions the model sees, in order.
    pub fn definitions(&self) -> &[ToolDef] {
        &self.definitions
    }

    /// The tools' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// What the tool named `name` declares it needs, if it is offered.
    pub fn permissions(&self, name: &str) -> Option<&'static [Permission]> {
        self.get(name).map(|t| t.permissions())
    }

    /// Whether a successful result of the tool named `name` is kept for later turns
    /// ([`Tool::keeps_result`]).
    pub fn keeps_result(&self, name: &str) -> bool {
        self.get(name).is_some_and(|t| t.keeps_result())
    }

    fn get(&self, name: &str) -> Option<&dyn Offered> {
        self.tools
            .iter()
            .find(|t| t.name() == name)
            .map(|t| t.as_ref())
    }

    /// Run one call within the caps of `[tools]`: arguments longer than
    /// `tools.max_argument_bytes` are refused unread, a name not offered gets the list of
    /// those that are, and the tool's own checks follow (see `tool`). The per-response
    /// and per-turn call counts are the agent's to enforce (it sees the calls of a
    /// response together).
    pub async fn execute(&self, env: &ToolEnv, call: &ToolCall) -> ToolResult {
        let max = self.limits.max_argument_bytes;
        if call.arguments.len() > max {
            return ToolResult::err(ToolError::ArgumentsTooLong {
                name: call.name.clone(),
                len: call.arguments.len(),
                max,
            });
        }
        match self.get(&call.name) {
            Some(tool) => tool.run(env, call, &self.limits).await,
            None => ToolResult::err(ToolError::NoSuchTool {
                name: call.name.clone(),
                available: self.names().join(", "),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    const ORDER: [&str; 11] = [
        "switch_mode",
        "set_strategy",
        "read_file",
        "list_files",
        "write_file",
        "set_reminder",
        "list_reminders",
        "cancel_reminder",
        "memory_commit",
        "memory_search",
        "ask_user_choice",
    ];

    fn standard(modes: &ModeRegistry) -> ToolRegistry {
        ToolRegistry::new(ToolSetup {
            modes,
            services: ToolServices::describing(&["notes/".into()]),
            limits: ToolsConfig::default(),
        })
    }

    /// A tool of a feature that may or may not be configured.
    struct Lamp;

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct LampArgs {
        /// the room, as Home Assistant names it
        room: String,
        /// brightness in percent
        #[schemars(range(max = 100))]
        level: Option<u8>,
        /// fade in (default false)
        #[serde(default)]
        fade: bool,
    }

    #[async_trait::async_trait]
    impl Tool for Lamp {
        const NAME: &'static str = "lamp";
        type Args = LampArgs;
        fn description(&self) -> String {
            "Turn a lamp on.".into()
        }
        async fn call(&self, _env: &ToolEnv, a: LampArgs, _call: &ToolCall) -> ToolResult {
            ToolResult::ok(format!("{} {:?} {}", a.room, a.level, a.fade))
        }
    }

    fn with_lamp(modes: &ModeRegistry, configured: bool) -> ToolRegistry {
        let mut r = standard(modes);
        if configured {
            r.add(Lamp);
        }
        r
    }

    #[test]
    fn the_tools_come_in_a_fixed_order_with_their_definitions() {
        let r = standard(&ModeRegistry::default());
        assert_eq!(r.names(), ORDER);
        let defined: Vec<&str> = r.definitions().iter().map(|d| d.name.as_str()).collect();
        assert_eq!(defined, ORDER);
        // built twice, the same bytes
        let again = standard(&ModeRegistry::default());
        assert_eq!(
            serde_json::to_string(r.definitions()).unwrap(),
            serde_json::to_string(again.definitions()).unwrap()
        );
    }

    #[test]
    fn a_tool_of_a_configured_feature_comes_last_and_changes_nothing_before_it() {
        let modes = ModeRegistry::default();
        let without = with_lamp(&modes, false);
        let with = with_lamp(&modes, true);
        assert_eq!(without.names(), ORDER);
        assert_eq!(with.names().last(), Some(&"lamp"));
        assert_eq!(with.definitions()[..ORDER.len()], *without.definitions());
        assert!(without.permissions("lamp").is_none());
        assert_eq!(with.permissions("lamp"), Some(&[][..]));
    }

    #[test]
    #[should_panic(expected = "two tools are named lamp")]
    fn two_tools_of_one_name_are_a_mistake() {
        let mut r = ToolRegistry::empty();
        r.add(Lamp).add(Lamp);
    }

    #[test]
    fn the_permissions_are_declared_on_the_tools() {
        let r = standard(&ModeRegistry::default());
        for name in ORDER {
            let want: &[Permission] = match name {
                "switch_mode" | "set_strategy" => &[Permission::SwitchModes],
                "write_file" => &[Permission::WritesFiles],
                _ => &[],
            };
            assert_eq!(r.permissions(name), Some(want), "{name}");
        }
        assert!(r.permissions("rm_rf").is_none());
    }

    #[test]
    fn a_schema_is_derived_from_the_argument_struct() {
        let d = Lamp.definition();
        assert_eq!(
            d.parameters,
            json!({
                "type": "object",
                "properties": {
                    "room": {"type": "string", "description": "the room, as Home Assistant names it"},
                    "level": {"type": "integer", "description": "brightness in percent", "minimum": 0, "maximum": 100},
                    "fade": {"type": "boolean", "description": "fade in (default false)"}
                },
                "required": ["room"],
                "additionalProperties": false
            })
        );
    }
}
