//! The table of compiled-in mode plugins (`PLUGINS`): entrypoint name → constructor, which
//! the kernel hands the mode registry.

use crate::modes::registry::PluginTable;
use std::sync::Arc;

/// Entrypoint name → plugin constructor: the table the kernel hands the mode registry.
pub const PLUGINS: PluginTable = &[("plugin.rs:CookingMode", || {
    Arc::new(super::home_cooking::CookingMode)
})];
