//! Executors, their announcements and credentials (migrations 0001, 0013), written once for both
//! engines. A transport request's principal is served from [`crate::principals`] while
//! `principal_version` holds.

/// The executor operations, expanded inside each engine's `ops` module (see [`crate::ops`]).
macro_rules! executor_ops {
    () => {
        use $crate::sql as esql;

        // ---- executors ----

        pub(crate) async fn create_runner(c: &mut Conn, new: &NewRunner) -> Result<ExecutorRow> {
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

        pub(crate) async fn executor_by_id(c: &mut Conn, id: i64) -> Result<Option<ExecutorRow>> {
            query(esql::EXECUTOR_BY_ID)
                .bind(id)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::executor(&r))
                .transpose()
        }

        pub(crate) async fn executor_by_public_id(c: &mut Conn, public_id: uuid::Uuid) -> Result<Option<ExecutorRow>> {
            query(esql::EXECUTOR_BY_PUBLIC_ID)
                .bind(uid(public_id))
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::executor(&r))
                .transpose()
        }

        pub(crate) async fn active_runner_by_name(
            c: &mut Conn,
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

        pub(crate) async fn agent_application_of(c: &mut Conn, agent_member_id: i64) -> Result<Option<ExecutorRow>> {
            query(esql::AGENT_APPLICATION_OF)
                .bind(agent_member_id)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::executor(&r))
                .transpose()
        }

        pub(crate) async fn list_executors(
            c: &mut Conn,
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
            rows.iter().map(|r| row::executor(r)).collect()
        }

        pub(crate) async fn advance_executor_epoch(c: &mut Conn, executor_id: i64) -> Result<i64> {
            let epoch: Option<i64> = query_scalar(esql::ADVANCE_EPOCH)
                .bind(executor_id)
                .fetch_optional(&mut *c)
                .await
                .map_err(write_error)?;
            epoch.ok_or_else(|| StoreError::NotFound(format!("executor {executor_id}")))
        }

        pub(crate) async fn revoke_executor(c: &mut Conn, executor_id: i64) -> Result<()> {
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

        pub(crate) async fn mark_executor_seen(c: &mut Conn, executor_id: i64, now: i64) -> Result<()> {
            query(esql::MARK_EXECUTOR_SEEN)
                .bind(now)
                .bind(executor_id)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(())
        }

        pub(crate) async fn put_announcement(
            c: &mut Conn,
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

        pub(crate) async fn insert_credential(c: &mut Conn, new: &NewCredential) -> Result<CredentialRow> {
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

        pub(crate) async fn credential_by_public_id(
            c: &mut Conn,
            public_id: uuid::Uuid,
        ) -> Result<Option<CredentialRow>> {
            query(esql::CREDENTIAL_BY_PUBLIC_ID)
                .bind(uid(public_id))
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::credential(&r))
                .transpose()
        }

        /// The credential with its executor's row, and the `principal_version` they were read
        /// at (`None` when the version row is missing: nothing may then be kept).
        pub(crate) async fn credential_with_executor(
            c: &mut Conn,
            public_id: uuid::Uuid,
        ) -> Result<Option<(Option<i64>, $crate::principals::Principal)>> {
            query(esql::CREDENTIAL_WITH_EXECUTOR)
                .bind(uid(public_id))
                .fetch_optional_as(&mut *c, |r| row::credential_with_executor(r))
                .await
        }

        pub(crate) async fn principal_version(c: &mut Conn) -> Result<Option<i64>> {
            Ok(query_scalar(esql::PRINCIPAL_VERSION)
                .fetch_optional(&mut *c)
                .await?)
        }

        pub(crate) async fn revoke_credential(c: &mut Conn, public_id: uuid::Uuid, now: i64) -> Result<bool> {
            let done = query(esql::REVOKE_CREDENTIAL)
                .bind(now)
                .bind(uid(public_id))
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(done.rows_affected() > 0)
        }

        pub(crate) async fn has_transport_credential_at(
            c: &mut Conn,
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
    };
}
pub(crate) use executor_ops;

/// The executor [`crate::Engine`] methods of one engine, over its pool (see [`crate::ops`]).
macro_rules! executor_methods {
    () => {
        async fn create_runner(&self, new: NewRunner) -> Result<ExecutorRow> {
            ops::create_runner(&mut *self.write_conn().await?, &new).await
        }
        async fn executor_by_id(&self, id: i64) -> Result<Option<ExecutorRow>> {
            ops::executor_by_id(&mut *self.pool.acquire().await?, id).await
        }
        async fn executor_by_public_id(&self, public_id: Uuid) -> Result<Option<ExecutorRow>> {
            ops::executor_by_public_id(&mut *self.pool.acquire().await?, public_id).await
        }
        async fn active_runner_by_name(
            &self,
            account_id: i64,
            manager_id: i64,
            name: &str,
        ) -> Result<Option<ExecutorRow>> {
            ops::active_runner_by_name(&mut *self.pool.acquire().await?, account_id, manager_id, name).await
        }
        async fn agent_application_of(&self, agent_member_id: i64) -> Result<Option<ExecutorRow>> {
            ops::agent_application_of(&mut *self.pool.acquire().await?, agent_member_id).await
        }
        async fn list_executors(&self, account_id: i64, kind: Option<ExecutorKind>) -> Result<Vec<ExecutorRow>> {
            ops::list_executors(&mut *self.pool.acquire().await?, account_id, kind).await
        }
        async fn advance_executor_epoch(&self, executor_id: i64) -> Result<i64> {
            ops::advance_executor_epoch(&mut *self.write_conn().await?, executor_id).await
        }
        async fn revoke_executor(&self, executor_id: i64, _now: i64) -> Result<()> {
            ops::revoke_executor(&mut *self.write_conn().await?, executor_id).await
        }
        async fn put_announcement(&self, executor_id: i64, announcement: &Announcement, now: i64) -> Result<()> {
            ops::put_announcement(&mut *self.write_conn().await?, executor_id, announcement, now).await
        }
        async fn mark_executor_seen(&self, executor_id: i64, now: i64) -> Result<()> {
            ops::mark_executor_seen(&mut *self.write_conn().await?, executor_id, now).await
        }
        async fn insert_credential(&self, new: NewCredential) -> Result<CredentialRow> {
            ops::insert_credential(&mut *self.write_conn().await?, &new).await
        }
        async fn credential_by_public_id(&self, public_id: Uuid) -> Result<Option<CredentialRow>> {
            ops::credential_by_public_id(&mut *self.pool.acquire().await?, public_id).await
        }
        /// Served from the engine's [`crate::principals::Principals`] while the version read
        /// now is the one the kept pair was read at; otherwise read (and kept) afresh.
        async fn credential_with_executor(
            &self,
            public_id: Uuid,
        ) -> Result<Option<(CredentialRow, Option<ExecutorRow>)>> {
            let mut c = self.pool.acquire().await?;
            if self.principals.keeps(public_id)
                && let Some(version) = ops::principal_version(&mut *c).await?
                && let Some(pair) = self.principals.get(public_id, version)
            {
                return Ok(Some(pair));
            }
            let found = ops::credential_with_executor(&mut *c, public_id).await?;
            Ok(found.map(|(version, pair)| {
                if let Some(version) = version {
                    self.principals.keep(public_id, version, &pair);
                }
                pair
            }))
        }
        async fn revoke_credential(&self, public_id: Uuid, now: i64) -> Result<bool> {
            ops::revoke_credential(&mut *self.write_conn().await?, public_id, now).await
        }
        async fn has_transport_credential_at(&self, executor_id: i64, epoch: i64, now: i64) -> Result<bool> {
            ops::has_transport_credential_at(&mut *self.pool.acquire().await?, executor_id, epoch, now).await
        }
    };
}
pub(crate) use executor_methods;
