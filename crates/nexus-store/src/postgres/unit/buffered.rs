//! PostgreSQL: the unit's buffered writes (`tx/buffered.rs`, [`crate::Tx::update_run`],
//! [`crate::Tx::put_round_facts`]), held in [`super::deferred::Deferred`] until the unit's next
//! statement or its `COMMIT`. Each answers `None` when the unit is void (the caller's dispatch
//! then answers `TxAborted`); the text guard runs here, as the statement's would.

use super::*;

impl PgTx {
    pub(crate) fn buffer_job(&mut self, new: &NewJob) -> Option<Result<()>> {
        if self.void {
            return None;
        }
        self.deferred.buffer(
            crate::sql::INSERT_JOB_BUFFERED,
            &[&new.kind, &new.run_id, &new.task_id, &new.generation, &new.available_at],
        );
        Some(Ok(()))
    }

    pub(crate) fn buffer_delete_job(&mut self, job_id: i64) -> Option<Result<()>> {
        if self.void {
            return None;
        }
        self.deferred.buffer(crate::sql::DELETE_JOB, &[&job_id]);
        Some(Ok(()))
    }

    pub(crate) fn buffer_edge(&mut self, task_id: i64, depends_on_id: i64, kind: EdgeKind) -> Option<Result<()>> {
        if self.void {
            return None;
        }
        self.deferred
            .buffer(crate::sql::INSERT_EDGE, &[&task_id, &depends_on_id, &kind]);
        Some(Ok(()))
    }

    pub(crate) fn buffer_sealed_attempts(
        &mut self,
        task_id: i64,
        generation: i64,
        attempts: &str,
    ) -> Option<Result<()>> {
        if self.void {
            return None;
        }
        Some(crate::check_text(attempts).map(|()| {
            self.deferred
                .buffer(crate::sql::SET_SEALED_ATTEMPTS, &[&task_id, &generation, &attempts])
        }))
    }

    pub(crate) fn buffer_round_facts(&mut self, facts: &RoundFactsRow) -> Option<Result<()>> {
        if self.void {
            return None;
        }
        Some(crate::check_text(&facts.history).map(|()| {
            self.deferred.buffer(
                crate::sql::PUT_ROUND_FACTS,
                &[&facts.task_id, &facts.chain_rounds, &facts.key_floor, &facts.history],
            )
        }))
    }

    /// The run's update, when the unit holds its lock (under it the row is there); `None`
    /// otherwise: send it now.
    pub(crate) fn buffer_run_update(&mut self, run: &RunRow) -> Option<Result<()>> {
        if self.void || !self.deferred.holds(run.id) {
            return None;
        }
        Some(crate::row::check_run_row_text(run).map(|()| {
            self.deferred.buffer_run_update(
                run.id,
                &[
                    &run.id,
                    &run.status.as_str(),
                    &run.deliverable_task_id,
                    &run.revision,
                    &run.attention.as_deref(),
                    &run.started_at,
                    &run.ended_at,
                    &run.default_runner_id,
                ],
            )
        }))
    }
}
