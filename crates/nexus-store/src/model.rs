//! Row types the store hands to the kernel. Internal ids are `i64`; public ids are UUIDv7;
//! timestamps are Unix milliseconds; JSON columns are `String` holding the stored bytes
//! (member order kept, never `jsonb`).

use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    Human,
    Agent,
}

impl MemberKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberKind::Human => "human",
            MemberKind::Agent => "agent",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "human" => Some(Self::Human),
            "agent" => Some(Self::Agent),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutorKind {
    AgentApplication,
    Runner,
}

impl ExecutorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutorKind::AgentApplication => "agent_application",
            ExecutorKind::Runner => "runner",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "agent_application" => Some(Self::AgentApplication),
            "runner" => Some(Self::Runner),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plane {
    Member,
    ExecutorTransport,
}

impl Plane {
    pub fn as_str(self) -> &'static str {
        match self {
            Plane::Member => "member",
            Plane::ExecutorTransport => "executor_transport",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "member" => Some(Self::Member),
            "executor_transport" => Some(Self::ExecutorTransport),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    Read,
    Write,
}

impl Standing {
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Read => "read",
            Standing::Write => "write",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(Self::Read),
            "write" => Some(Self::Write),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignmentScope {
    UserPrivate,
    AccountWide,
}

impl AssignmentScope {
    pub fn as_str(self) -> &'static str {
        match self {
            AssignmentScope::UserPrivate => "user_private",
            AssignmentScope::AccountWide => "account_wide",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "user_private" => Some(Self::UserPrivate),
            "account_wide" => Some(Self::AccountWide),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountRow {
    pub id: i64,
    pub public_id: Uuid,
    pub handle: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceRow {
    pub id: i64,
    pub public_id: Uuid,
    pub account_id: i64,
    pub handle: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRow {
    pub id: i64,
    pub public_id: Uuid,
    pub account_id: i64,
    pub kind: MemberKind,
    /// Unique per account.
    pub handle: String,
    pub display_name: String,
    /// `admin` or `member`.
    pub role: String,
    /// For an agent: its controlling human.
    pub steward_id: Option<i64>,
    /// The agent profile configuration as stored JSON text (agents only).
    pub configuration: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorRow {
    pub id: i64,
    pub public_id: Uuid,
    pub account_id: i64,
    pub kind: ExecutorKind,
    /// `active` or `revoked`.
    pub status: String,
    /// For a runner, also its registration identifier (`--name`).
    pub display_name: String,
    pub credential_epoch: i64,
    pub assignment_scope: AssignmentScope,
    pub manager_id: Option<i64>,
    pub agent_id: Option<i64>,
    /// Stored announcement JSON: a list (sorted by name).
    pub served_tools: String,
    /// Stored announcement JSON: an object.
    pub environment: String,
    /// Stored announcement JSON: a list (sorted by name).
    pub served_documents: String,
    pub last_seen_at: Option<i64>,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialRow {
    pub id: i64,
    pub public_id: Uuid,
    pub plane: Plane,
    pub member_id: Option<i64>,
    pub executor_id: Option<i64>,
    /// The executor epoch the credential was minted at (0 for member credentials).
    pub epoch: i64,
    /// Lowercase hex SHA-256 of the secret. The secret itself is never stored.
    pub secret_sha256: String,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub created_at: i64,
}

#[derive(Debug, Clone)]
pub struct NewMember {
    pub public_id: Uuid,
    pub account_id: i64,
    pub kind: MemberKind,
    pub handle: String,
    pub display_name: String,
    pub role: String,
    pub steward_id: Option<i64>,
    /// For an agent: the public id of the agent_application executor created with it.
    pub agent_executor_public_id: Option<Uuid>,
    pub now: i64,
}

#[derive(Debug, Clone)]
pub struct NewRunner {
    pub public_id: Uuid,
    pub account_id: i64,
    pub display_name: String,
    pub assignment_scope: AssignmentScope,
    pub manager_id: i64,
    pub now: i64,
}

#[derive(Debug, Clone)]
pub struct NewCredential {
    pub public_id: Uuid,
    pub plane: Plane,
    pub member_id: Option<i64>,
    pub executor_id: Option<i64>,
    pub epoch: i64,
    pub secret_sha256: String,
    pub expires_at: Option<i64>,
    pub now: i64,
}

/// A stored announcement, written whole (executor.md §4).
#[derive(Debug, Clone)]
pub struct Announcement {
    pub served_tools: String,
    pub environment: String,
    pub served_documents: String,
}
