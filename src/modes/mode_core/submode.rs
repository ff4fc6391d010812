//! Sub-modes: a mode whose `mode.json` names a `parent` runs *inside* it, a stack of one.
//! Entering it (only explicitly, only while the parent is active) pauses the parent's
//! session — not archived, its frozen prompt and history untouched — into
//! `modes/paused.json`, written before `action.json` names the sub-mode; the sub-mode
//! gets a session of its own. Ending it archives it as any mode and, as the last steps of
//! that archive (`archive::Archivist::resume_parent`), appends its conclusion to the
//! parent's history once, points `action.json` at the parent again and removes
//! `paused.json`: the parent goes on in the same session with the same frozen prompt, so
//! its next request extends its last one.
//!
//! What a person expects, and what is done: the parent's name with a verb of going back
//! ("回到做饭模式", `/mode enter cooking`) ends the sub-mode; ending the parent ends both,
//! the sub-mode first (the parent's `exit.json` is written first: it is the commit, and a
//! start that finds it on the paused parent ends the sub-mode too); the parent's expiry
//! likewise; the sub-mode's own expiry returns to the parent. Turns: the turn that
//! enters the sub-mode is its first record (its words say what the side task is); a turn
//! begun in the parent before stays the parent's; once the sub-mode is exiting, new turns
//! join the parent.

use super::ModeError;
use super::{live_in, ActiveSession, ModeCore, Paused, TurnId};
use crate::modes::entered::Entered;
use crate::modes::paused::PausedDoc;
use crate::modes::registry::RegisteredMode;
use crate::modes::session::ExitMarker;
use crate::modes::switched::{Refusal, SwitchError, Switched};
use chrono::{DateTime, Utc};
use tracing::info;

impl ModeCore {
    /// Whether `mode_id` is the parent a running sub-mode paused.
    pub(in crate::modes) fn is_paused_parent(&self, mode_id: &str) -> bool {
        self.paused
            .as_ref()
            .is_some_and(|p| p.session.mode_id == mode_id)
    }

    /// The session a new turn joins: the active one unless it is exiting; the paused
    /// parent of an exiting sub-mode unless that ends too.
    pub(super) fn joinable(&mut self) -> Option<&mut ActiveSession> {
        match self.active.as_mut() {
            Some(s) if s.exit.is_none() => Some(s),
            Some(_) => self
                .paused
                .as_mut()
                .map(|p| &mut p.session)
                .filter(|p| p.exit.is_none()),
            None => None,
        }
    }

    /// The live session `sid`: the active one or the paused parent.
    pub(super) fn live_mut(&mut self, sid: &str) -> Option<&mut ActiveSession> {
        live_in(&mut self.active, &mut self.paused, sid)
    }

    /// The paused parent's `action.json`, for `status`.
    pub(super) fn paused_doc(&self) -> Option<crate::modes::action::ActionDoc> {
        self.paused.as_ref().map(|p| p.doc.parent.clone())
    }

    /// The display name of mode `id` (its id when it no longer loads).
    fn name_of(&self, id: &str) -> String {
        self.registry
            .get(id)
            .map_or_else(|| id.to_string(), |m| m.manifest.display_name.clone())
    }

    /// Why sub-mode `mode` of `parent_id` cannot be entered now, if it cannot: its parent
    /// does not run (or is ending), it runs already, or another sub-mode does.
    pub(super) fn sub_refusal(&self, mode: &RegisteredMode, parent_id: &str) -> Option<Refusal> {
        let display_name = mode.manifest.display_name.clone();
        let parent_name = self.name_of(parent_id);
        match &self.active {
            None => Some(Refusal::ParentNotActive {
                display_name,
                parent_name,
            }),
            Some(a) if a.exit.is_some() => Some(Refusal::StillArchiving {
                display_name: a.display_name.clone(),
            }),
            Some(a) if a.mode_id == mode.manifest.id => Some(Refusal::AlreadyIn {
                display_name: a.display_name.clone(),
                session_id: a.session_id.clone(),
            }),
            // another sub-mode of the same parent runs: one at a time
            Some(a) if self.paused.is_some() => Some(Refusal::OtherActive {
                display_name: a.display_name.clone(),
            }),
            Some(a) if a.mode_id != parent_id => Some(Refusal::ParentNotActive {
                display_name,
                parent_name,
            }),
            Some(_) => None,
        }
    }

