//! Making a session: its folder built under a temporary name (the frozen prompt, the
//! examples it got, `entered.json`, an empty conversation), renamed into place, then
//! named by `action.json` — or, on any failure, nothing left behind.

use super::{io, ActiveSession, ModeCore, ModeError, TurnId};
use crate::fsutil;
use crate::modes::action::ActionDoc;
use crate::modes::entered::{Entered, ENTERED_FILE};
use crate::modes::registry::RegisteredMode;
use crate::modes::session::{self, HistoryLog};
use crate::modes::session_id::SessionId;
use chrono::{DateTime, FixedOffset, Utc};
use std::collections::HashSet;
use std::path::Path;

impl ModeCore {
    /// Make the session folder and make it the active session. The folder is built under
    /// a temporary name beside the sessions (`.<id>.tmp`: frozen prompt, empty
    /// conversation) and renamed into place only when complete, then `action.json` names
    /// it. On any failure nothing is left behind: the temporary folder is removed, and a
    /// folder already renamed is taken back. (A crash mid-way leaves at most the
    /// temporary folder, which the next start removes.) Turn `first`, the one that
    /// enters it (if any), picks the household's examples the prompt gets.
    pub(super) fn create_session(
        &mut self,
        now: DateTime<Utc>,
        mode: &RegisteredMode,
        entered: &Entered,
        first: Option<TurnId>,
    ) -> Result<(), ModeError> {
        let ctx = self.plugin_ctx(mode);
        let started = self.local(now);
        let prefix = mode.plugin.session_prefix(&ctx);
        let base = self.ws.sessions_dir(&mode.manifest.id);
        let (session_id, dir, tmp) = loop {
            let sid = SessionId::new(&prefix, started).to_string();
            let dir = base.join(&sid);
            let tmp = base.join(format!(".{sid}.tmp"));
            if !dir.exists() && !tmp.exists() {
                break (sid, dir, tmp);
            }
        };
        mode.plugin
            .prepare(&ctx)
            .map_err(io("prepare plugin data for", &dir))?;
        let skill_md = mode.skill_dir.join("SKILL.md");
        let static_prompt = mode
            .plugin
            .static_prompt(&ctx)
            .map_err(io("read", &skill_md))?;
        let carry = mode
            .manifest
            .context
            .as_ref()
            .is_none_or(|c| c.carries_over())
            .then(|| crate::modes::carry::previous(&self.ws, &mode.manifest.id))
            .flatten();
        let context_paths = mode.plugin.runtime_context(&ctx);
        let rel = |p: &Path| {
            p.strip_prefix(self.ws.root())
                .unwrap_or(p)
                .display()
                .to_string()
        };
        let facts = super::SessionFacts {
            session_id: session_id.to_string(),
            session_dir: rel(&dir),
            paths: context_paths
                .iter()
                .map(|c| (c.label.clone(), rel(&c.path)))
                .collect(),
            examples: self.examples_for(mode, first),
        };
        let system_prompt = (self.frozen_prompt)(mode, &static_prompt, carry.as_ref(), &facts);
        let examples = mode.manifest.examples.map(|_| facts.examples.as_slice());
        let built = build_session_dir(&tmp, &system_prompt, entered, examples).and_then(|()| {
            crate::failpoint::hit("session.before_rename");
            std::fs::rename(&tmp, &dir)
                .and_then(|()| fsutil::sync_dir(&base))
                .map_err(io("move into place", &dir))
        });
        if let Err(e) = built {
            self.discard_session_dir(&tmp);
            return Err(e);
        }
        let doc = active_doc(mode, &session_id, &dir, started, self.tz);
        let expires_at =
            DateTime::parse_from_rfc3339(doc.expires_at.as_deref().unwrap_or_default())
                .expect("active_doc writes RFC 3339");
        if let Err(e) = doc.write(&self.ws.action_file()) {
            // not active after all: take the folder back so no orphan is left behind
            match std::fs::rename(&dir, &tmp) {
                Ok(()) => self.discard_session_dir(&tmp),
                Err(re) => self.warn(format!(
                    "could not take back the session folder {} ({re}); it is removed at the next start",
                    dir.display()
                )),
            }
            return Err(e.into());
        }
        self.action = doc;
        self.active = Some(ActiveSession {
            mode: Some(mode.clone()),
            mode_id: mode.manifest.id.clone(),
            display_name: mode.manifest.display_name.clone(),
            session_id,
            dir,
            started_at: Self::rfc3339(started),
            expires_at,
            system_prompt: system_prompt.into(),
            context_paths,
            log: HistoryLog::default(),
            in_flight: HashSet::new(),
            exit: None,
            exit_turn: None,
        });
        // a mode or a sub-mode entered: any question about switching asked before is void
        self.switches.0 += 1;
        Ok(())
    }

    /// Remove a session folder this entry made and could not finish (it holds only the
    /// generated prompt and an empty conversation).
    fn discard_session_dir(&mut self, tmp: &Path) {
        match std::fs::remove_dir_all(tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => self.warn(format!(
                "could not remove the half-made session folder {} ({e}); it is removed at the next start",
                tmp.display()
            )),
        }
    }
}

/// The files of a new session, in its temporary folder: the frozen prompt, the examples
/// it got (a mode that learns them), and an empty conversation, all fsynced.
fn build_session_dir(
    tmp: &Path,
    system_prompt: &str,
    entered: &Entered,
    examples: Option<&[crate::modes::examples::Case]>,
) -> Result<(), ModeError> {
    fsutil::create_private_dirs(tmp).map_err(io("create", tmp))?;
    if let Some(cases) = examples {
        super::examples::write_session_examples(tmp, cases)?;
    }
    let prompt_path = tmp.join(session::SYSTEM_PROMPT_FILE);
    fsutil::write_atomic(&prompt_path, system_prompt.as_bytes())
        .map_err(io("write", &prompt_path))?;
    let entered_path = tmp.join(ENTERED_FILE);
    fsutil::write_atomic(&entered_path, entered.to_json().as_bytes())
        .map_err(io("write", &entered_path))?;
    let conv = tmp.join(session::CONVERSATION_FILE);
    fsutil::create_private(&conv)
        .and_then(|f| f.sync_all())
        .and_then(|_| fsutil::sync_dir(tmp))
        .map_err(io("create", &conv))
}

/// The `action.json` of an active session.
pub(in crate::modes) fn active_doc(
    mode: &RegisteredMode,
    session_id: &str,
    dir: &Path,
    started: DateTime<FixedOffset>,
    tz: crate::zone::Zone,
) -> ActionDoc {
    ActionDoc {
        schema_version: crate::modes::action::SCHEMA_VERSION,
        active: true,
        mode_id: Some(mode.manifest.id.clone()),
        display_name: Some(mode.manifest.display_name.clone()),
        session_id: Some(session_id.to_string()),
        skill_name: Some(mode.skill_name.clone()),
        started_at: Some(ModeCore::rfc3339(started)),
        expires_at: Some(ModeCore::rfc3339(mode.manifest.expiry().after(started, tz))),
        session_dir: Some(dir.display().to_string()),
        exit_reason: None,
    }
}
