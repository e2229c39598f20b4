//! Executors, their announcements and credentials (migrations 0001, 0013), written once for both
//! engines. A transport request's principal is served from [`crate::principals`] while
//! `principal_version` holds.

use crate::model::*;
use crate::ops::db::{Db, query, query_scalar, uid};
use crate::ops::on_conn;
use crate::row;
use crate::sql as esql;
use crate::{Result, Store, StoreError, check_text, write_error};
use uuid::Uuid;

// ---- executors ----

pub(crate) async fn create_runner<C: Db>(c: &mut C, new: &NewRunner) -> Result<ExecutorRow> {
    check_text(&new.display_name)?;
    let r = query(esql::INSERT_EXECUTOR)
        .bind(uid(new.public_id))
        .bind(new.account_id)
        .bind(ExecutorKind::Runner.as_str())
        .bind(&new.display_name)
        .bind(new.assignment_scope.as_str())
        .bind(new.manager_id)
        .bind(None::<i64>)
        .bind(new.now)
        .fetch_one(&mut *c)
        .await
        .map_err(write_error)?;
    row::executor(&r)
}

pub(crate) async fn executor_by_id<C: Db>(c: &mut C, id: i64) -> Result<Option<ExecutorRow>> {
    query(esql::EXECUTOR_BY_ID)
        .bind(id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::executor(&r))
        .transpose()
}

pub(crate) async fn executor_by_public_id<C: Db>(c: &mut C, public_id: uuid::Uuid) -> Result<Option<ExecutorRow>> {
    query(esql::EXECUTOR_BY_PUBLIC_ID)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::executor(&r))
        .transpose()
}

pub(crate) async fn active_runner_by_name<C: Db>(
    c: &mut C,
    account_id: i64,
    manager_id: i64,
    name: &str,
) -> Result<Option<ExecutorRow>> {
    if check_text(name).is_err() {
        return Ok(None);
    }
    query(esql::ACTIVE_RUNNER_BY_NAME)
        .bind(account_id)
        .bind(manager_id)
        .bind(name)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::executor(&r))
        .transpose()
}

pub(crate) async fn agent_application_of<C: Db>(c: &mut C, agent_member_id: i64) -> Result<Option<ExecutorRow>> {
    query(esql::AGENT_APPLICATION_OF)
        .bind(agent_member_id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::executor(&r))
        .transpose()
}

pub(crate) async fn list_executors<C: Db>(
    c: &mut C,
    account_id: i64,
    kind: Option<ExecutorKind>,
) -> Result<Vec<ExecutorRow>> {
    let rows = match kind {
        Some(kind) => {
            query(esql::EXECUTORS_OF_ACCOUNT_KIND)
                .bind(account_id)
                .bind(kind.as_str())
                .fetch_all(&mut *c)
                .await?
        }
        None => {
            query(esql::EXECUTORS_OF_ACCOUNT)
                .bind(account_id)
                .fetch_all(&mut *c)
                .await?
        }
    };
    rows.iter().map(row::executor).collect()
}

pub(crate) async fn advance_executor_epoch<C: Db>(c: &mut C, executor_id: i64) -> Result<i64> {
    let epoch: Option<i64> = query_scalar(esql::ADVANCE_EPOCH)
        .bind(executor_id)
        .fetch_optional(&mut *c)
        .await
        .map_err(write_error)?;
    epoch.ok_or_else(|| StoreError::NotFound(format!("executor {executor_id}")))
}

pub(crate) async fn revoke_executor<C: Db>(c: &mut C, executor_id: i64) -> Result<()> {
    let done = query(esql::REVOKE_EXECUTOR)
        .bind(executor_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound(format!("executor {executor_id}")));
    }
    Ok(())
}

// ---- announcements ----

pub(crate) async fn mark_executor_seen<C: Db>(c: &mut C, executor_id: i64, now: i64) -> Result<()> {
    query(esql::MARK_EXECUTOR_SEEN)
        .bind(now)
        .bind(executor_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(())
}

pub(crate) async fn put_announcement<C: Db>(
    c: &mut C,
    executor_id: i64,
    announcement: &Announcement,
    now: i64,
) -> Result<()> {
    row::check_announcement_text(announcement)?;
    let done = query(esql::PUT_ANNOUNCEMENT)
        .bind(&announcement.served_tools)
        .bind(&announcement.environment)
        .bind(&announcement.served_documents)
        .bind(now)
        .bind(executor_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound(format!("executor {executor_id}")));
    }
    Ok(())
}

