//! A turn's way through the core: `begin_turn` (catch up on expiry, then the ticket: the
//! session or the chat it runs in) and `end_turn` (its record where it belongs, then the
//! archive if an exit is due).

use super::*;

impl ModeCore {
    /// Start a turn: catch up on expiry, then snapshot what the turn runs in.
    pub fn begin_turn(&mut self, now: DateTime<Utc>, meta: TurnMeta) -> TurnTicket {
        self.check_expiry(now);
        self.maybe_archive();
        crate::failpoint::panic_once("modes.begin_turn");
        let turn_id = self.next_turn;
        self.next_turn += 1;
        let began_at = self.local(now);
        let (mode, history, session, chat) = match self.joinable() {
            Some(s) => {
                s.in_flight.insert(turn_id);
                (
                    Some(snapshot(s)),
                    s.log.view(),
                    Some((s.session_id.clone(), s.dir.clone())),
                    None,
                )
            }
            _ => {
                let (log, warnings) = self.chats.log(&meta.channel, &meta.chat_id);
                for w in warnings {
                    self.warn(w);
                }
                let chat = ChatReplay {
                    checkpoint: self.chats.checkpoint_path(&meta.channel, &meta.chat_id),
                    carried: self.chats.carried(
                        &meta.channel,
                        meta.place.as_deref().unwrap_or(&meta.chat_id),
                        began_at,
                    ),
                };
                (None, log.view(), None, Some(chat))
            }
        };
        let chat_id = meta.chat_id;
        let who = Entrant {
            speaker_id: meta.speaker_id,
            speaker_name: meta.speaker_name,
            channel: meta.channel,
        };
        let entry = TurnEntry {
            session,
            who,
            text: meta.text,
            chat_id,
            shared: meta.shared,
            room: meta.room,
        };
        self.turns.insert(turn_id, entry);
        TurnTicket {
            turn_id,
            mode,
            history,
            began_at,
            chat,
        }
    }

    /// Finish a turn: record it where it belongs, then archive if an exit is due.
    ///
    /// `began_in` is the session the turn's ticket named: it places a turn this core
    /// does not know (begun before the ModeManager was restarted) — in that session if it
    /// is still the active one, else in the chat's normal history — so it is not lost.
    pub fn end_turn(
        &mut self,
        now: DateTime<Utc>,
        turn_id: TurnId,
        record: Record,
        began_in: Option<&str>,
    ) -> Result<EndOutcome, ModeError> {
        self.end_turn_deferred(now, turn_id, record, began_in, false)
            .map(|(out, _)| out)
    }

    /// [`ModeCore::end_turn`]; with `defer_sync` the record is written but its fsync is
    /// left to the caller, who must wait on the returned [`Pending`] before the turn is
    /// acknowledged (see [`super::durable`]: waits on one file share fsyncs, and this
    /// actor never blocks on the disk). A session with an exit pending is synced here, so
    /// its archive follows durable records.
    pub fn end_turn_deferred(
        &mut self,
        now: DateTime<Utc>,
        turn_id: TurnId,
        record: Record,
        began_in: Option<&str>,
        defer_sync: bool,
    ) -> Result<(EndOutcome, Option<Pending>), ModeError> {
        let mut heard = (false, None);
        let session = match self.turns.remove(&turn_id) {
            Some(entry) => {
                heard = (entry.shared, entry.room);
                entry.session
            }
            // ended already, or never begun
            None if turn_id >= self.first_turn => return Err(ModeError::UnknownTurn(turn_id)),
            // begun before a restart of the ModeManager: place it by its ticket
            None => {
                let placed = began_in
                    .and_then(|sid| self.live_mut(sid))
                    .map(|s| (s.session_id.clone(), s.dir.clone()));
                if let (Some(sid), None) = (began_in, &placed) {
                    self.warn(format!(
                        "turn {turn_id} ended after a restart of the mode manager; its session {sid} is no longer active, so it is recorded in the chat's normal history"
                    ));
                }
                placed
            }
        };
        let mut out = EndOutcome::default();
        let mut pending = None;
        let (channel, chat_id) = (record.channel.clone(), record.chat_id.clone());
        let learned = record.clone();
        let result = match session {
            Some((sid, dir)) => {
                let active = live_in(&mut self.active, &mut self.paused, &sid);
                let defer = defer_sync && active.as_ref().is_some_and(|s| s.exit.is_none());
                let path = dir.join(session::CONVERSATION_FILE);
                let r = session::append_record_unsynced(&path, &record)
                    .and_then(|fd| Self::durable(&mut self.syncs, &path, fd, defer, &mut pending))
                    .map_err(io("append to", &path));
                match active {
                    Some(s) => {
                        s.in_flight.remove(&turn_id);
                        if r.is_ok() {
                            s.log.push(record);
                        }
                    }
                    // a session is not archived while its turns are in flight; if that
                    // was broken anyway the record still lands in its own folder
                    None => self.warn(format!(
                        "turn {turn_id} of session {sid} ended after the session was archived; appended to its conversation.jsonl"
                    )),
                }
                if r.is_ok() {
                    out.recorded_in = Some(sid);
                }
                r
            }
            None => {
                let (r, warnings) = self.chats.append_unsynced(record.clone());
                for w in warnings {
                    self.warn(w);
                }
                let path = self.chats.path(&record.channel, &record.chat_id);
                r.and_then(|fd| Self::durable(&mut self.syncs, &path, fd, defer_sync, &mut pending))
                    .map_err(io("append to", &path))
            }
        };
        match &result {
            Ok(()) => {
                if self.recording_failure.take().is_some() {
                    info!("turns are recorded again");
                }
                let sid = out.recorded_in.clone();
                self.learn_from(sid.as_deref(), &learned, heard.0, heard.1);
            }
            Err(e) => self.note_recording_failure(now, &channel, &chat_id, e),
        }
        if let Some(s) = self.active.as_mut() {
            if s.exit_turn == Some(turn_id) {
                s.exit_turn = None;
            }
        }
        out.archived = self.maybe_archive();
        result.map(|_| (out, pending))
    }
}
