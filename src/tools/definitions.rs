//! The tool definitions the model is offered for a set of modes and writable folders,
//! without a running kernel (`definitions`: what [`ToolRegistry::new`] offers).

use super::registry::{ToolRegistry, ToolSetup};
use super::services::ToolServices;
use crate::modes::ModeRegistry;
use crate::provider::ToolDef;

/// The definitions of the household's tools for these modes and writable folders (what
/// [`ToolRegistry::new`] offers).
pub fn definitions(modes: &ModeRegistry, writable: &[String]) -> Vec<ToolDef> {
    ToolRegistry::new(ToolSetup {
        modes,
        services: ToolServices::describing(writable),
        limits: crate::config::ToolsConfig::default(),
    })
    .definitions()
    .to_vec()
}
