//! Shapes shared by every member-plane family: open word sets (a status this SDK does not know
//! still decodes), pagination, token usage and the round's call references.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The members of a record this SDK does not name, kept verbatim so a newer kernel's fields
/// survive a decode.
pub type Rest = Map<String, Value>;

/// Declares an enum over a closed vocabulary of wire words plus `Other(String)` for a word a
/// newer kernel may send: decoding never fails on an unknown word, and it serializes back
/// unchanged.
macro_rules! open_words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A word this SDK does not know (sent by a newer kernel), kept verbatim.
            Other(String),
        }

        impl $name {
            /// The wire word.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $word, )*
                    $name::Other(word) => word,
                }
            }
        }

        impl From<&str> for $name {
            fn from(word: &str) -> Self {
                match word {
                    $( $word => $name::$variant, )*
                    other => $name::Other(other.to_owned()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$( $word, )*]))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let word = String::deserialize(d)?;
                Ok($name::from(word.as_str()))
            }
        }
    };
}
pub(crate) use open_words;

open_words! {
    /// A run's status (runs.md §1). There is no `failed` run.
    pub enum RunStatus {
        /// Created, not started.
        Pending = "pending",
        /// Started; work is scheduled.
        Running = "running",
        /// Quiescent with a failure to adjudicate.
        NeedsAttention = "needs_attention",
        /// Stopped, draining its live tasks.
        Canceling = "canceling",
        /// The deliverable completed.
        Completed = "completed",
        /// Stopped and drained.
        Canceled = "canceled",
    }
}

impl RunStatus {
    /// Whether the run has ended (`completed` or `canceled`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, RunStatus::Completed | RunStatus::Canceled)
    }
}

open_words! {
    /// A task's public status (runs.md §5).
    pub enum TaskStatus {
        /// Waiting on dependencies or scheduling.
        Waiting = "waiting",
        /// Held for an approver.
        NeedsApproval = "needs_approval",
        /// The kernel is working on it.
        Running = "running",
        /// An outside holder has it (an executor, or a resolution token's holder).
        Dispatched = "dispatched",
        /// A tokenless ask waiting for anyone with write standing.
        AwaitingInput = "awaiting_input",
        /// Settled with a result.
        Completed = "completed",
        /// Settled as a failure.
        Failed = "failed",
        /// Settled: stopped before it finished.
        Canceled = "canceled",
        /// Settled: its deadline passed.
        TimedOut = "timed_out",
        /// Settled: something it depended on failed.
        Skipped = "skipped",
        /// Settled: a non-replayable claim lapsed without a result.
        Uncertain = "uncertain",
    }
}

impl TaskStatus {
    /// Whether the task has settled (no longer live).
    pub fn is_settled(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed
                | TaskStatus::Failed
                | TaskStatus::Canceled
                | TaskStatus::TimedOut
                | TaskStatus::Skipped
                | TaskStatus::Uncertain
        )
    }
}

open_words! {
    /// A task's kind (runs.md §5).
    pub enum TaskKind {
        /// A model round.
        Model = "model_task",
        /// One tool call.
        Tool = "tool_task",
        /// An ask, a wait, a spawn reply or a delegation obligation.
        Await = "await_task",
    }
}

open_words! {
    /// A run's approval mode (approvals.md §1), frozen at create.
    pub enum ApprovalMode {
        /// Grant model calls that no deny rule matches.
        Bypass = "bypass",
        /// Hold every model call unless an allow rule grants it.
        Ask = "ask",
        /// Grant only what an allow rule matches; deny the rest.
        Rules = "rules",
    }
}

/// The run's mode (`nexus_core::approval::Mode`, the one type the declaration grammar, the
/// store and the gate share) as its wire word: the one conversion.
impl From<nexus_core::approval::Mode> for ApprovalMode {
    fn from(mode: nexus_core::approval::Mode) -> Self {
        Self::from(mode.as_str())
    }
}

/// The `pagination` member of a listing: the cursor of the next page, absent on the last.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Pagination {
    /// Pass as `after` to read the next page; `None` when this page was the last.
    #[serde(default)]
    pub next_after: Option<String>,
}

impl Pagination {
    /// The query of the next page (same limit), or `None` on the last page.
    pub fn next(&self, current: &Page) -> Option<Page> {
        self.next_after.as_ref().map(|after| Page {
            after: Some(after.clone()),
            limit: current.limit,
        })
    }
}

/// The paging query of a listing route: an opaque cursor and a page size (the server clamps it
/// to 1–200, default 50).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// The cursor a previous page returned as `next_after`.
    pub after: Option<String>,
    /// The page size.
    pub limit: Option<u32>,
}

impl Page {
    /// The first page with the server's default size.
    pub fn first() -> Page {
        Page::default()
    }

    /// This page with `limit` entries at most.
    pub fn limit(mut self, limit: u32) -> Page {
        self.limit = Some(limit);
        self
    }

    /// This page starting after `cursor`.
    pub fn after(mut self, cursor: impl Into<String>) -> Page {
        self.after = Some(cursor.into());
        self
    }
}

/// Token usage: one round's, or a run's rounds summed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Usage {
    /// Input tokens (the uncached part of the prompt).
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A point in time as a read serves it: RFC 3339 text on most reads; milliseconds since the
/// Unix epoch on the memory door's `updated_at` (as this kernel sends it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum Timestamp {
    /// Milliseconds since the Unix epoch.
    Millis(i64),
    /// RFC 3339 text.
    Text(String),
}

/// One call a model round made: `{call_id, name, task_key}` (`name` is the model's spelling).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CallRef {
    /// The provider's call id.
    #[serde(default)]
    pub call_id: Option<String>,
    /// The called name as the model spelled it.
    #[serde(default)]
    pub name: Option<String>,
    /// The tool row that carries the call.
    pub task_key: String,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// Deserializes a member that is meaningful when present even as `null`: absent → `None`
/// (through `#[serde(default)]`), present → `Some(value)`, `null` included.
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The `{task}` answer of a task read and of the task verbs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TaskEnvelope {
    /// The task.
    pub task: crate::tasks::Task,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every mode the core knows is a named wire word, never `Other`.
    #[test]
    fn every_core_mode_is_a_named_wire_word() {
        use nexus_core::approval::Mode;
        let wire: Vec<ApprovalMode> = Mode::ALL.into_iter().map(ApprovalMode::from).collect();
        assert_eq!(wire, [ApprovalMode::Bypass, ApprovalMode::Ask, ApprovalMode::Rules]);
    }

    #[test]
    fn an_unknown_word_survives_a_round_trip() {
        let status: RunStatus = serde_json::from_str("\"hibernating\"").unwrap();
        assert_eq!(status, RunStatus::Other("hibernating".into()));
        assert_eq!(serde_json::to_string(&status).unwrap(), "\"hibernating\"");
        let known: TaskStatus = serde_json::from_str("\"needs_approval\"").unwrap();
        assert_eq!(known, TaskStatus::NeedsApproval);
        assert!(!known.is_settled());
        assert!(TaskStatus::Uncertain.is_settled());
        assert_eq!(TaskKind::from("tool_task"), TaskKind::Tool);
    }

    #[test]
    fn the_next_page_keeps_the_limit() {
        let page = Page::first().limit(7);
        let last = Pagination { next_after: None };
        assert_eq!(last.next(&page), None);
        let more = Pagination {
            next_after: Some("42".into()),
        };
        assert_eq!(more.next(&page), Some(Page::first().limit(7).after("42")));
    }
}
