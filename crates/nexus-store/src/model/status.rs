//! The stored words with a fixed set: run statuses (runs.md §1), task statuses (runs.md §5),
//! task kinds, failure policies and resolutions, visibilities, edge kinds, executor statuses
//! and kinds, member roles, the event types of runs and conversations, job kinds and a mail
//! input's wake. Each is an
//! enum whose word ([`TaskStatus::as_str`], …) is exactly what the database column holds and
//! what the API and the events serve; the tables' CHECK constraints name the same words. A word
//! read back that no variant has is a corrupt row ([`crate::StoreError::Corrupt`]), never a
//! panic. (The approval mode and a task's origin are the core's types,
//! `nexus_core::approval::{Mode, Origin}`, read and bound the same way.)

use std::fmt;

/// An enum of stored words: the enum, its word both ways, `Display`, serde as the word, and
/// the word bound as TEXT on both engines (rusqlite `ToSql`, sqlx `Encode` for PostgreSQL).
macro_rules! stored_words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $word:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The stored word.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $word,)+
                }
            }

            /// The variant whose word is `word`; `None` for any other string.
            pub fn parse(word: &str) -> Option<Self> {
                match word {
                    $($word => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let word = String::deserialize(d)?;
                Self::parse(&word)
                    .ok_or_else(|| serde::de::Error::unknown_variant(&word, &[$($word),+]))
            }
        }

        impl rusqlite::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(rusqlite::types::ToSqlOutput::Borrowed(rusqlite::types::ValueRef::Text(
                    self.as_str().as_bytes(),
                )))
            }
        }

        impl sqlx::Type<sqlx::Postgres> for $name {
            fn type_info() -> sqlx::postgres::PgTypeInfo {
                <&str as sqlx::Type<sqlx::Postgres>>::type_info()
            }
            fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
                <&str as sqlx::Type<sqlx::Postgres>>::compatible(ty)
            }
        }

        impl sqlx::Encode<'_, sqlx::Postgres> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut sqlx::postgres::PgArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<sqlx::Postgres>>::encode(self.as_str(), buf)
            }
        }

        impl crate::postgres::Literal for $name {
            fn literal(&self) -> String {
                crate::postgres::Literal::literal(self.as_str())
            }
        }
    };
}

stored_words! {
    /// A run's status (runs.md §1). The default is a new run's, `pending`.
    pub enum RunStatus {
        #[default]
        Pending = "pending",
        Running = "running",
        NeedsAttention = "needs_attention",
        Canceling = "canceling",
        Completed = "completed",
        Canceled = "canceled",
    }
}

impl RunStatus {
    /// A terminal run status: the run has ended and changes no more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Canceled)
    }
}

stored_words! {
    /// A task's status (runs.md §5). The default is a new row's, `waiting`.
    pub enum TaskStatus {
        #[default]
        Waiting = "waiting",
        NeedsApproval = "needs_approval",
        Running = "running",
        Dispatched = "dispatched",
        AwaitingInput = "awaiting_input",
        Completed = "completed",
        Failed = "failed",
        Canceled = "canceled",
        TimedOut = "timed_out",
        Skipped = "skipped",
        Uncertain = "uncertain",
    }
}

impl TaskStatus {
    /// The parked statuses: the rows with a deadline the sweep watches.
    pub const PARKED: [Self; 4] = [
        Self::NeedsApproval,
        Self::Running,
        Self::Dispatched,
        Self::AwaitingInput,
    ];
    /// The open (live) statuses: `waiting` plus the parked ones.
    pub const OPEN: [Self; 5] = [
        Self::Waiting,
        Self::NeedsApproval,
        Self::Running,
        Self::Dispatched,
        Self::AwaitingInput,
    ];

    /// A settled status: no further transition without a retry.
    pub fn is_settled(self) -> bool {
        !self.is_open()
    }

    /// An open (live) status: `waiting` or parked.
    pub fn is_open(self) -> bool {
        self == Self::Waiting || self.is_parked()
    }

    /// A parked status: the row waits on a deadline.
    pub fn is_parked(self) -> bool {
        Self::PARKED.contains(&self)
    }
}