    /// Enter sub-mode `mode` of `parent_id`: refused unless the parent runs (and is not
    /// ending); else `paused.json`, then the new session and `action.json`. On failure
    /// nothing changed: the parent runs on, `action.json` names it and `paused.json` is
    /// gone ([`ModeCore::unpause_after_failed_entry`]).
    pub(super) fn enter_sub(
        &mut self,
        now: DateTime<Utc>,
        mode: RegisteredMode,
        parent_id: &str,
        turn_id: Option<TurnId>,
        entered: &Entered,
    ) -> Result<Switched, SwitchError> {
        if let Some(r) = self.sub_refusal(&mode, parent_id) {
            return Err(r.into());
        }
        let display_name = mode.manifest.display_name.clone();
        let parent_name = self.name_of(parent_id);
        let doc = PausedDoc::new(
            Self::rfc3339(self.local(now)),
            &mode.manifest.id,
            self.action.clone(),
        );
        let path = PausedDoc::path(&self.ws.modes_dir());
        if let Err(e) = doc.write(&path) {
            let e = ModeError::Io {
                what: "write",
                path,
                source: e,
            };
            self.warn(format!("could not pause {parent_name}: {e}"));
            return Err(SwitchError::NotEntered {
                display_name,
                goes_on: Some(parent_name),
                source: e,
            });
        }
        crate::failpoint::hit("submode.after_paused");
        let mut parent = self
            .active
            .take()
            .expect("checked above: the parent is active");
        if let Err(e) = self.create_session(now, &mode, entered, turn_id) {
            self.active = Some(parent);
            self.warn(format!("could not enter {display_name}: {e}"));
            self.unpause_after_failed_entry(&path);
            return Err(SwitchError::NotEntered {
                display_name,
                goes_on: Some(parent_name),
                source: e,
            });
        }
        let s = self
            .active
            .as_mut()
            .expect("create_session sets the active session");
        // the entering turn says what the side task is: it is the sub-session's first
        // record, not the parent's
        if let Some((t, entry)) = turn_id.and_then(|t| self.turns.get_mut(&t).map(|e| (t, e))) {
            let in_parent = entry
                .session
                .as_ref()
                .is_some_and(|(sid, _)| *sid == parent.session_id);
            if entry.session.is_none() || in_parent {
                parent.in_flight.remove(&t);
                entry.session = Some((s.session_id.clone(), s.dir.clone()));
                s.in_flight.insert(t);
            }
        }
        info!(mode = %s.mode_id, session = %s.session_id, parent = %parent.session_id, "sub-mode entered; parent paused");
        crate::metrics::mode_entered(&s.mode_id);
        let out = Switched::Entered {
            mode_id: s.mode_id.clone(),
            display_name: s.display_name.clone(),
            session_id: s.session_id.clone(),
            session_dir: s.dir.clone(),
            paused: Some(parent.display_name.clone()),
        };
        self.paused = Some(Paused {
            session: parent,
            doc,
        });
        Ok(out)
    }

    /// After a sub-mode's entry failed (its `paused.json` written, its session or its
    /// `action.json` not): the parent runs on, so `paused.json` goes — once `action.json`
    /// is known to name the parent. (A write that failed after its rename may have left
    /// the sub-mode's there, whose folder is gone again: the parent's is written back.
    /// Should that fail too, `paused.json` stays, so the next start still finds the
    /// parent; one that cannot be removed names the session `action.json` names, and the
    /// next start drops it.)
    fn unpause_after_failed_entry(&mut self, path: &std::path::Path) {
        let action_file = self.ws.action_file();
        let names_parent = match crate::modes::action::ActionDoc::read(&action_file) {
            Ok(Some(on_disk)) if on_disk == self.action => true,
            _ => match self.action.write(&action_file) {
                Ok(()) => true,
                Err(e) => {
                    self.warn(format!(
                        "could not write the paused session back into {} ({e}); {} is kept for the next start",
                        action_file.display(),
                        path.display()
                    ));
                    false
                }
            },
        };
        if !names_parent {
            return;
        }
        if let Err(e) = PausedDoc::remove(path) {
            self.warn(format!(
                "could not remove {} ({e}); it names the active session and is dropped at the next start",
                path.display()
            ));
        }
    }

    /// End the paused parent `parent_id` and its running sub-mode: the parent's
    /// `exit.json` first (the commit), then the sub-mode's exit; the sub-mode is archived
    /// first, then the parent, each once its turns are recorded.
    pub(super) fn end_with_parent(
        &mut self,
        parent_id: &str,
        reason: &str,
        summary: Option<String>,
        parent_at: String,
        sub_at: String,
        turn_id: Option<TurnId>,
    ) -> Result<Switched, SwitchError> {
        let Some(p) = self
            .paused
            .as_mut()
            .filter(|p| p.session.mode_id == parent_id)
        else {
            return Err(Refusal::NoActiveMode.into());
        };
        let parent = &mut p.session;
        let (mode_id, display_name, sid) = (
            parent.mode_id.clone(),
            parent.display_name.clone(),
            parent.session_id.clone(),
        );
        if parent.exit.is_some() {
            return Ok(Switched::AlreadyEnding {
                mode_id,
                display_name,
            });
        }
        let marker = ExitMarker {
            reason: reason.to_string(),
            summary,
            requested_at: parent_at,
        };
        if let Err(e) = crate::modes::session::write_exit_marker(&parent.dir, &marker) {
            self.warn(e.to_string());
            return Err(SwitchError::Failed(e));
        }
        parent.exit = Some(marker);
        info!(mode = %mode_id, session = %sid, reason, "parent mode exit requested; its sub-mode ends first");
        crate::failpoint::hit("submode.after_parent_marker");
        // the parent's marker stands if this fails: the next start ends the sub-mode too
        self.request_exit(None, reason, None, sub_at, turn_id)?;
        let archived =
            self.paused.is_none() && self.active.as_ref().is_none_or(|a| a.session_id != sid);
        Ok(match archived {
            true => Switched::Exited {
                mode_id,
                display_name,
                session_id: sid,
                returns_to: None,
            },
            false => Switched::ExitRequested {
                mode_id,
                display_name,
                returns_to: None,
            },
        })
    }

