//! The [`Tool`] trait: one tool the model may call — its name, the description and the
//! argument type the model sees (the JSON schema is derived from the type), what it needs
//! the sender to be allowed, and the call itself.
//!
//! A tool is written against its typed arguments; the registry runs it through
//! [`Offered`], which every [`Tool`] is: parse the raw arguments (an invalid call is a tool
//! error that says so and runs nothing), check the declared [`Permission`]s, run.

use super::env::ToolEnv;
pub use super::permission::Permission;
use super::result::{ToolError, ToolResult};
use crate::config::ToolsConfig;
use crate::provider::{ToolCall, ToolDef};
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::atomic::Ordering;

/// One tool the model may call.
///
/// `Args` is what the model sends: a struct deriving `Deserialize` (with
/// `#[serde(deny_unknown_fields)]`) and `JsonSchema`. Its fields' doc comments are the
/// property descriptions the model reads; a field that is not required is an `Option` or
/// has `#[serde(default)]` (see [`schema_of`] for how the schema is made).
#[async_trait::async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls it by.
    const NAME: &'static str;
    type Args: DeserializeOwned + JsonSchema + Send;
    /// What the registry checks before a call (none by default).
    const PERMISSIONS: &'static [Permission] = &[];

    /// What the model reads about the tool. Fixed once the registry is built: it is part
    /// of the stable prompt prefix.
    fn description(&self) -> String;

    /// The arguments' JSON schema as the model sees it: derived from `Args`. Override it
    /// only to add what the type cannot know (an enum of names known at start).
    fn parameters(&self) -> Value {
        schema_of::<Self::Args>()
    }

    /// What a sender without `missing` reads instead of a result.
    fn refused(&self, missing: Permission) -> ToolResult {
        ToolResult::err(ToolError::NotPermitted {
            name: Self::NAME,
            missing,
        })
    }

    /// Whether what this tool returns matters to later turns (a reminder set, a device
    /// switched, a file written: yes; a listing, a search: no — what it found is in the
    /// answer, and asking again is cheap). A successful result of such a tool is kept in
    /// the turn's record and sent once to the next request as a `[工具结果]` block.
    fn keeps_result(&self) -> bool {
        false
    }

    /// Bytes this call would write (for a tool with [`Permission::WritesFiles`]).
    fn bytes_to_write(&self, _args: &Self::Args) -> u64 {
        0
    }

    /// Run the call. `call` is the raw call (its id and argument text), for a tool that
    /// keeps them.
    async fn call(&self, env: &ToolEnv, args: Self::Args, call: &ToolCall) -> ToolResult;
}

/// The JSON schema of `T` as the model sees it: inline (no `$ref`), without `$schema`,
/// title or the type's own doc comment, with `properties` even when there are none. An
/// optional property is one that is not `required`: its type is not widened with `null`,
/// and a `#[serde(default)]` value is not shown (the description says it). Integers carry
/// no `format`. Keys come out sorted (`serde_json` without `preserve_order`), `required`
/// in field order.
pub fn schema_of<T: JsonSchema>() -> Value {
    // only the generator's call is per type; the rest is shared (smaller binary)
    for_the_model_root(generator().into_root_schema_for::<T>())
}

fn generator() -> SchemaGenerator {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    settings.inline_subschemas = true;
    settings.transforms = vec![Box::new(RecursiveTransform(for_the_model))];
    settings.into_generator()
}

fn for_the_model_root(mut schema: Schema) -> Value {
    schema.remove("title");
    schema.remove("description");
    // an object always names its properties, none too (as providers expect)
    if !schema
        .as_object()
        .is_some_and(|o| o.contains_key("properties"))
    {
        schema.insert("properties".into(), Value::Object(Default::default()));
    }
    schema.to_value()
}

fn for_the_model(s: &mut Schema) {
    s.remove("format");
    s.remove("default");
    if let Some(Value::Array(types)) = s.get("type") {
        let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if let [only] = kept[..] {
            let only = only.clone();
            s.insert("type".into(), only);
        }
    }
}

/// Parse a call's raw arguments (empty means `{}`).
pub fn parse_args<T: DeserializeOwned>(call: &ToolCall) -> Result<T, ToolError> {
    let raw = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        &call.arguments
    };
    serde_json::from_str(raw).map_err(|source| ToolError::InvalidArguments {
        name: call.name.clone(),
        source,
    })
}

/// A [`Tool`] as the registry holds it: by name, without its argument type.
#[async_trait::async_trait]
pub trait Offered: Send + Sync {
    fn name(&self) -> &'static str;
    fn permissions(&self) -> &'static [Permission];
    /// The definition the model sees.
    fn definition(&self) -> ToolDef;
    /// See [`Tool::keeps_result`].
    fn keeps_result(&self) -> bool;
    /// Parse, check the permissions, run.
    async fn run(&self, env: &ToolEnv, call: &ToolCall, limits: &ToolsConfig) -> ToolResult;
}

#[async_trait::async_trait]
impl<T: Tool> Offered for T {
    fn name(&self) -> &'static str {
        T::NAME
    }
    fn permissions(&self) -> &'static [Permission] {
        T::PERMISSIONS
    }
    fn keeps_result(&self) -> bool {
        Tool::keeps_result(self)
    }
    fn definition(&self) -> ToolDef {
        ToolDef {
            name: T::NAME.into(),
            description: self.description(),
            parameters: self.parameters(),
        }
    }
    async fn run(&self, env: &ToolEnv, call: &ToolCall, limits: &ToolsConfig) -> ToolResult {
        let args: T::Args = match parse_args(call) {
            Ok(a) => a,
            Err(e) => return ToolResult::err(e),
        };
        let mut writes = None;
        for &p in T::PERMISSIONS {
            if !p.granted(env) {
                return self.refused(p);
            }
            match p {
                Permission::SwitchModes => {}
                Permission::WritesFiles => {
                    let len = self.bytes_to_write(&args);
                    let budget = limits.max_write_bytes_per_turn;
                    let so_far = env.written.load(Ordering::SeqCst);
                    if so_far.saturating_add(len) > budget {
                        return ToolResult::err(ToolError::WriteBudget {
                            so_far,
                            len,
                            budget,
                        });
                    }
                    writes = Some(len);
                }
            }
        }
        let r = self.call(env, args, call).await;
        if let (Some(len), false) = (writes, r.is_error) {
            env.written.fetch_add(len, Ordering::SeqCst);
        }
        r
    }
}