stored_words! {
    /// A task's kind. The default (`model_task`) only lets rows derive `Default`; every
    /// writer names the kind.
    pub enum TaskKind {
        #[default]
        Model = "model_task",
        Tool = "tool_task",
        Await = "await_task",
    }
}

stored_words! {
    /// A task's failure policy (runs.md §6). The default only lets rows derive `Default`;
    /// every writer names the policy.
    pub enum OnFailure {
        #[default]
        Propagate = "propagate",
        Absorb = "absorb",
        Halt = "halt",
    }
}

/// The step grammar's policy (`nexus_core::steps`), stored: the one conversion.
impl From<nexus_core::steps::OnFailure> for OnFailure {
    fn from(p: nexus_core::steps::OnFailure) -> Self {
        use nexus_core::steps::OnFailure as Step;
        match p {
            Step::Propagate => Self::Propagate,
            Step::Absorb => Self::Absorb,
            Step::Halt => Self::Halt,
        }
    }
}

stored_words! {
    /// How a task shows in the run's views. The default only lets rows derive `Default`.
    pub enum Visibility {
        #[default]
        Visible = "visible",
        Collapsed = "collapsed",
        Hidden = "hidden",
    }
}

/// The step grammar's visibility (`nexus_core::steps`), stored: the one conversion.
impl From<nexus_core::steps::Visibility> for Visibility {
    fn from(v: nexus_core::steps::Visibility) -> Self {
        use nexus_core::steps::Visibility as Step;
        match v {
            Step::Visible => Self::Visible,
            Step::Collapsed => Self::Collapsed,
            Step::Hidden => Self::Hidden,
        }
    }
}

stored_words! {
    /// A `task_edges` row's kind: the dependent runs after, reads, or pairs with its
    /// dependency. The default only lets rows derive `Default`.
    pub enum EdgeKind {
        #[default]
        After = "after",
        Reads = "reads",
        Pairs = "pairs",
    }
}

/// Edges sort by their stored word, as the statements that order by `kind` do.
impl Ord for EdgeKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for EdgeKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

stored_words! {
    /// An executor's status: a revoked executor keeps its row and takes no more work. The
    /// default only lets rows derive `Default`.
    pub enum ExecutorStatus {
        #[default]
        Active = "active",
        Revoked = "revoked",
    }
}

stored_words! {
    /// How a failed task's failure was accepted (runs.md §6): not a status. The default only
    /// lets rows derive `Default`.
    pub enum FailureResolution {
        /// `POST R/tasks/{k}/abandon`: the failure stands, the run goes on without the row.
        #[default]
        Abandoned = "abandoned",
        /// A branch cancel settled the row.
        Canceled = "canceled",
        /// The run's end accepted the failure of a row nothing waited on.
        Accepted = "accepted",
    }
}

stored_words! {
    /// A member's role in its account. The default only lets rows derive `Default`.
    pub enum MemberRole {
        #[default]
        Member = "member",
        Admin = "admin",
    }
}

stored_words! {
    /// An executor's kind, which is also the role a tool row is addressed to
    /// (`tasks.addressed_role`). The default only lets rows derive `Default`.
    pub enum ExecutorKind {
        #[default]
        Runner = "runner",
        AgentApplication = "agent_application",
    }
}

stored_words! {
    /// A durable run event's type (runs.md §11): the `events.type` column. The wire's open
    /// word set (`nexus_api::events::EventKind`) converts from it in one place.
    pub enum EventKind {
        #[default]
        RunStatusChanged = "run_status_changed",
        TasksAppended = "tasks_appended",
        TaskStatusChanged = "task_status_changed",
        TaskClaimed = "task_claimed",
        TaskDeadlineExtended = "task_deadline_extended",
        ApprovalDecided = "approval_decided",
        AttentionRequired = "attention_required",
        AttentionResolved = "attention_resolved",
        TaskReaddressed = "task_readdressed",
        DefaultRunnerChanged = "default_runner_changed",
    }
}