    /// The paused parent's time has passed: the sub-mode and then the parent expire
    /// (each at its own time, the sub-mode no later than the parent). `None` when the
    /// parent is not due; else the archived session, if any.
    pub(super) fn check_parent_expiry(&mut self, now: DateTime<Utc>) -> Option<Option<String>> {
        let p = self
            .paused
            .as_ref()
            .map(|p| &p.session)
            .filter(|p| p.exit.is_none() && now >= p.expires_at.with_timezone(&Utc))?;
        let (parent_id, parent_end) = (p.mode_id.clone(), p.expires_at);
        let sub_end = self
            .active
            .as_ref()
            .map_or(parent_end, |s| s.expires_at.min(parent_end));
        let (parent_at, sub_at) = (Self::rfc3339(parent_end), Self::rfc3339(sub_end));
        Some(
            match self.end_with_parent(&parent_id, "expired", None, parent_at, sub_at, None) {
                Ok(Switched::Exited { session_id, .. }) => Some(session_id),
                Ok(_) => None,
                Err(e) => {
                    self.warn(format!("could not expire the paused session: {e}"));
                    None
                }
            },
        )
    }

    /// At open, after the active session is loaded: the paused parent from
    /// `paused.json`. One naming the active session is the leftover of a push or a pop
    /// that did not finish, and goes; one beside an inactive state (a damaged
    /// `action.json` rebuilt without it) makes the parent active again; a damaged one is
    /// set aside, and the parent's folder is then archived as `recovered`. A paused parent
    /// with its exit requested ends its sub-mode too.
    pub(super) fn load_paused(&mut self) {
        let path = PausedDoc::path(&self.ws.modes_dir());
        let doc = match PausedDoc::read(&path) {
            Ok(Some(doc)) => doc,
            Ok(None) => return,
            Err(e) => {
                let aside = crate::fsutil::move_aside(&path, "corrupt");
                self.warn(format!(
                    "{e}; set aside ({}); the paused session it named is archived as `recovered`",
                    aside.map_or_else(|e| e.to_string(), |p| p.display().to_string())
                ));
                return;
            }
        };
        let sid = doc.session_id().to_string();
        let dir = self
            .ws
            .sessions_dir(doc.parent.mode_id.as_deref().unwrap_or_default())
            .join(&sid);
        let archived = dir.join(crate::modes::session::SUMMARY_FILE).exists() || !dir.is_dir();
        let names_active = self.action.active && self.action.session_id.as_deref() == Some(&sid);
        if names_active || archived {
            if let Err(e) = PausedDoc::remove(&path) {
                self.warn(format!("could not remove {}: {e}", path.display()));
            }
            return;
        }
        let session = self
            .archivist
            .reload_active(&doc.parent, &mut self.warnings);
        if !self.action.active {
            // the sub-mode is gone from the state: the parent runs again
            match doc.parent.write(&self.ws.action_file()) {
                Ok(()) => {
                    self.action = doc.parent.clone();
                    self.active = Some(session);
                    self.warn(format!(
                        "the mode state was inactive but session {sid} was paused by a sub-mode; it is active again"
                    ));
                    if let Err(e) = PausedDoc::remove(&path) {
                        self.warn(format!("could not remove {}: {e}", path.display()));
                    }
                }
                Err(e) => self.warn(format!("could not resume the paused session {sid}: {e}")),
            }
            return;
        }
        let parent_exiting = session.exit.clone();
        self.paused = Some(Paused { session, doc });
        let sub_exiting = self.active.as_ref().is_some_and(|a| a.exit.is_some());
        if let (Some(m), false) = (parent_exiting, sub_exiting) {
            if let Err(e) = self.request_exit(None, &m.reason, None, m.requested_at, None) {
                self.warn(format!(
                    "could not end the sub-mode of an ending parent: {e}"
                ));
            }
        }
    }
}
