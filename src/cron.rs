//! The Cron actor: scheduled jobs. Today it owns the mode-expiry job — every
//! `cron.expiry_check_secs` it asks the ModeManager to expire a session whose
//! `expires_at` has passed (the ModeManager also checks before every turn, which covers
//! a gateway that was down at 00:10). User timers and reminders will live here too.

use crate::modes::ModesHandle;
use actix::prelude::*;
use std::time::Duration;

pub struct Cron {
    modes: ModesHandle,
    period: Duration,
}

impl Cron {
    pub fn new(modes: ModesHandle, period: Duration) -> Self {
        Self { modes, period }
    }
}

impl Actor for Cron {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.period, |cron, _| cron.modes.nudge_expiry());
    }
}