stored_words! {
    /// A conversation feed event's type (runs.md §12): the `conversation_events.type` column.
    pub enum ConversationEventKind {
        #[default]
        InputAccepted = "input_accepted",
        TurnStarted = "turn_started",
        TurnEnded = "turn_ended",
        ChildSpawned = "child_spawned",
        ConversationArchived = "conversation_archived",
    }
}

stored_words! {
    /// A job's kind (storage-and-scale.md §5): the `jobs.kind` column. The default only lets
    /// rows derive `Default`.
    pub enum JobKind {
        /// A model round: seal, call, apply. Lease 15 min, renewed while in flight.
        #[default]
        ModelCall = "model_call",
        /// A kernel tool evaluation. At-most-once: the row is deleted before evaluation starts.
        KernelTool = "kernel_tool",
    }
}

stored_words! {
    /// Whether a kernel mail input opens a turn of an idle conversation (`auto`) or waits for
    /// another input to open one (`passive`): the `conversation_inputs.wake` column. The
    /// default is the tools' (`wake: auto`).
    pub enum Wake {
        #[default]
        Auto = "auto",
        Passive = "passive",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_parses_back_and_serializes_as_itself() {
        fn check<T>(all: &[T], as_str: fn(T) -> &'static str, parse: fn(&str) -> Option<T>)
        where
            T: Copy + PartialEq + fmt::Debug + fmt::Display + serde::Serialize + serde::de::DeserializeOwned,
        {
            for &v in all {
                let word = as_str(v);
                assert_eq!(parse(word), Some(v));
                assert_eq!(v.to_string(), word);
                assert_eq!(serde_json::to_value(v).unwrap(), serde_json::json!(word));
                assert_eq!(serde_json::from_value::<T>(serde_json::json!(word)).unwrap(), v);
            }
            assert_eq!(parse("no_such_word"), None);
            assert!(serde_json::from_value::<T>(serde_json::json!("no_such_word")).is_err());
        }
        check(RunStatus::ALL, RunStatus::as_str, RunStatus::parse);
        check(TaskStatus::ALL, TaskStatus::as_str, TaskStatus::parse);
        check(TaskKind::ALL, TaskKind::as_str, TaskKind::parse);
        check(OnFailure::ALL, OnFailure::as_str, OnFailure::parse);
        check(Visibility::ALL, Visibility::as_str, Visibility::parse);
        check(EdgeKind::ALL, EdgeKind::as_str, EdgeKind::parse);
        check(ExecutorStatus::ALL, ExecutorStatus::as_str, ExecutorStatus::parse);
        check(
            FailureResolution::ALL,
            FailureResolution::as_str,
            FailureResolution::parse,
        );
        check(MemberRole::ALL, MemberRole::as_str, MemberRole::parse);
        check(ExecutorKind::ALL, ExecutorKind::as_str, ExecutorKind::parse);
        check(EventKind::ALL, EventKind::as_str, EventKind::parse);
        check(
            ConversationEventKind::ALL,
            ConversationEventKind::as_str,
            ConversationEventKind::parse,
        );
        check(JobKind::ALL, JobKind::as_str, JobKind::parse);
        check(Wake::ALL, Wake::as_str, Wake::parse);
    }

    /// The settled statuses are exactly the six runs.md §5 names; the rest are open.
    #[test]
    fn settled_and_open_split_the_task_statuses() {
        use TaskStatus::*;
        let settled: Vec<_> = TaskStatus::ALL.iter().copied().filter(|s| s.is_settled()).collect();
        assert_eq!(settled, [Completed, Failed, Canceled, TimedOut, Skipped, Uncertain]);
        let open: Vec<_> = TaskStatus::ALL.iter().copied().filter(|s| s.is_open()).collect();
        assert_eq!(open, TaskStatus::OPEN);
        let parked: Vec<_> = TaskStatus::ALL.iter().copied().filter(|s| s.is_parked()).collect();
        assert_eq!(parked, TaskStatus::PARKED);
        let terminal: Vec<_> = RunStatus::ALL.iter().copied().filter(|s| s.is_terminal()).collect();
        assert_eq!(terminal, [RunStatus::Completed, RunStatus::Canceled]);
    }
}
