//! `<workspace>/modes/action.json` — the run-mode lifecycle document: exactly the ten
//! keys of [`ActionDoc`], nothing more (other tools read it). Only the ModeManager writes
//! it, always by atomic replace. It holds lifecycle only: no recipe, no dialogue.

use serde::{Deserialize, Serialize};
use std::path::Path;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ActionDoc {
    pub schema_version: u32,
    pub active: bool,
    pub mode_id: Option<String>,
    pub display_name: Option<String>,
    pub session_id: Option<String>,
    pub skill_name: Option<String>,
    pub started_at: Option<String>,
    pub expires_at: Option<String>,
    pub session_dir: Option<String>,
    pub exit_reason: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is corrupt: {message}")]
    Corrupt { path: String, message: String },
}

/// What makes a well-formed JSON `action.json` unusable ([`ActionDoc::check`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Defect {
    #[error("unsupported schema_version {0}")]
    SchemaVersion(u32),
    /// Active, without the listed keys (comma-separated).
    #[error("active but missing {0}")]
    Missing(String),
    #[error("{key} {value:?} is not RFC 3339: {error}")]
    Time {
        key: &'static str,
        value: String,
        error: chrono::ParseError,
    },
    #[error("mode_id / session_id contain characters not allowed in a path")]
    UnsafeId,
}

impl ActionDoc {
    pub fn inactive(exit_reason: Option<String>) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            active: false,
            mode_id: None,
            display_name: None,
            session_id: None,
            skill_name: None,
            started_at: None,
            expires_at: None,
            session_dir: None,
            exit_reason,
        }
    }

    /// Read the document; `Ok(None)` when the file does not exist yet.
    pub fn read(path: &Path) -> Result<Option<Self>, ActionError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(ActionError::Io {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        let corrupt = |message: String| ActionError::Corrupt {
            path: path.display().to_string(),
            message,
        };
        let text = std::str::from_utf8(&bytes).map_err(|e| corrupt(format!("not UTF-8: {e}")))?;
        let doc: ActionDoc = serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
        doc.check().map_err(|d| corrupt(d.to_string()))?;
        Ok(Some(doc))
    }

    /// Structural checks beyond JSON: version, and an active document is complete.
    pub fn check(&self) -> Result<(), Defect> {
        if self.schema_version != SCHEMA_VERSION {
            return Err(Defect::SchemaVersion(self.schema_version));
        }
        if self.active {
            let missing: Vec<&str> = [
                ("mode_id", &self.mode_id),
                ("display_name", &self.display_name),
                ("session_id", &self.session_id),
                ("started_at", &self.started_at),
                ("expires_at", &self.expires_at),
                ("session_dir", &self.session_dir),
            ]
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| *k)
            .collect();
            if !missing.is_empty() {
                return Err(Defect::Missing(missing.join(", ")));
            }
            for (k, v) in [
                ("started_at", &self.started_at),
                ("expires_at", &self.expires_at),
            ] {
                let v = v.as_deref().unwrap_or_default();
                chrono::DateTime::parse_from_rfc3339(v).map_err(|error| Defect::Time {
                    key: k,
                    value: v.to_string(),
                    error,
                })?;
            }
            let sid = self.session_id.as_deref().unwrap_or_default();
            let mid = self.mode_id.as_deref().unwrap_or_default();
            if !crate::config::is_safe_id(sid) || !crate::config::is_safe_id(mid) {
                return Err(Defect::UnsafeId);
            }
        }
        Ok(())
    }

    pub fn write(&self, path: &Path) -> Result<(), ActionError> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("ActionDoc always serializes");
        bytes.push(b'\n');
        crate::fsutil::write_atomic(path, &bytes).map_err(|source| ActionError::Io {
            path: path.display().to_string(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inactive_has_every_key() {
        let v = serde_json::to_value(ActionDoc::inactive(Some("user".into()))).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        for k in [
            "schema_version",
            "active",
            "mode_id",
            "display_name",
            "session_id",
            "skill_name",
            "started_at",
            "expires_at",
            "session_dir",
            "exit_reason",
        ] {
            assert!(keys.contains(&k.to_string()), "missing {k}");
        }
        assert_eq!(keys.len(), 10);
        assert_eq!(v["exit_reason"], "user");
        assert!(v["mode_id"].is_null());
    }

    #[test]
    fn seed_example_parses() {
        let doc: ActionDoc = serde_json::from_str(
            r#"{"schema_version":1,"active":true,"mode_id":"cooking","display_name":"做饭模式",
            "session_id":"cook-20261022-195500-a1b2c3","skill_name":"home-cooking",
            "started_at":"2026-10-22T19:55:00+08:00","expires_at":"2026-10-23T00:10:00+08:00",
            "session_dir":"/x","exit_reason":null}"#,
        )
        .unwrap();
        doc.check().unwrap();
    }

    #[test]
    fn incomplete_active_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("action.json");
        std::fs::write(&p, r#"{"schema_version":1,"active":true,"mode_id":"cooking","display_name":null,"session_id":null,"skill_name":null,"started_at":null,"expires_at":null,"session_dir":null,"exit_reason":null}"#).unwrap();
        let e = ActionDoc::read(&p).unwrap_err().to_string();
        assert!(e.contains("active but missing display_name"), "{e}");
        std::fs::write(&p, "{\"schema_version\":1,\"act").unwrap();
        assert!(ActionDoc::read(&p).is_err());
    }
}
