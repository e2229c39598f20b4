//! Accounts, workspaces, standing and members (migration 0001), written once for both engines.

/// The account operations, expanded inside each engine's `ops` module (see [`crate::ops`]).
macro_rules! account_ops {
    () => {
        use $crate::sql as asql;

        // ---- accounts and workspaces ----

        pub(crate) async fn ensure_account(
            c: &mut Conn,
            public_id: uuid::Uuid,
            handle: &str,
            now: i64,
        ) -> Result<AccountRow> {
            check_text(handle)?;
            query(asql::INSERT_ACCOUNT)
                .bind(uid(public_id))
                .bind(handle)
                .bind(now)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            let r = query(asql::ACCOUNT_BY_HANDLE)
                .bind(handle)
                .fetch_one(&mut *c)
                .await?;
            row::account(&r)
        }

        pub(crate) async fn account_by_id(c: &mut Conn, id: i64) -> Result<Option<AccountRow>> {
            query(asql::ACCOUNT_BY_ID)
                .bind(id)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::account(&r))
                .transpose()
        }

        pub(crate) async fn ensure_workspace(
            c: &mut Conn,
            public_id: uuid::Uuid,
            account_id: i64,
            handle: &str,
            now: i64,
        ) -> Result<WorkspaceRow> {
            check_text(handle)?;
            query(asql::INSERT_WORKSPACE)
                .bind(uid(public_id))
                .bind(account_id)
                .bind(handle)
                .bind(now)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            let r = query(asql::WORKSPACE_BY_HANDLE)
                .bind(account_id)
                .bind(handle)
                .fetch_one(&mut *c)
                .await?;
            row::workspace(&r)
        }

        pub(crate) async fn workspace_by_public_id(
            c: &mut Conn,
            public_id: uuid::Uuid,
        ) -> Result<Option<WorkspaceRow>> {
            query(asql::WORKSPACE_BY_PUBLIC_ID)
                .bind(uid(public_id))
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::workspace(&r))
                .transpose()
        }

        pub(crate) async fn workspace_by_id(c: &mut Conn, id: i64) -> Result<Option<WorkspaceRow>> {
            query(asql::WORKSPACE_BY_ID)
                .bind(id)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::workspace(&r))
                .transpose()
        }

        pub(crate) async fn workspace_by_handle(
            c: &mut Conn,
            account_id: i64,
            handle: &str,
        ) -> Result<Option<WorkspaceRow>> {
            query(asql::WORKSPACE_BY_HANDLE)
                .bind(account_id)
                .bind(handle)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::workspace(&r))
                .transpose()
        }

        // ---- standing ----

        pub(crate) async fn set_standing(
            c: &mut Conn,
            workspace_id: i64,
            member_id: i64,
            standing: Standing,
        ) -> Result<()> {
            query(asql::UPSERT_STANDING)
                .bind(workspace_id)
                .bind(member_id)
                .bind(standing.as_str())
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(())
        }

        pub(crate) async fn standing(c: &mut Conn, workspace_id: i64, member_id: i64) -> Result<Option<Standing>> {
            let value: Option<String> = query_scalar(asql::STANDING)
                .bind(workspace_id)
                .bind(member_id)
                .fetch_optional(&mut *c)
                .await?;
            value.map(|v| row::standing(&v)).transpose()
        }

        // ---- members ----

        /// The member and, for an agent, its agent_application executor; the caller runs it in
        /// one transaction ([`crate::Engine::create_member`]).
        pub(crate) async fn create_member(c: &mut Conn, new: &NewMember) -> Result<(MemberRow, Option<ExecutorRow>)> {
            row::check_member_text(new)?;
            let agent = row::agent_executor_of(new)?;
            let r = query(asql::INSERT_MEMBER)
                .bind(uid(new.public_id))
                .bind(new.account_id)
                .bind(new.kind.as_str())
                .bind(&new.handle)
                .bind(&new.display_name)
                .bind(new.role.as_str())
                .bind(new.steward_id)
                .bind(new.now)
                .fetch_one(&mut *c)
                .await
                .map_err(write_error)?;
            let member = row::member(&r)?;
            let executor = match agent {
                Some((public_id, display_name, manager_id)) => {
                    let r = query(asql::INSERT_EXECUTOR)
                        .bind(uid(public_id))
                        .bind(new.account_id)
                        .bind(ExecutorKind::AgentApplication.as_str())
                        .bind(display_name)
                        .bind(AssignmentScope::UserPrivate.as_str())
                        .bind(manager_id)
                        .bind(member.id)
                        .bind(new.now)
                        .fetch_one(&mut *c)
                        .await
                        .map_err(write_error)?;
                    Some(row::executor(&r)?)
                }
                None => None,
            };
            Ok((member, executor))
        }

        pub(crate) async fn member_by_id(c: &mut Conn, id: i64) -> Result<Option<MemberRow>> {
            query(asql::MEMBER_BY_ID)
                .bind(id)
                .fetch_optional_as(&mut *c, |r| row::member(r))
                .await
        }

        pub(crate) async fn member_by_public_id(c: &mut Conn, public_id: uuid::Uuid) -> Result<Option<MemberRow>> {
            query(asql::MEMBER_BY_PUBLIC_ID)
                .bind(uid(public_id))
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::member(&r))
                .transpose()
        }

        pub(crate) async fn workspace_members(c: &mut Conn, workspace_id: i64) -> Result<Vec<(MemberRow, Standing)>> {
            query(asql::WORKSPACE_MEMBERS)
                .bind(workspace_id)
                .fetch_all(&mut *c)
                .await?
                .iter()
                .map(row::member_with_standing)
                .collect()
        }

        pub(crate) async fn member_by_handle(c: &mut Conn, account_id: i64, handle: &str) -> Result<Option<MemberRow>> {
            if check_text(handle).is_err() {
                return Ok(None); // nothing stored holds U+0000
            }
            query(asql::MEMBER_BY_HANDLE)
                .bind(account_id)
                .bind(handle)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::member(&r))
                .transpose()
        }

        pub(crate) async fn set_member_configuration(
            c: &mut Conn,
            member_id: i64,
            configuration: Option<&str>,
            now: i64,
        ) -> Result<()> {
            if let Some(text) = configuration {
                check_text(text)?;
            }
            let done = query(asql::SET_MEMBER_CONFIGURATION)
                .bind(configuration)
                .bind(now)
                .bind(member_id)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(format!("member {member_id}")));
            }
            Ok(())
        }
    };
}
pub(crate) use account_ops;

