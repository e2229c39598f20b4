//! Runs, the job queue and idempotency receipts (migration 0002), written once for both engines.

use crate::model::*;
use crate::ops::db::{Db, query, query_scalar, uid};
use crate::ops::on_conn;
use crate::row;
use crate::sql;
use crate::{Result, Store, StoreError, check_text, write_error};
use uuid::Uuid;

// ---- runs ----

pub(crate) async fn insert_run<C: Db>(c: &mut C, new: &NewRun) -> Result<RunRow> {
    row::check_new_run_text(new)?;
    let r = query(sql::INSERT_RUN)
        .bind(uid(new.public_id))
        .bind(new.workspace_id)
        .bind(new.created_by_id)
        .bind(new.answering_member_id)
        .bind(new.declaring_agent_id)
        .bind(new.status)
        .bind(new.hosting.to_text())
        .bind(new.approval_mode.as_str())
        .bind(new.approval_rules.as_deref())
        .bind(new.default_runner_id)
        .bind(new.revision)
        .bind(new.created_at)
        .bind(new.started_at)
        .fetch_one(&mut *c)
        .await
        .map_err(write_error)?;
    row::run(&r)
}

/// `sequence`: also move `last_event_sequence` to it (SQLite's unit of work writes the
/// sequences of its appends with the run's own update, [`crate::Tx::update_run`]).
pub(crate) async fn update_run<C: Db>(c: &mut C, run: &RunRow, sequence: Option<i64>) -> Result<()> {
    row::check_run_row_text(run)?;
    let text = match sequence {
        Some(_) => sql::UPDATE_RUN_AND_SEQUENCE,
        None => sql::UPDATE_RUN,
    };
    let mut q = query(text)
        .bind(run.id)
        .bind(run.status)
        .bind(run.deliverable_task_id)
        .bind(run.revision)
        .bind(&run.attention)
        .bind(run.started_at)
        .bind(run.ended_at)
        .bind(run.default_runner_id);
    if let Some(sequence) = sequence {
        q = q.bind(sequence);
    }
    let done = q.execute(&mut *c).await.map_err(write_error)?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound(format!("run {}", run.id)));
    }
    Ok(())
}

pub(crate) async fn run_by_id<C: Db>(c: &mut C, id: i64) -> Result<Option<RunRow>> {
    query(sql::RUN_BY_ID)
        .bind(id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::run(&r))
        .transpose()
}

pub(crate) async fn lock_run<C: Db>(c: &mut C, id: i64) -> Result<RunRow> {
    let r = query(C::LOCK_RUN).bind(id).fetch_optional(&mut *c).await?;
    match r {
        Some(r) => row::run(&r),
        None => Err(StoreError::NotFound(format!("run {id}"))),
    }
}

/// [`crate::Tx::hold_unreadable_run`]: reads and writes the columns it needs only.
pub(crate) async fn hold_unreadable_run<C: Db>(c: &mut C, id: i64, reason: &str, at: i64) -> Result<bool> {
    use crate::row::Columns;
    let Some(r) = query(sql::RUN_STATUS_WORD).bind(id).fetch_optional(&mut *c).await? else {
        return Ok(false);
    };
    let from = r.text("status")?;
    if !["pending", "running", "canceling"].contains(&from.as_str()) {
        return Ok(false);
    }
    let attention = serde_json::json!({"reason": reason, "task_key": null}).to_string();
    let Some(r) = query(sql::HOLD_UNREADABLE_RUN)
        .bind(id)
        .bind(attention)
        .bind(&from)
        .fetch_optional(&mut *c)
        .await
        .map_err(write_error)?
    else {
        return Ok(false);
    };
    let data = serde_json::json!({"from": from, "to": RunStatus::NeedsAttention, "reason": reason});
    query(sql::APPEND_EVENT_AT_SQLITE)
        .bind(id)
        .bind(r.int("last_event_sequence")?)
        .bind(crate::EventKind::RunStatusChanged)
        .bind(at)
        .bind(None::<String>)
        .bind(data.to_string())
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(true)
}

