//! Switching: entering a mode (a new session folder, `session_dir`), requesting an exit (`exit.json` first, archive when nothing of the
//! session is in flight: `maybe_archive` hands the ending session to the
//! [`crate::modes::archive::Archivist`]), and expiry. Requests from the `switch_mode` tool are checked
//! against the user's own words ([`crate::modes::switch`]); `/mode` commands are not.

use super::{ModeCore, SwitchOrigin, TurnId};
use crate::modes::archive::{Ending, Live, Resume};
use crate::modes::entered::{Entered, EnteredHow};
use crate::modes::paused;
use crate::modes::registry::RegisteredMode;
use crate::modes::session::{self, ExitMarker};
use crate::modes::switch::{self, SwitchAction};
use crate::modes::switched::{Refusal, SwitchError, Switched};
use chrono::{DateTime, Utc};
use tracing::info;

impl ModeCore {
    /// A switch request. From the `switch_mode` tool, `origin` carries the turn and the
    /// user's original words, which must name the mode and the action; from an explicit
    /// `/mode` command, or a yes to the backend's question (`Confirmed`), there are no
    /// words to check. On `Err` nothing changed.
    pub fn switch(
        &mut self,
        now: DateTime<Utc>,
        action: SwitchAction,
        mode_id: Option<&str>,
        summary: Option<String>,
        origin: SwitchOrigin<'_>,
    ) -> Result<Switched, SwitchError> {
        self.check_expiry(now);
        let available = self.registry.ids();
        let mode = match (action, mode_id) {
            (_, Some(id)) => match self.registry.get(id) {
                Some(m) => Some(m.clone()),
                None if action == SwitchAction::Exit
                    && self.active.as_ref().is_some_and(|a| a.mode_id == id) =>
                {
                    None
                }
                None => {
                    return Err(Refusal::UnknownMode {
                        id: id.to_string(),
                        available,
                    }
                    .into())
                }
            },
            (SwitchAction::Enter, None) => return Err(Refusal::ModeNeeded { available }.into()),
            (SwitchAction::Exit, None) => None,
        };
        if let SwitchOrigin::Tool { user_text, .. } = origin {
            // Exit of a mode whose skill no longer loads: validate against the stored name.
            let manifest = match &mode {
                Some(m) => m.manifest.clone(),
                None => match &self.active {
                    Some(a) => {
                        crate::modes::manifest::ModeManifest::named(&a.mode_id, &a.display_name)
                    }
                    None => return Err(Refusal::NoActiveMode.into()),
                },
            };
            // "回到做饭模式": the parent's name with a verb of going back enters it (and
            // unsure words about it are asked as going back: "要回到做饭模式吗？")
            let returns = action == SwitchAction::Enter
                && mode_id.is_some_and(|id| self.is_paused_parent(id));
            let manifest = match returns {
                true => paused::with_return_verbs(manifest),
                false => manifest,
            };
            // what the state refuses is said at once: a question whose yes could not
            // switch would only waste the person's answer
            if let Some(r) = mode
                .as_ref()
                .filter(|_| action == SwitchAction::Enter && !returns)
                .and_then(|m| self.enter_refusal(m))
            {
                return Err(r.into());
            }
            switch::validate(&manifest, action, user_text)
                .map_err(|w| Refusal::Words(switch::WordsRefusal { returns, ..w }))?;
        }
        let turn_id = match origin {
            SwitchOrigin::Tool { turn_id, .. } | SwitchOrigin::Confirmed { turn_id } => {
                Some(turn_id)
            }
            SwitchOrigin::Command(_) => None,
        };
        if let Some(parent) = mode_id.filter(|id| self.is_paused_parent(id)) {
            let at = Self::rfc3339(self.local(now));
            return match action {
                // back to the parent: the running sub-mode ends
                SwitchAction::Enter => self.request_exit(None, "user", summary, at, turn_id),
                SwitchAction::Exit => {
                    let parent = parent.to_string();
                    self.end_with_parent(&parent, "user", summary, at.clone(), at, turn_id)
                }
            };
        }
        match action {
            SwitchAction::Enter => {
                let mode = mode.expect("enter always names a registered mode (checked above)");
                let entered = match origin {
                    SwitchOrigin::Tool { turn_id, .. } | SwitchOrigin::Confirmed { turn_id } => {
                        self.entered_by_turn(EnteredHow::Switch, turn_id)
                    }
                    SwitchOrigin::Command(by) => Entered {
                        how: EnteredHow::Command,
                        by: by.cloned(),
                    },
                };
                self.enter(now, mode, turn_id, &entered)
            }
            SwitchAction::Exit => {
                let at = Self::rfc3339(self.local(now));
                self.request_exit(mode_id, "user", summary, at, turn_id)
            }
        }
    }