// ---- credentials ----

pub(crate) async fn insert_credential<C: Db>(c: &mut C, new: &NewCredential) -> Result<CredentialRow> {
    check_text(&new.secret_sha256)?;
    let r = query(esql::INSERT_CREDENTIAL)
        .bind(uid(new.public_id))
        .bind(new.plane.as_str())
        .bind(new.member_id)
        .bind(new.executor_id)
        .bind(new.epoch)
        .bind(&new.secret_sha256)
        .bind(new.expires_at)
        .bind(new.now)
        .fetch_one(&mut *c)
        .await
        .map_err(write_error)?;
    row::credential(&r)
}

pub(crate) async fn credential_by_public_id<C: Db>(c: &mut C, public_id: uuid::Uuid) -> Result<Option<CredentialRow>> {
    query(esql::CREDENTIAL_BY_PUBLIC_ID)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::credential(&r))
        .transpose()
}

/// The credential with its executor's row, and the `principal_version` they were read
/// at (`None` when the version row is missing: nothing may then be kept).
pub(crate) async fn credential_with_executor<C: Db>(
    c: &mut C,
    public_id: uuid::Uuid,
) -> Result<Option<(Option<i64>, crate::principals::Principal)>> {
    query(esql::CREDENTIAL_WITH_EXECUTOR)
        .bind(uid(public_id))
        .fetch_optional_as(&mut *c, |r| row::credential_with_executor(r))
        .await
}

pub(crate) async fn principal_version<C: Db>(c: &mut C) -> Result<Option<i64>> {
    Ok(query_scalar(esql::PRINCIPAL_VERSION).fetch_optional(&mut *c).await?)
}