pub(crate) async fn try_lock_run<C: Db>(c: &mut C, id: i64) -> Result<Option<RunRow>> {
    query(C::TRY_LOCK_RUN)
        .bind(id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::run(&r))
        .transpose()
}

/// The run `public_id` with its workspace's public id and its creator's standing, when that
/// workspace belongs to `account_id`.
pub(crate) async fn run_in_account<C: Db>(
    c: &mut C,
    public_id: uuid::Uuid,
    account_id: i64,
) -> Result<Option<RunInAccount>> {
    run_in_account_by(c, sql::RUN_IN_ACCOUNT, public_id, account_id).await
}

/// [`run_in_account`] through `statement`, a `run_in_account_select!` text.
pub(crate) async fn run_in_account_by<C: Db>(
    c: &mut C,
    statement: &'static str,
    public_id: uuid::Uuid,
    account_id: i64,
) -> Result<Option<RunInAccount>> {
    use crate::row::Columns;
    let Some(r) = query(statement)
        .bind(uid(public_id))
        .bind(account_id)
        .fetch_optional(&mut *c)
        .await?
    else {
        return Ok(None);
    };
    let Some(workspace_public_id) = r.opt_public_id("workspace_public_id")? else {
        return Ok(None);
    };
    Ok(Some(RunInAccount {
        run: row::run(&r)?,
        workspace_public_id,
        creator_standing: r.opt_text("creator_standing")?.map(|s| row::standing(&s)).transpose()?,
    }))
}

pub(crate) async fn run_by_public_id<C: Db>(c: &mut C, public_id: uuid::Uuid) -> Result<Option<RunRow>> {
    query(sql::RUN_BY_PUBLIC_ID)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::run(&r))
        .transpose()
}

pub(crate) async fn runs_of_workspace<C: Db>(
    c: &mut C,
    workspace_id: i64,
    status: Option<RunStatus>,
    after_id: i64,
    limit: i64,
    newest_first: bool,
) -> Result<Vec<RunRow>> {
    let (all, of_status) = if newest_first {
        (sql::RUNS_OF_WORKSPACE_DESC, sql::RUNS_OF_WORKSPACE_DESC_STATUS)
    } else {
        (sql::RUNS_OF_WORKSPACE, sql::RUNS_OF_WORKSPACE_STATUS)
    };
    let rows = match status {
        Some(status) => {
            query(of_status)
                .bind(workspace_id)
                .bind(after_id)
                .bind(limit)
                .bind(status)
                .fetch_all(&mut *c)
                .await?
        }
        None => {
            query(all)
                .bind(workspace_id)
                .bind(after_id)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?
        }
    };
    rows.iter().map(row::run).collect()
}
// ---- jobs ----

