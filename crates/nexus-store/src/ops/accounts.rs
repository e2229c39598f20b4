//! Accounts, workspaces, standing and members (migration 0001), written once for both engines.

use crate::model::*;
use crate::ops::db::{Db, query, query_scalar, uid};
use crate::ops::on_conn;
use crate::row;
use crate::sql as asql;
use crate::{Result, Store, StoreError, check_text, write_error};
use uuid::Uuid;

// ---- accounts and workspaces ----

pub(crate) async fn ensure_account<C: Db>(
    c: &mut C,
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
    let r = query(asql::ACCOUNT_BY_HANDLE).bind(handle).fetch_one(&mut *c).await?;
    row::account(&r)
}

pub(crate) async fn account_by_id<C: Db>(c: &mut C, id: i64) -> Result<Option<AccountRow>> {
    query(asql::ACCOUNT_BY_ID)
        .bind(id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::account(&r))
        .transpose()
}

pub(crate) async fn ensure_workspace<C: Db>(
    c: &mut C,
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

pub(crate) async fn workspace_by_public_id<C: Db>(c: &mut C, public_id: uuid::Uuid) -> Result<Option<WorkspaceRow>> {
    query(asql::WORKSPACE_BY_PUBLIC_ID)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::workspace(&r))
        .transpose()
}

pub(crate) async fn workspace_by_id<C: Db>(c: &mut C, id: i64) -> Result<Option<WorkspaceRow>> {
    query(asql::WORKSPACE_BY_ID)
        .bind(id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::workspace(&r))
        .transpose()
}