    /// What `entered.json` says when turn `turn_id`'s speaker enters a mode `how`.
    pub(in crate::modes) fn entered_by_turn(&self, how: EnteredHow, turn_id: TurnId) -> Entered {
        Entered {
            how,
            by: self.turns.get(&turn_id).map(|t| t.who.clone()),
        }
    }

    /// Why `mode` cannot be entered now, if it cannot: another mode runs, or this one
    /// already, or one is still being archived; a sub-mode's parent does not run.
    fn enter_refusal(&self, mode: &RegisteredMode) -> Option<Refusal> {
        if let Some(parent) = &mode.manifest.parent {
            return self.sub_refusal(mode, parent);
        }
        let a = self.active.as_ref()?;
        let display_name = a.display_name.clone();
        Some(if a.exit.is_some() {
            Refusal::StillArchiving { display_name }
        } else if a.mode_id == mode.manifest.id {
            Refusal::AlreadyIn {
                display_name,
                session_id: a.session_id.clone(),
            }
        } else {
            Refusal::OtherActive { display_name }
        })
    }

    pub(in crate::modes) fn enter(
        &mut self,
        now: DateTime<Utc>,
        mode: RegisteredMode,
        turn_id: Option<TurnId>,
        entered: &Entered,
    ) -> Result<Switched, SwitchError> {
        if let Some(parent) = mode.manifest.parent.clone() {
            return self.enter_sub(now, mode, &parent, turn_id, entered);
        }
        if let Some(r) = self.enter_refusal(&mode) {
            return Err(r.into());
        }
        if let Err(e) = self.create_session(now, &mode, entered, turn_id) {
            let display_name = mode.manifest.display_name.clone();
            self.warn(format!("could not enter {display_name}: {e}"));
            return Err(SwitchError::NotEntered {
                display_name,
                goes_on: None,
                source: e,
            });
        }
        let s = self
            .active
            .as_mut()
            .expect("create_session sets the active session");
        if let Some(t) = turn_id.and_then(|t| self.turns.get_mut(&t).map(|e| (t, e))) {
            if t.1.session.is_none() {
                t.1.session = Some((s.session_id.clone(), s.dir.clone()));
                s.in_flight.insert(t.0);
            }
        }
        info!(mode = %s.mode_id, session = %s.session_id, "mode entered");
        crate::metrics::mode_entered(&s.mode_id);
        Ok(Switched::Entered {
            mode_id: s.mode_id.clone(),
            display_name: s.display_name.clone(),
            session_id: s.session_id.clone(),
            session_dir: s.dir.clone(),
            paused: None,
        })
    }

    /// Mark the active session as exiting (`exit.json`), then archive at once if nothing
    /// of it is in flight. `requested_at` becomes the session's recorded end.
    pub(super) fn request_exit(
        &mut self,
        mode_id: Option<&str>,
        reason: &str,
        summary: Option<String>,
        requested_at: String,
        turn_id: Option<TurnId>,
    ) -> Result<Switched, SwitchError> {
        let Some(s) = self.active.as_mut() else {
            return Err(Refusal::NoActiveMode.into());
        };
        if let Some(id) = mode_id {
            if id != s.mode_id {
                return Err(Refusal::NotActive {
                    requested: id.to_string(),
                    active_id: s.mode_id.clone(),
                    active_name: s.display_name.clone(),
                }
                .into());
            }
        }
        let (mode_id, display_name) = (s.mode_id.clone(), s.display_name.clone());
        if s.exit.is_some() {
            return Ok(Switched::AlreadyEnding {
                mode_id,
                display_name,
            });
        }
        let marker = ExitMarker {
            reason: reason.to_string(),
            summary,
            requested_at,
        };
        if let Err(e) = session::write_exit_marker(&s.dir, &marker) {
            self.warn(e.to_string());
            return Err(SwitchError::Failed(e));
        }
        s.exit = Some(marker);
        self.switches.0 += 1;
        crate::failpoint::hit("archive.after_marker");
        if let Some(t) = turn_id {
            if !s.in_flight.contains(&t) && self.turns.contains_key(&t) {
                s.exit_turn = Some(t);
            }
        }
        info!(mode = %s.mode_id, session = %s.session_id, reason, "mode exit requested");
        let sid = s.session_id.clone();
        let returns_to = self
            .paused
            .as_ref()
            .filter(|p| p.session.exit.is_none())
            .map(|p| p.session.display_name.clone());
        self.maybe_archive();
        let archived = self.active.as_ref().is_none_or(|a| a.session_id != sid);
        Ok(match archived {
            true => Switched::Exited {
                mode_id,
                display_name,
                session_id: sid,
                returns_to,
            },
            false => Switched::ExitRequested {
                mode_id,
                display_name,
                returns_to,
            },
        })
    }

