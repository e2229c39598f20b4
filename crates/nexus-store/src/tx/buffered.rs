//! Writes a unit of work does not wait on, sent with it rather than at once: on PostgreSQL each
//! is buffered until the unit's next statement or its `COMMIT` and goes out in the same round trip
//! (`tx/deferred.rs`); on SQLite each runs at once, as every statement there does.
//!
//! A buffered write's failure (a broken foreign key, a text the database refuses) fails the
//! statement it travels with, so the unit is void and its commit answers `TxAborted`, as it
//! would have had the write failed on its own: nothing is committed that the kernel believes
//! was not, and nothing the kernel believes was written is lost.

use super::*;

impl Tx {
    /// Inserts a job (unlocked, 0 attempts) with the unit of work, when the caller does not
    /// need its id.
    pub async fn put_job(&mut self, new: NewJob) -> Result<()> {
        match self {
            Tx::Postgres(t) if !t.void => {
                t.deferred.buffer(
                    crate::sql::INSERT_JOB_BUFFERED,
                    &[&new.kind, &new.run_id, &new.task_id, &new.generation, &new.available_at],
                );
                Ok(())
            }
            _ => tx_dispatch!(self, insert_job(&new)).map(|_| ()),
        }
    }

    /// Deletes the job with the unit of work, whether or not it is still there.
    pub async fn delete_job(&mut self, job_id: i64) -> Result<()> {
        match self {
            Tx::Postgres(t) if !t.void => {
                t.deferred.buffer(crate::sql::DELETE_JOB, &[&job_id]);
                Ok(())
            }
            _ => tx_dispatch!(self, delete_job(job_id)).map(|_| ()),
        }
    }

    /// Adds the edge `task_id` → `depends_on_id` with the unit of work, when the caller does
    /// not need to know whether it was already there ([`Tx::insert_edge`] tells).
    pub async fn put_edge(&mut self, task_id: i64, depends_on_id: i64, kind: EdgeKind) -> Result<()> {
        match self {
            Tx::Postgres(t) if !t.void => {
                t.deferred
                    .buffer(crate::sql::INSERT_EDGE, &[&task_id, &depends_on_id, &kind]);
                Ok(())
            }
            _ => tx_dispatch!(self, insert_edge(task_id, depends_on_id, kind)).map(|_| ()),
        }
    }

    /// Replaces the attempts JSON of a sealed request with the unit of work, when the caller
    /// does not need to know whether there was one ([`Tx::set_sealed_attempts`] tells).
    pub async fn put_sealed_attempts(&mut self, task_id: i64, generation: i64, attempts: &str) -> Result<()> {
        match self {
            Tx::Postgres(t) if !t.void => {
                crate::check_text(attempts)?;
                t.deferred
                    .buffer(crate::sql::SET_SEALED_ATTEMPTS, &[&task_id, &generation, &attempts]);
                Ok(())
            }
            _ => tx_dispatch!(self, set_sealed_attempts(task_id, generation, attempts)).map(|_| ()),
        }
    }
}