pub(crate) async fn workspace_by_handle<C: Db>(
    c: &mut C,
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

pub(crate) async fn set_standing<C: Db>(
    c: &mut C,
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

pub(crate) async fn standing<C: Db>(c: &mut C, workspace_id: i64, member_id: i64) -> Result<Option<Standing>> {
    let value: Option<String> = query_scalar(asql::STANDING)
        .bind(workspace_id)
        .bind(member_id)
        .fetch_optional(&mut *c)
        .await?;
    value.map(|v| row::standing(&v)).transpose()
}

// ---- members ----

/// The member and, for an agent, its agent_application executor; the caller runs it in
/// one transaction ([`crate::AccountStore::create_member`]).
pub(crate) async fn create_member<C: Db>(c: &mut C, new: &NewMember) -> Result<(MemberRow, Option<ExecutorRow>)> {
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

pub(crate) async fn member_by_id<C: Db>(c: &mut C, id: i64) -> Result<Option<MemberRow>> {
    query(asql::MEMBER_BY_ID)
        .bind(id)
        .fetch_optional_as(&mut *c, |r| row::member(r))
        .await
}

pub(crate) async fn member_by_public_id<C: Db>(c: &mut C, public_id: uuid::Uuid) -> Result<Option<MemberRow>> {
    query(asql::MEMBER_BY_PUBLIC_ID)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::member(&r))
        .transpose()
}

pub(crate) async fn workspace_members<C: Db>(c: &mut C, workspace_id: i64) -> Result<Vec<(MemberRow, Standing)>> {
    query(asql::WORKSPACE_MEMBERS)
        .bind(workspace_id)
        .fetch_all(&mut *c)
        .await?
        .iter()
        .map(row::member_with_standing)
        .collect()
}

pub(crate) async fn member_by_handle<C: Db>(c: &mut C, account_id: i64, handle: &str) -> Result<Option<MemberRow>> {
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

pub(crate) async fn set_member_configuration<C: Db>(
    c: &mut C,
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

/// The accounts operations on the store (see `crate::ops`).
#[allow(async_fn_in_trait)]
pub trait AccountStore {
    /// Returns the account with `handle`, creating it (with `public_id`) when absent.
    async fn ensure_account(&self, public_id: Uuid, handle: &str, now: i64) -> Result<AccountRow>;
    async fn account_by_id(&self, id: i64) -> Result<Option<AccountRow>>;
    /// Returns the workspace with `handle` in the account, creating it when absent.
    async fn ensure_workspace(&self, public_id: Uuid, account_id: i64, handle: &str, now: i64) -> Result<WorkspaceRow>;
    async fn workspace_by_public_id(&self, public_id: Uuid) -> Result<Option<WorkspaceRow>>;
    /// The workspace with internal id `id`.
    async fn workspace_by_id(&self, id: i64) -> Result<Option<WorkspaceRow>>;
    /// The workspace with `handle` in the account (no creation).
    async fn workspace_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<WorkspaceRow>>;
    /// Upserts a member's standing in a workspace.
    async fn set_standing(&self, workspace_id: i64, member_id: i64, standing: Standing) -> Result<()>;
    async fn standing(&self, workspace_id: i64, member_id: i64) -> Result<Option<Standing>>;
    /// Creates a member. An agent (with `agent_executor_public_id`) also gets its
    /// agent_application executor, managed by its steward, in the same transaction.
    /// A taken handle is `StoreError::Conflict`.
    async fn create_member(&self, new: NewMember) -> Result<(MemberRow, Option<ExecutorRow>)>;
    async fn member_by_id(&self, id: i64) -> Result<Option<MemberRow>>;
    async fn member_by_public_id(&self, public_id: Uuid) -> Result<Option<MemberRow>>;
    /// The members holding standing in the workspace, with it, ordered by handle.
    async fn workspace_members(&self, workspace_id: i64) -> Result<Vec<(MemberRow, Standing)>>;
    async fn member_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<MemberRow>>;
    /// Replaces an agent's stored configuration JSON (whole replacement).
    async fn set_member_configuration(&self, member_id: i64, configuration: Option<&str>, now: i64) -> Result<()>;
}

impl AccountStore for Store {
    async fn ensure_account(&self, public_id: Uuid, handle: &str, now: i64) -> Result<AccountRow> {
        on_conn!(self, write, |c| ensure_account(c, public_id, handle, now))
    }
    async fn account_by_id(&self, id: i64) -> Result<Option<AccountRow>> {
        on_conn!(self, read, |c| account_by_id(c, id))
    }
    async fn ensure_workspace(&self, public_id: Uuid, account_id: i64, handle: &str, now: i64) -> Result<WorkspaceRow> {
        on_conn!(self, write, |c| ensure_workspace(c, public_id, account_id, handle, now))
    }
    async fn workspace_by_public_id(&self, public_id: Uuid) -> Result<Option<WorkspaceRow>> {
        on_conn!(self, read, |c| workspace_by_public_id(c, public_id))
    }
    async fn workspace_by_id(&self, id: i64) -> Result<Option<WorkspaceRow>> {
        on_conn!(self, read, |c| workspace_by_id(c, id))
    }
    async fn workspace_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<WorkspaceRow>> {
        on_conn!(self, read, |c| workspace_by_handle(c, account_id, handle))
    }
    async fn set_standing(&self, workspace_id: i64, member_id: i64, standing: Standing) -> Result<()> {
        on_conn!(self, write, |c| set_standing(c, workspace_id, member_id, standing))
    }
    async fn standing(&self, workspace_id: i64, member_id: i64) -> Result<Option<Standing>> {
        on_conn!(self, read, |c| standing(c, workspace_id, member_id))
    }
    async fn create_member(&self, new: NewMember) -> Result<(MemberRow, Option<ExecutorRow>)> {
        on_conn!(self, tx, |c| create_member(c, &new))
    }
    async fn member_by_id(&self, id: i64) -> Result<Option<MemberRow>> {
        on_conn!(self, read, |c| member_by_id(c, id))
    }
    async fn member_by_public_id(&self, public_id: Uuid) -> Result<Option<MemberRow>> {
        on_conn!(self, read, |c| member_by_public_id(c, public_id))
    }
    async fn workspace_members(&self, workspace_id: i64) -> Result<Vec<(MemberRow, Standing)>> {
        on_conn!(self, read, |c| workspace_members(c, workspace_id))
    }
    async fn member_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<MemberRow>> {
        on_conn!(self, read, |c| member_by_handle(c, account_id, handle))
    }
    async fn set_member_configuration(&self, member_id: i64, configuration: Option<&str>, now: i64) -> Result<()> {
        on_conn!(self, write, |c| set_member_configuration(
            c,
            member_id,
            configuration,
            now
        ))
    }
}