pub(crate) async fn revoke_credential<C: Db>(c: &mut C, public_id: uuid::Uuid, now: i64) -> Result<bool> {
    let done = query(esql::REVOKE_CREDENTIAL)
        .bind(now)
        .bind(uid(public_id))
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn has_transport_credential_at<C: Db>(
    c: &mut C,
    executor_id: i64,
    epoch: i64,
    now: i64,
) -> Result<bool> {
    let found = query(esql::HAS_TRANSPORT_CREDENTIAL_AT)
        .bind(executor_id)
        .bind(epoch)
        .bind(now)
        .fetch_optional(&mut *c)
        .await?;
    Ok(found.is_some())
}

/// The executors operations on the store (see `crate::ops`).
#[allow(async_fn_in_trait)]
pub trait ExecutorStore {
    /// Registers a runner. Only one non-revoked runner may exist per (account, manager,
    /// display_name): a second is `StoreError::Conflict`.
    async fn create_runner(&self, new: NewRunner) -> Result<ExecutorRow>;
    async fn executor_by_id(&self, id: i64) -> Result<Option<ExecutorRow>>;
    async fn executor_by_public_id(&self, public_id: Uuid) -> Result<Option<ExecutorRow>>;
    /// The non-revoked runner with this registration name under this manager.
    async fn active_runner_by_name(&self, account_id: i64, manager_id: i64, name: &str) -> Result<Option<ExecutorRow>>;
    /// The agent_application executor of an agent member.
    async fn agent_application_of(&self, agent_member_id: i64) -> Result<Option<ExecutorRow>>;
    /// Every executor of the account (optionally of one kind), ordered by id.
    async fn list_executors(&self, account_id: i64, kind: Option<ExecutorKind>) -> Result<Vec<ExecutorRow>>;
    /// Increments `credential_epoch` and returns the new epoch; older transport credentials
    /// are fenced from then on.
    async fn advance_executor_epoch(&self, executor_id: i64) -> Result<i64>;
    /// Marks the executor `revoked`.
    async fn revoke_executor(&self, executor_id: i64, now: i64) -> Result<()>;
    /// Replaces the stored announcement whole and sets `last_seen_at = now`.
    async fn put_announcement(&self, executor_id: i64, announcement: &Announcement, now: i64) -> Result<()>;
    /// Sets `last_seen_at = now` (the executor's push channel opened or closed).
    async fn mark_executor_seen(&self, executor_id: i64, now: i64) -> Result<()>;
    async fn insert_credential(&self, new: NewCredential) -> Result<CredentialRow>;
    async fn credential_by_public_id(&self, public_id: Uuid) -> Result<Option<CredentialRow>>;
    /// The credential with its executor's row (`None` beside a member credential), in one read.
    async fn credential_with_executor(&self, public_id: Uuid) -> Result<Option<(CredentialRow, Option<ExecutorRow>)>>;
    /// Sets `revoked_at`; returns false when the credential does not exist or was revoked.
    async fn revoke_credential(&self, public_id: Uuid, now: i64) -> Result<bool>;
    /// Whether a non-revoked, unexpired transport credential exists at `epoch`.
    async fn has_transport_credential_at(&self, executor_id: i64, epoch: i64, now: i64) -> Result<bool>;
}

impl ExecutorStore for Store {
    async fn create_runner(&self, new: NewRunner) -> Result<ExecutorRow> {
        on_conn!(self, write, |c| create_runner(c, &new))
    }
    async fn executor_by_id(&self, id: i64) -> Result<Option<ExecutorRow>> {
        on_conn!(self, read, |c| executor_by_id(c, id))
    }
    async fn executor_by_public_id(&self, public_id: Uuid) -> Result<Option<ExecutorRow>> {
        on_conn!(self, read, |c| executor_by_public_id(c, public_id))
    }
    async fn active_runner_by_name(&self, account_id: i64, manager_id: i64, name: &str) -> Result<Option<ExecutorRow>> {
        on_conn!(self, read, |c| active_runner_by_name(c, account_id, manager_id, name))
    }
    async fn agent_application_of(&self, agent_member_id: i64) -> Result<Option<ExecutorRow>> {
        on_conn!(self, read, |c| agent_application_of(c, agent_member_id))
    }
    async fn list_executors(&self, account_id: i64, kind: Option<ExecutorKind>) -> Result<Vec<ExecutorRow>> {
        on_conn!(self, read, |c| list_executors(c, account_id, kind))
    }
    async fn advance_executor_epoch(&self, executor_id: i64) -> Result<i64> {
        on_conn!(self, write, |c| advance_executor_epoch(c, executor_id))
    }
    async fn revoke_executor(&self, executor_id: i64, _now: i64) -> Result<()> {
        on_conn!(self, write, |c| revoke_executor(c, executor_id))
    }
    async fn put_announcement(&self, executor_id: i64, announcement: &Announcement, now: i64) -> Result<()> {
        on_conn!(self, write, |c| put_announcement(c, executor_id, announcement, now))
    }
    async fn mark_executor_seen(&self, executor_id: i64, now: i64) -> Result<()> {
        on_conn!(self, write, |c| mark_executor_seen(c, executor_id, now))
    }
    async fn insert_credential(&self, new: NewCredential) -> Result<CredentialRow> {
        on_conn!(self, write, |c| insert_credential(c, &new))
    }
    async fn credential_by_public_id(&self, public_id: Uuid) -> Result<Option<CredentialRow>> {
        on_conn!(self, read, |c| credential_by_public_id(c, public_id))
    }
    /// Served from the engine's [`crate::principals::Principals`] while the version read
    /// now is the one the kept pair was read at; otherwise read (and kept) afresh.
    async fn credential_with_executor(&self, public_id: Uuid) -> Result<Option<(CredentialRow, Option<ExecutorRow>)>> {
        let principals = self.principals();
        on_conn!(self, read, |c| credential_with_executor_kept(c, principals, public_id))
    }
    async fn revoke_credential(&self, public_id: Uuid, now: i64) -> Result<bool> {
        on_conn!(self, write, |c| revoke_credential(c, public_id, now))
    }
    async fn has_transport_credential_at(&self, executor_id: i64, epoch: i64, now: i64) -> Result<bool> {
        on_conn!(self, read, |c| has_transport_credential_at(c, executor_id, epoch, now))
    }
}

/// [`ExecutorStore::credential_with_executor`] over `c`: the kept pair while the version read
/// now is the one it was read at; otherwise read (and kept) afresh.
async fn credential_with_executor_kept<C: Db>(
    c: &mut C,
    principals: &crate::principals::Principals,
    public_id: Uuid,
) -> Result<Option<(CredentialRow, Option<ExecutorRow>)>> {
    if principals.keeps(public_id)
        && let Some(version) = principal_version(c).await?
        && let Some(pair) = principals.get(public_id, version)
    {
        return Ok(Some(pair));
    }
    let found = credential_with_executor(c, public_id).await?;
    Ok(found.map(|(version, pair)| {
        if let Some(version) = version {
            principals.keep(public_id, version, &pair);
        }
        pair
    }))
}