    /// Expire the active session if its time has passed (its recorded end is
    /// `expires_at`, however late the check runs). Returns the archived session.
    pub fn check_expiry(&mut self, now: DateTime<Utc>) -> Option<String> {
        if let Some(ended) = self.check_parent_expiry(now) {
            return ended;
        }
        let expires_at = self
            .active
            .as_ref()
            .filter(|s| s.exit.is_none() && now >= s.expires_at.with_timezone(&Utc))
            .map(|s| Self::rfc3339(s.expires_at))?;
        match self.request_exit(None, "expired", None, expires_at, None) {
            Ok(Switched::Exited { session_id, .. }) => Some(session_id),
            Ok(_) => None,
            Err(e) => {
                self.warn(format!("could not expire the active session: {e}"));
                None
            }
        }
    }
}

impl ModeCore {
    /// Archive the active session if its exit is due. Errors are kept as warnings and
    /// retried at the next call (every turn start/end and every cron tick).
    pub(in crate::modes) fn maybe_archive(&mut self) -> Option<String> {
        // a sub-mode's archive resumes its parent, whose own exit may then be due
        let mut archived = None;
        while let Some(sid) = self.archive_if_due() {
            archived = Some(sid);
        }
        archived
    }

    fn archive_if_due(&mut self) -> Option<String> {
        let due = self
            .active
            .as_ref()
            .is_some_and(|s| s.exit.is_some() && s.in_flight.is_empty() && s.exit_turn.is_none());
        if !due {
            return None;
        }
        let s = self.active.take().expect("due implies an active session");
        let marker = s.exit.clone().expect("due implies an exit request");
        // records whose fsync a turn is still waiting on reach the disk before the summary
        if let Ok(f) = std::fs::File::open(s.dir.join(session::CONVERSATION_FILE)) {
            let _ = f.sync_data();
        }
        let result = s.log.view().with(|records| {
            let resume = self.paused.as_ref().map(|p| Resume {
                dir: &p.session.dir,
                log: &p.session.log,
                doc: &p.doc.parent,
                conclusion: paused::conclusion_record(
                    &s.display_name,
                    &s.session_id,
                    &p.session.display_name,
                    &marker,
                    records,
                ),
            });
            let ending = Ending {
                mode: s.mode.as_ref(),
                mode_id: &s.mode_id,
                display_name: &s.display_name,
                session_id: &s.session_id,
                dir: &s.dir,
                started_at: &s.started_at,
                marker: &marker,
                records,
                resume,
            };
            let live = Live {
                chats: &mut self.chats,
                action: &mut self.action,
                warnings: &mut self.warnings,
            };
            self.archivist.archive_files(&ending, live)
        });
        match result {
            Ok(()) => {
                info!(mode = %s.mode_id, session = %s.session_id, reason = %marker.reason, "mode archived");
                crate::metrics::mode_exited(&s.mode_id, &marker.reason);
                self.drop_candidates_of(&s.session_id);
                if let Some(parent) = self.paused.take() {
                    let parent = parent.session;
                    info!(mode = %parent.mode_id, session = %parent.session_id, sub = %s.session_id, "parent mode resumed");
                    self.active = Some(parent);
                }
                Some(s.session_id)
            }
            Err(e) => {
                let sid = s.session_id.clone();
                self.active = Some(s);
                self.warn(format!("archiving session {sid} failed, will retry: {e}"));
                None
            }
        }
    }
}
