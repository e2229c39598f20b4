//! The [`Engine`] implementation of the SQLite store.

use uuid::Uuid;

use super::driver::{self, query, query_scalar};
use super::migrate::{MIGRATOR, applied_migrations, pending_of};
use super::{SqliteStore, id_text, ops};
use crate::model::*;
use crate::row;
use crate::{Engine, Result, StoreError, check_text, sql, write_error};

impl SqliteStore {
    async fn one_member(&self, q: driver::Query<'_>) -> Result<Option<MemberRow>> {
        q.fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::member(&r))
            .transpose()
    }

    async fn one_executor(&self, q: driver::Query<'_>) -> Result<Option<ExecutorRow>> {
        q.fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::executor(&r))
            .transpose()
    }
}

impl Engine for SqliteStore {
    async fn migrate(&self) -> Result<()> {
        let mut conn = self.gate().await?;
        Self::migrate_now(&mut conn)
    }

    async fn pending_migrations(&self) -> Result<usize> {
        let mut conn = self.pool.acquire().await?;
        let applied: Vec<i64> = applied_migrations(&mut conn)?.into_iter().map(|(v, _, _)| v).collect();
        Ok(pending_of(&MIGRATOR, &applied))
    }

    async fn ensure_account(&self, public_id: Uuid, handle: &str, now: i64) -> Result<AccountRow> {
        let mut conn = self.write_conn().await?;
        check_text(handle)?;
        query(sql::INSERT_ACCOUNT)
            .bind(id_text(public_id))
            .bind(handle)
            .bind(now)
            .execute(&mut conn)
            .await
            .map_err(write_error)?;
        let r = query(sql::ACCOUNT_BY_HANDLE).bind(handle).fetch_one(&mut conn).await?;
        row::account(&r)
    }

