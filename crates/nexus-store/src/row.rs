//! Row decoding shared by both engines. Each engine says how to read one column ([`Columns`]);
//! the mapping from columns to row types is written once here.

use uuid::Uuid;

use crate::model::*;
use crate::{Result, StoreError};

/// Column access for one engine's rows. Public ids are TEXT in SQLite and `uuid` in PostgreSQL.
pub(crate) trait Columns {
    fn public_id(&self, column: &str) -> Result<Uuid>;
    fn int(&self, column: &str) -> Result<i64>;
    fn opt_int(&self, column: &str) -> Result<Option<i64>>;
    fn text(&self, column: &str) -> Result<String>;
    fn opt_text(&self, column: &str) -> Result<Option<String>>;
}

/// Parses a stored enum word, or reports the row as corrupt.
pub(crate) fn word<T>(column: &str, value: &str, parse: fn(&str) -> Option<T>) -> Result<T> {
    parse(value).ok_or_else(|| StoreError::Corrupt(format!("{column} holds unknown word {value:?}")))
}

pub(crate) fn parse_public_id(column: &str, value: &str) -> Result<Uuid> {
    Uuid::parse_str(value).map_err(|_| StoreError::Corrupt(format!("{column} holds a malformed uuid {value:?}")))
}

pub(crate) fn account(r: &impl Columns) -> Result<AccountRow> {
    Ok(AccountRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        handle: r.text("handle")?,
        created_at: r.int("created_at")?,
    })
}

pub(crate) fn workspace(r: &impl Columns) -> Result<WorkspaceRow> {
    Ok(WorkspaceRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        account_id: r.int("account_id")?,
        handle: r.text("handle")?,
        created_at: r.int("created_at")?,
    })
}

pub(crate) fn member(r: &impl Columns) -> Result<MemberRow> {
    Ok(MemberRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        account_id: r.int("account_id")?,
        kind: word("members.kind", &r.text("kind")?, MemberKind::parse)?,
        handle: r.text("handle")?,
        display_name: r.text("display_name")?,
        role: r.text("role")?,
        steward_id: r.opt_int("steward_id")?,
        configuration: r.opt_text("configuration")?,
        created_at: r.int("created_at")?,
        updated_at: r.int("updated_at")?,
    })
}

pub(crate) fn executor(r: &impl Columns) -> Result<ExecutorRow> {
    Ok(ExecutorRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        account_id: r.int("account_id")?,
        kind: word("executors.kind", &r.text("kind")?, ExecutorKind::parse)?,
        status: r.text("status")?,
        display_name: r.text("display_name")?,
        credential_epoch: r.int("credential_epoch")?,
        assignment_scope: word(
            "executors.assignment_scope",
            &r.text("assignment_scope")?,
            AssignmentScope::parse,
        )?,
        manager_id: r.opt_int("manager_id")?,
        agent_id: r.opt_int("agent_id")?,
        served_tools: r.text("served_tools")?,
        environment: r.text("environment")?,
        served_documents: r.text("served_documents")?,
        last_seen_at: r.opt_int("last_seen_at")?,
        created_at: r.int("created_at")?,
    })
}

pub(crate) fn credential(r: &impl Columns) -> Result<CredentialRow> {
    Ok(CredentialRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        plane: word("credentials.plane", &r.text("plane")?, Plane::parse)?,
        member_id: r.opt_int("member_id")?,
        executor_id: r.opt_int("executor_id")?,
        epoch: r.int("epoch")?,
        secret_sha256: r.text("secret_sha256")?,
        expires_at: r.opt_int("expires_at")?,
        revoked_at: r.opt_int("revoked_at")?,
        created_at: r.int("created_at")?,
    })
}

pub(crate) fn standing(value: &str) -> Result<Standing> {
    word("workspace_members.standing", value, Standing::parse)
}

/// Checks a new member and derives the agent_application executor it needs, if any:
/// `(public id, display name, manager)`.
pub(crate) fn agent_executor_of(new: &NewMember) -> Result<Option<(Uuid, &str, Option<i64>)>> {
    match (new.kind, new.agent_executor_public_id) {
        (MemberKind::Agent, Some(public_id)) => Ok(Some((public_id, new.display_name.as_str(), new.steward_id))),
        (MemberKind::Agent, None) => Err(StoreError::Config(
            "an agent member needs agent_executor_public_id for its agent_application executor".into(),
        )),
        (MemberKind::Human, Some(_)) => Err(StoreError::Config(
            "a human member has no agent_application executor (agent_executor_public_id given)".into(),
        )),
        (MemberKind::Human, None) => Ok(None),
    }
}

/// The text guard over every string of a new member.
pub(crate) fn check_member_text(new: &NewMember) -> Result<()> {
    crate::check_text(&new.handle)?;
    crate::check_text(&new.display_name)?;
    crate::check_text(&new.role)
}

pub(crate) fn check_announcement_text(a: &Announcement) -> Result<()> {
    crate::check_text(&a.served_tools)?;
    crate::check_text(&a.environment)?;
    crate::check_text(&a.served_documents)
}