pub(crate) async fn insert_job<C: Db>(c: &mut C, new: &NewJob) -> Result<i64> {
    let id: i64 = query_scalar(sql::INSERT_JOB)
        .bind(new.kind)
        .bind(new.run_id)
        .bind(new.task_id)
        .bind(new.generation)
        .bind(new.available_at)
        .fetch_one(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(id)
}

pub(crate) async fn delete_job<C: Db>(c: &mut C, job_id: i64) -> Result<bool> {
    let done = query(sql::DELETE_JOB)
        .bind(job_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn job_by_id<C: Db>(c: &mut C, job_id: i64) -> Result<Option<JobRow>> {
    query(sql::JOB_BY_ID)
        .bind(job_id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::job(&r))
        .transpose()
}

pub(crate) async fn dequeue_jobs<C: Db>(
    c: &mut C,
    node_id: &str,
    now: i64,
    lease_ms: i64,
    limit: i64,
) -> Result<Dequeued> {
    check_text(node_id)?;
    let rows = query(C::DEQUEUE_JOBS)
        .bind(node_id)
        .bind(now.saturating_add(lease_ms))
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *c)
        .await
        .map_err(write_error)?;
    row::dequeued(&rows)
}

pub(crate) async fn renew_job_lease<C: Db>(
    c: &mut C,
    job_id: i64,
    node_id: &str,
    now: i64,
    lease_ms: i64,
) -> Result<bool> {
    check_text(node_id)?;
    let done = query(sql::RENEW_JOB_LEASE)
        .bind(job_id)
        .bind(node_id)
        .bind(now.saturating_add(lease_ms))
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn release_node_leases<C: Db>(c: &mut C, node_id: &str) -> Result<u64> {
    check_text(node_id)?;
    let done = query(sql::RELEASE_NODE_LEASES)
        .bind(node_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected())
}

pub(crate) async fn requeue_job<C: Db>(c: &mut C, job_id: i64, available_at: i64) -> Result<bool> {
    let done = query(sql::REQUEUE_JOB)
        .bind(job_id)
        .bind(available_at)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}
// ---- idempotency receipts ----

pub(crate) async fn idempotency_get<C: Db>(c: &mut C, scope_hash: &str, now: i64) -> Result<Option<ReceiptRow>> {
    if check_text(scope_hash).is_err() {
        return Ok(None);
    }
    query(sql::RECEIPT_GET)
        .bind(scope_hash)
        .bind(now)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::receipt(&r))
        .transpose()
}

pub(crate) async fn idempotency_put<C: Db>(c: &mut C, new: &NewReceipt) -> Result<ReceiptRow> {
    check_text(&new.scope_hash)?;
    check_text(&new.envelope_sha256)?;
    check_text(&new.body)?;
    // An expired receipt frees its scope.
    query(sql::RECEIPT_DROP_EXPIRED_SCOPE)
        .bind(&new.scope_hash)
        .bind(new.created_at)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    let r = query(sql::RECEIPT_PUT)
        .bind(&new.scope_hash)
        .bind(&new.envelope_sha256)
        .bind(new.status)
        .bind(&new.body)
        .bind(new.expires_at)
        .bind(new.created_at)
        .fetch_optional(&mut *c)
        .await
        .map_err(write_error)?;
    match r {
        Some(r) => row::receipt(&r),
        None => Err(StoreError::Conflict(format!(
            "{} {}",
            crate::RECEIPT_TAKEN,
            new.scope_hash
        ))),
    }
}

pub(crate) async fn purge_idempotency_receipts<C: Db>(c: &mut C, now: i64) -> Result<u64> {
    let done = query(sql::RECEIPTS_PURGE)
        .bind(now)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected())
}

/// The runs operations on the store (see `crate::ops`).
#[allow(async_fn_in_trait)]
pub trait RunStore {
    async fn run_by_id(&self, id: i64) -> Result<Option<RunRow>>;
    async fn run_by_public_id(&self, public_id: Uuid) -> Result<Option<RunRow>>;
    /// The run `public_id` with its workspace's public id and its creator's standing, when that
    /// workspace belongs to `account_id` (one read; `None` for an unknown run or another
    /// account's).
    async fn run_in_account(&self, public_id: Uuid, account_id: i64) -> Result<Option<RunInAccount>>;
    /// The workspace's runs with `id > after_id` (optionally of one status), by id, at most
    /// `limit`.
    async fn runs_of_workspace(
        &self,
        workspace_id: i64,
        status: Option<RunStatus>,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<RunRow>>;
    /// The workspace's runs with `id < before_id` (optionally of one status), newest first, at
    /// most `limit` (`GET W/runs?order=desc`; pass `i64::MAX` for the first page).
    async fn runs_of_workspace_newest(
        &self,
        workspace_id: i64,
        status: Option<RunStatus>,
        before_id: i64,
        limit: i64,
    ) -> Result<Vec<RunRow>>;
    async fn job_by_id(&self, job_id: i64) -> Result<Option<JobRow>>;
    /// Leases up to `limit` jobs with `available_at <= now` and no live lease
    /// (`locked_until IS NULL OR locked_until < now`) to `node_id` until `now + lease_ms`,
    /// counting an attempt on each; by id. PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite: one
    /// `UPDATE … RETURNING` in `BEGIN IMMEDIATE`. No job goes to two nodes at once. A leased
    /// row whose kind does not read is answered in [`Dequeued::unreadable`], not as an error:
    /// the caller holds its run and removes it.
    async fn dequeue_jobs(&self, node_id: &str, now: i64, lease_ms: i64, limit: i64) -> Result<Dequeued>;
    /// Extends the lease to `now + lease_ms` when `node_id` still holds it; false otherwise.
    async fn renew_job_lease(&self, job_id: i64, node_id: &str, now: i64, lease_ms: i64) -> Result<bool>;
    /// Clears every lease held by `node_id` (at start: an earlier process of this node is
    /// gone). Returns how many were released.
    async fn release_node_leases(&self, node_id: &str) -> Result<u64>;
    /// Unlocks the job and makes it available at `available_at` (a retry later).
    async fn requeue_job(&self, job_id: i64, available_at: i64) -> Result<bool>;
    /// Deletes the job; false when it was already gone.
    async fn delete_job(&self, job_id: i64) -> Result<bool>;
    /// The unexpired receipt (`expires_at > now`) of the scope.
    async fn idempotency_get(&self, scope_hash: &str, now: i64) -> Result<Option<ReceiptRow>>;
    /// Deletes receipts with `expires_at <= now`; returns how many.
    async fn purge_idempotency_receipts(&self, now: i64) -> Result<u64>;
}

impl RunStore for Store {
    async fn run_by_id(&self, id: i64) -> Result<Option<RunRow>> {
        on_conn!(self, read, |c| run_by_id(c, id))
    }
    async fn run_by_public_id(&self, public_id: Uuid) -> Result<Option<RunRow>> {
        on_conn!(self, read, |c| run_by_public_id(c, public_id))
    }
    async fn run_in_account(&self, public_id: Uuid, account_id: i64) -> Result<Option<RunInAccount>> {
        on_conn!(self, read, |c| run_in_account(c, public_id, account_id))
    }
    async fn runs_of_workspace(
        &self,
        workspace_id: i64,
        status: Option<RunStatus>,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<RunRow>> {
        on_conn!(self, read, |c| runs_of_workspace(
            c,
            workspace_id,
            status,
            after_id,
            limit,
            false,
        ))
    }
    async fn runs_of_workspace_newest(
        &self,
        workspace_id: i64,
        status: Option<RunStatus>,
        before_id: i64,
        limit: i64,
    ) -> Result<Vec<RunRow>> {
        on_conn!(self, read, |c| runs_of_workspace(
            c,
            workspace_id,
            status,
            before_id,
            limit,
            true,
        ))
    }
    async fn job_by_id(&self, job_id: i64) -> Result<Option<JobRow>> {
        on_conn!(self, read, |c| job_by_id(c, job_id))
    }
    async fn dequeue_jobs(&self, node_id: &str, now: i64, lease_ms: i64, limit: i64) -> Result<Dequeued> {
        // One statement, atomic on its own (and, on SQLite, behind the writer gate like
        // every write of this process): no explicit transaction around it.
        on_conn!(self, write, |c| dequeue_jobs(c, node_id, now, lease_ms, limit))
    }
    async fn renew_job_lease(&self, job_id: i64, node_id: &str, now: i64, lease_ms: i64) -> Result<bool> {
        on_conn!(self, write, |c| renew_job_lease(c, job_id, node_id, now, lease_ms))
    }
    async fn release_node_leases(&self, node_id: &str) -> Result<u64> {
        on_conn!(self, write, |c| release_node_leases(c, node_id))
    }
    async fn requeue_job(&self, job_id: i64, available_at: i64) -> Result<bool> {
        on_conn!(self, write, |c| requeue_job(c, job_id, available_at))
    }
    async fn delete_job(&self, job_id: i64) -> Result<bool> {
        on_conn!(self, write, |c| delete_job(c, job_id))
    }
    async fn idempotency_get(&self, scope_hash: &str, now: i64) -> Result<Option<ReceiptRow>> {
        on_conn!(self, read, |c| idempotency_get(c, scope_hash, now))
    }
    async fn purge_idempotency_receipts(&self, now: i64) -> Result<u64> {
        on_conn!(self, write, |c| purge_idempotency_receipts(c, now))
    }
}
