//! The workspace file tools `read_file`, `list_files`, `write_file`: which paths a call
//! may reach ([`zones`]), the checks on each file ([`guard`]), reading and writing within
//! the limits ([`access`]), and the tools ([`tool`]).

pub mod access;
pub mod guard;
pub mod tool;
pub mod zones;

pub use access::*;
pub use tool::{ListFiles, ReadFile, WriteFile};