/// The account [`crate::Engine`] methods of one engine, over its pool (see [`crate::ops`]).
macro_rules! account_methods {
    () => {
        async fn ensure_account(&self, public_id: Uuid, handle: &str, now: i64) -> Result<AccountRow> {
            ops::ensure_account(&mut *self.write_conn().await?, public_id, handle, now).await
        }
        async fn account_by_id(&self, id: i64) -> Result<Option<AccountRow>> {
            ops::account_by_id(&mut *self.pool.acquire().await?, id).await
        }
        async fn ensure_workspace(
            &self,
            public_id: Uuid,
            account_id: i64,
            handle: &str,
            now: i64,
        ) -> Result<WorkspaceRow> {
            ops::ensure_workspace(&mut *self.write_conn().await?, public_id, account_id, handle, now).await
        }
        async fn workspace_by_public_id(&self, public_id: Uuid) -> Result<Option<WorkspaceRow>> {
            ops::workspace_by_public_id(&mut *self.pool.acquire().await?, public_id).await
        }
        async fn workspace_by_id(&self, id: i64) -> Result<Option<WorkspaceRow>> {
            ops::workspace_by_id(&mut *self.pool.acquire().await?, id).await
        }
        async fn workspace_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<WorkspaceRow>> {
            ops::workspace_by_handle(&mut *self.pool.acquire().await?, account_id, handle).await
        }
        async fn set_standing(&self, workspace_id: i64, member_id: i64, standing: Standing) -> Result<()> {
            ops::set_standing(&mut *self.write_conn().await?, workspace_id, member_id, standing).await
        }
        async fn standing(&self, workspace_id: i64, member_id: i64) -> Result<Option<Standing>> {
            ops::standing(&mut *self.pool.acquire().await?, workspace_id, member_id).await
        }
        async fn create_member(&self, new: NewMember) -> Result<(MemberRow, Option<ExecutorRow>)> {
            let mut tx = self.write_tx().await?;
            let out = ops::create_member(&mut tx, &new).await?;
            tx.commit().await.map_err($crate::write_error)?;
            Ok(out)
        }
        async fn member_by_id(&self, id: i64) -> Result<Option<MemberRow>> {
            ops::member_by_id(&mut *self.pool.acquire().await?, id).await
        }
        async fn member_by_public_id(&self, public_id: Uuid) -> Result<Option<MemberRow>> {
            ops::member_by_public_id(&mut *self.pool.acquire().await?, public_id).await
        }
        async fn workspace_members(&self, workspace_id: i64) -> Result<Vec<(MemberRow, Standing)>> {
            ops::workspace_members(&mut *self.pool.acquire().await?, workspace_id).await
        }
        async fn member_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<MemberRow>> {
            ops::member_by_handle(&mut *self.pool.acquire().await?, account_id, handle).await
        }
        async fn set_member_configuration(&self, member_id: i64, configuration: Option<&str>, now: i64) -> Result<()> {
            ops::set_member_configuration(&mut *self.write_conn().await?, member_id, configuration, now).await
        }
    };
}
pub(crate) use account_methods;
