//! SQL text shared by both engines. `$n` placeholders work in SQLite and PostgreSQL alike, so
//! a statement is written once here unless a dialect needs its own form (row locks, for one).
//! Only the binding differs: SQLite binds public ids as hyphenated TEXT, PostgreSQL as `uuid`.

pub(crate) const INSERT_ACCOUNT: &str = "INSERT INTO accounts (public_id, handle, created_at) \
     VALUES ($1, $2, $3) ON CONFLICT (handle) DO NOTHING";
pub(crate) const ACCOUNT_BY_HANDLE: &str = "SELECT id, public_id, handle, created_at FROM accounts WHERE handle = $1";
pub(crate) const ACCOUNT_BY_ID: &str = "SELECT id, public_id, handle, created_at FROM accounts WHERE id = $1";

pub(crate) const INSERT_WORKSPACE: &str = "INSERT INTO workspaces (public_id, account_id, handle, created_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (account_id, handle) DO NOTHING";
pub(crate) const WORKSPACE_BY_HANDLE: &str = "SELECT id, public_id, account_id, handle, created_at FROM workspaces \
     WHERE account_id = $1 AND handle = $2";
pub(crate) const WORKSPACE_BY_PUBLIC_ID: &str =
    "SELECT id, public_id, account_id, handle, created_at FROM workspaces WHERE public_id = $1";

pub(crate) const UPSERT_STANDING: &str = "INSERT INTO workspace_members (workspace_id, member_id, standing) VALUES ($1, $2, $3) \
     ON CONFLICT (workspace_id, member_id) DO UPDATE SET standing = excluded.standing";
pub(crate) const STANDING: &str = "SELECT standing FROM workspace_members WHERE workspace_id = $1 AND member_id = $2";

pub(crate) const INSERT_MEMBER: &str = "INSERT INTO members \
     (public_id, account_id, kind, handle, display_name, role, steward_id, configuration, \
      created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, $8) \
     RETURNING id, public_id, account_id, kind, handle, display_name, role, steward_id, \
      configuration, created_at, updated_at";
pub(crate) const MEMBER_BY_ID: &str = "SELECT id, public_id, account_id, kind, handle, \
     display_name, role, steward_id, configuration, created_at, updated_at \
     FROM members WHERE id = $1";
pub(crate) const MEMBER_BY_PUBLIC_ID: &str = "SELECT id, public_id, account_id, kind, handle, \
     display_name, role, steward_id, configuration, created_at, updated_at \
     FROM members WHERE public_id = $1";
pub(crate) const MEMBER_BY_HANDLE: &str = "SELECT id, public_id, account_id, kind, handle, \
     display_name, role, steward_id, configuration, created_at, updated_at \
     FROM members WHERE account_id = $1 AND handle = $2";
pub(crate) const SET_MEMBER_CONFIGURATION: &str =
    "UPDATE members SET configuration = $1, updated_at = $2 WHERE id = $3";

/// `$1` public id, `$2` account, `$3` kind, `$4` display name, `$5` scope, `$6` manager,
/// `$7` agent, `$8` now. Status `active`, epoch 0, an empty announcement.
pub(crate) const INSERT_EXECUTOR: &str = "INSERT INTO executors \
     (public_id, account_id, kind, status, display_name, credential_epoch, assignment_scope, \
      manager_id, agent_id, created_at) \
     VALUES ($1, $2, $3, 'active', $4, 0, $5, $6, $7, $8) \
     RETURNING id, public_id, account_id, kind, status, display_name, credential_epoch, \
      assignment_scope, manager_id, agent_id, served_tools, environment, served_documents, \
      last_seen_at, created_at";
macro_rules! executor_select {
    ($where:literal) => {
        concat!(
            "SELECT id, public_id, account_id, kind, status, display_name, credential_epoch, \
             assignment_scope, manager_id, agent_id, served_tools, environment, \
             served_documents, last_seen_at, created_at FROM executors ",
            $where
        )
    };
}
pub(crate) const EXECUTOR_BY_ID: &str = executor_select!("WHERE id = $1");
pub(crate) const EXECUTOR_BY_PUBLIC_ID: &str = executor_select!("WHERE public_id = $1");
pub(crate) const ACTIVE_RUNNER_BY_NAME: &str = executor_select!(
    "WHERE account_id = $1 AND manager_id = $2 AND display_name = $3 \
     AND kind = 'runner' AND status = 'active'"
);
pub(crate) const AGENT_APPLICATION_OF: &str = executor_select!("WHERE agent_id = $1 AND kind = 'agent_application'");
pub(crate) const EXECUTORS_OF_ACCOUNT: &str = executor_select!("WHERE account_id = $1 ORDER BY id");
pub(crate) const EXECUTORS_OF_ACCOUNT_KIND: &str = executor_select!("WHERE account_id = $1 AND kind = $2 ORDER BY id");
pub(crate) const ADVANCE_EPOCH: &str = "UPDATE executors SET credential_epoch = credential_epoch + 1 \
     WHERE id = $1 RETURNING credential_epoch";
pub(crate) const REVOKE_EXECUTOR: &str = "UPDATE executors SET status = 'revoked' WHERE id = $1";
pub(crate) const PUT_ANNOUNCEMENT: &str = "UPDATE executors \
     SET served_tools = $1, environment = $2, served_documents = $3, last_seen_at = $4 \
     WHERE id = $5";

pub(crate) const INSERT_CREDENTIAL: &str = "INSERT INTO credentials \
     (public_id, plane, member_id, executor_id, epoch, secret_sha256, expires_at, revoked_at, \
      created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8) \
     RETURNING id, public_id, plane, member_id, executor_id, epoch, secret_sha256, expires_at, \
      revoked_at, created_at";
pub(crate) const CREDENTIAL_BY_PUBLIC_ID: &str = "SELECT id, public_id, plane, member_id, \
     executor_id, epoch, secret_sha256, expires_at, revoked_at, created_at \
     FROM credentials WHERE public_id = $1";
pub(crate) const REVOKE_CREDENTIAL: &str =
    "UPDATE credentials SET revoked_at = $1 WHERE public_id = $2 AND revoked_at IS NULL";
pub(crate) const HAS_TRANSPORT_CREDENTIAL_AT: &str = "SELECT 1 FROM credentials \
     WHERE plane = 'executor_transport' AND executor_id = $1 AND epoch = $2 \
     AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $3) LIMIT 1";