    async fn account_by_id(&self, id: i64) -> Result<Option<AccountRow>> {
        query(sql::ACCOUNT_BY_ID)
            .bind(id)
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::account(&r))
            .transpose()
    }

    async fn ensure_workspace(&self, public_id: Uuid, account_id: i64, handle: &str, now: i64) -> Result<WorkspaceRow> {
        let mut conn = self.write_conn().await?;
        check_text(handle)?;
        query(sql::INSERT_WORKSPACE)
            .bind(id_text(public_id))
            .bind(account_id)
            .bind(handle)
            .bind(now)
            .execute(&mut conn)
            .await
            .map_err(write_error)?;
        let r = query(sql::WORKSPACE_BY_HANDLE)
            .bind(account_id)
            .bind(handle)
            .fetch_one(&mut conn)
            .await?;
        row::workspace(&r)
    }

    async fn workspace_by_public_id(&self, public_id: Uuid) -> Result<Option<WorkspaceRow>> {
        query(sql::WORKSPACE_BY_PUBLIC_ID)
            .bind(id_text(public_id))
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::workspace(&r))
            .transpose()
    }

    async fn workspace_by_id(&self, id: i64) -> Result<Option<WorkspaceRow>> {
        query(sql::WORKSPACE_BY_ID)
            .bind(id)
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::workspace(&r))
            .transpose()
    }

    async fn set_standing(&self, workspace_id: i64, member_id: i64, standing: Standing) -> Result<()> {
        let mut conn = self.write_conn().await?;
        query(sql::UPSERT_STANDING)
            .bind(workspace_id)
            .bind(member_id)
            .bind(standing.as_str())
            .execute(&mut conn)
            .await
            .map_err(write_error)?;
        Ok(())
    }

    async fn standing(&self, workspace_id: i64, member_id: i64) -> Result<Option<Standing>> {
        let value: Option<String> = query_scalar(sql::STANDING)
            .bind(workspace_id)
            .bind(member_id)
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?;
        value.map(|v| row::standing(&v)).transpose()
    }

    async fn create_member(&self, new: NewMember) -> Result<(MemberRow, Option<ExecutorRow>)> {
        row::check_member_text(&new)?;
        let agent = row::agent_executor_of(&new)?;
        let mut tx = self.write_tx().await?;
        let r = query(sql::INSERT_MEMBER)
            .bind(id_text(new.public_id))
            .bind(new.account_id)
            .bind(new.kind.as_str())
            .bind(&new.handle)
            .bind(&new.display_name)
            .bind(&new.role)
            .bind(new.steward_id)
            .bind(new.now)
            .fetch_one(&mut tx)
            .await
            .map_err(write_error)?;
        let member = row::member(&r)?;
        let executor = match agent {
            Some((public_id, display_name, manager_id)) => {
                let r = query(sql::INSERT_EXECUTOR)
                    .bind(id_text(public_id))
                    .bind(new.account_id)
                    .bind(ExecutorKind::AgentApplication.as_str())
                    .bind(display_name)
                    .bind(AssignmentScope::UserPrivate.as_str())
                    .bind(manager_id)
                    .bind(member.id)
                    .bind(new.now)
                    .fetch_one(&mut tx)
                    .await
                    .map_err(write_error)?;
                Some(row::executor(&r)?)
            }
            None => None,
        };
        tx.commit().await.map_err(write_error)?;
        Ok((member, executor))
    }

    async fn member_by_public_id(&self, public_id: Uuid) -> Result<Option<MemberRow>> {
        self.one_member(query(sql::MEMBER_BY_PUBLIC_ID).bind(id_text(public_id)))
            .await
    }

    async fn member_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<MemberRow>> {
        if check_text(handle).is_err() {
            return Ok(None); // nothing stored holds U+0000
        }
        self.one_member(query(sql::MEMBER_BY_HANDLE).bind(account_id).bind(handle))
            .await
    }

    async fn set_member_configuration(&self, member_id: i64, configuration: Option<&str>, now: i64) -> Result<()> {
        let mut conn = self.write_conn().await?;
        if let Some(c) = configuration {
            check_text(c)?;
        }
        let done = query(sql::SET_MEMBER_CONFIGURATION)
            .bind(configuration)
            .bind(now)
            .bind(member_id)
            .execute(&mut conn)
            .await
            .map_err(write_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("member {member_id}")));
        }
        Ok(())
    }

    async fn create_runner(&self, new: NewRunner) -> Result<ExecutorRow> {
        let mut conn = self.write_conn().await?;
        check_text(&new.display_name)?;
        let r = query(sql::INSERT_EXECUTOR)
            .bind(id_text(new.public_id))
            .bind(new.account_id)
            .bind(ExecutorKind::Runner.as_str())
            .bind(&new.display_name)
            .bind(new.assignment_scope.as_str())
            .bind(new.manager_id)
            .bind(None::<i64>)
            .bind(new.now)
            .fetch_one(&mut conn)
            .await
            .map_err(write_error)?;
        row::executor(&r)
    }

    async fn executor_by_id(&self, id: i64) -> Result<Option<ExecutorRow>> {
        self.one_executor(query(sql::EXECUTOR_BY_ID).bind(id)).await
    }

    async fn executor_by_public_id(&self, public_id: Uuid) -> Result<Option<ExecutorRow>> {
        self.one_executor(query(sql::EXECUTOR_BY_PUBLIC_ID).bind(id_text(public_id)))
            .await
    }

    async fn active_runner_by_name(&self, account_id: i64, manager_id: i64, name: &str) -> Result<Option<ExecutorRow>> {
        if check_text(name).is_err() {
            return Ok(None);
        }
        self.one_executor(
            query(sql::ACTIVE_RUNNER_BY_NAME)
                .bind(account_id)
                .bind(manager_id)
                .bind(name),
        )
        .await
    }

    async fn agent_application_of(&self, agent_member_id: i64) -> Result<Option<ExecutorRow>> {
        self.one_executor(query(sql::AGENT_APPLICATION_OF).bind(agent_member_id))
            .await
    }

    async fn list_executors(&self, account_id: i64, kind: Option<ExecutorKind>) -> Result<Vec<ExecutorRow>> {
        let rows = match kind {
            Some(kind) => {
                query(sql::EXECUTORS_OF_ACCOUNT_KIND)
                    .bind(account_id)
                    .bind(kind.as_str())
                    .fetch_all(&mut *self.pool.acquire().await?)
                    .await?
            }
            None => {
                query(sql::EXECUTORS_OF_ACCOUNT)
                    .bind(account_id)
                    .fetch_all(&mut *self.pool.acquire().await?)
                    .await?
            }
        };
        rows.iter().map(row::executor).collect()
    }

    async fn advance_executor_epoch(&self, executor_id: i64) -> Result<i64> {
        let mut conn = self.write_conn().await?;
        let epoch: Option<i64> = query_scalar(sql::ADVANCE_EPOCH)
            .bind(executor_id)
            .fetch_optional(&mut conn)
            .await
            .map_err(write_error)?;
        epoch.ok_or_else(|| StoreError::NotFound(format!("executor {executor_id}")))
    }

    async fn revoke_executor(&self, executor_id: i64, _now: i64) -> Result<()> {
        let mut conn = self.write_conn().await?;
        let done = query(sql::REVOKE_EXECUTOR)
            .bind(executor_id)
            .execute(&mut conn)
            .await
            .map_err(write_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("executor {executor_id}")));
        }
        Ok(())
    }

    async fn put_announcement(&self, executor_id: i64, announcement: &Announcement, now: i64) -> Result<()> {
        let mut conn = self.write_conn().await?;
        row::check_announcement_text(announcement)?;
        let done = query(sql::PUT_ANNOUNCEMENT)
            .bind(&announcement.served_tools)
            .bind(&announcement.environment)
            .bind(&announcement.served_documents)
            .bind(now)
            .bind(executor_id)
            .execute(&mut conn)
            .await
            .map_err(write_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("executor {executor_id}")));
        }
        Ok(())
    }

    async fn insert_credential(&self, new: NewCredential) -> Result<CredentialRow> {
        let mut conn = self.write_conn().await?;
        check_text(&new.secret_sha256)?;
        let r = query(sql::INSERT_CREDENTIAL)
            .bind(id_text(new.public_id))
            .bind(new.plane.as_str())
            .bind(new.member_id)
            .bind(new.executor_id)
            .bind(new.epoch)
            .bind(&new.secret_sha256)
            .bind(new.expires_at)
            .bind(new.now)
            .fetch_one(&mut conn)
            .await
            .map_err(write_error)?;
        row::credential(&r)
    }

    async fn credential_by_public_id(&self, public_id: Uuid) -> Result<Option<CredentialRow>> {
        query(sql::CREDENTIAL_BY_PUBLIC_ID)
            .bind(id_text(public_id))
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::credential(&r))
            .transpose()
    }

    async fn revoke_credential(&self, public_id: Uuid, now: i64) -> Result<bool> {
        let mut conn = self.write_conn().await?;
        let done = query(sql::REVOKE_CREDENTIAL)
            .bind(now)
            .bind(id_text(public_id))
            .execute(&mut conn)
            .await
            .map_err(write_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn has_transport_credential_at(&self, executor_id: i64, epoch: i64, now: i64) -> Result<bool> {
        let found = query(sql::HAS_TRANSPORT_CREDENTIAL_AT)
            .bind(executor_id)
            .bind(epoch)
            .bind(now)
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?;
        Ok(found.is_some())
    }

    crate::ops::engine_methods!();
    crate::uploads::upload_methods!();
    crate::memory::memory_methods!();
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use crate::Store;

    /// The engines' dispatch keeps PostgreSQL's futures (sqlx's; about 8.7 KB each in a release
    /// build) boxed, so a store call's future on SQLite is about as small as the SQLite engine's
    /// own. Every kernel and handler future that awaits a store call carries it, and axum and
    /// tower move a handler's future several times per request.
    #[tokio::test]
    async fn the_engine_dispatch_does_not_size_sqlite_futures_by_postgres() {
        use crate::Engine;
        use std::mem::size_of_val;
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let id = uuid::Uuid::nil();
        let pairs = [
            (
                "credential_with_executor",
                size_of_val(&s.credential_with_executor(id)),
                size_of_val(&ts.store.credential_with_executor(id)),
            ),
            ("begin", size_of_val(&s.begin()), size_of_val(&ts.store.begin())),
        ];
        let mut tx = ts.store.begin().await.unwrap();
        let engine = {
            let crate::Tx::Sqlite(t) = &mut tx else { unreachable!() };
            size_of_val(&super::ops::lock_run(&mut t.tx, 1))
        };
        let unit = ("Tx::lock_run", engine, size_of_val(&tx.lock_run(1)));
        for (what, engine, dispatched) in pairs.into_iter().chain([unit]) {
            assert!(
                dispatched <= engine + 256,
                "{what}: the dispatched future is {dispatched} bytes, the SQLite engine's {engine}"
            );
        }
        tx.rollback().await.unwrap();
    }
}
