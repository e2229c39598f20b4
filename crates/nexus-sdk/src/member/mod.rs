//! The member plane's run surface: typed calls for runs, conversations and their inputs, tasks,
//! events and the live feed, approvals, uploads, memory and runner discovery, so a program
//! drives Nexus without writing HTTP.
//!
//! Start from [`Client::workspace`](crate::Client::workspace), which gives a [`Workspace`]
//! (the `W/…` routes); [`Workspace::run`] gives a [`RunRef`] (the `R/…` routes) and
//! [`Workspace::conversation`] a [`ConversationRef`] (the `C/…` routes, its live feed a
//! [`ConversationEventStream`]). Uploads and
//! runner discovery are account-wide and sit on [`Client`](crate::Client) itself.
//!
//! ```no_run
//! use futures_util::StreamExt;
//! use nexus_sdk::Client;
//! use nexus_sdk::member::{ApprovalMode, Frame, NewRun, Step};
//!
//! # async fn demo() -> nexus_sdk::Result<()> {
//! let client = Client::new("http://127.0.0.1:7420", "nx_member_token");
//! let workspace = client.workspace("0190c7d4-0000-7000-8000-000000000000");
//! let run = NewRun::new(ApprovalMode::Bypass)
//!     .step(Step::model("Summarize the README.").model("anthropic/claude-sonnet-4-5"));
//! let (run, _created) = workspace.start_run(&run).await?;
//! let mut feed = run.stream(0).await?;
//! while let Some(frame) = feed.next().await {
//!     if let Frame::Event(event) = frame? {
//!         if event.run_status_change().is_some_and(|c| c.to.is_terminal()) {
//!             break;
//!         }
//!     }
//! }
//! let read = run.get().await?;
//! println!("{} used {} output tokens", read.run.status, read.usage.output_tokens);
//! # Ok(())
//! # }
//! ```
//!
//! Every record keeps the members this SDK does not name in a `rest` map, and every status is
//! an open word set with an `Other` variant: a newer kernel never breaks the decode.

mod conversation_stream;
mod conversations;
mod events;
mod executors;
mod memory;
mod run;
mod turns;
mod uploads;
mod wire;
mod workspace;

pub use conversation_stream::ConversationEventStream;
pub use conversations::ConversationRef;
pub use events::{Ephemeral, EventStream, Frame, Reconnect};
pub use memory::MemoryDoor;
pub use nexus_api::approvals::{Approval, ApprovalPage};
pub use nexus_api::common::{
    ApprovalMode, CallRef, Page, Pagination, Rest, RunStatus, TaskKind, TaskStatus, Timestamp, Usage,
};
pub use nexus_api::conversations::{
    ArchivedFilter, Conversation, ConversationCreated, ConversationEvent, ConversationEventKind, ConversationEventPage,
    ConversationPage, ConversationParent, NewConversation,
};
pub use nexus_api::events::{Event, EventKind, EventPage, RunStatusChange, TaskStatusChange};
pub use nexus_api::executors::ExecutorInfo;
pub use nexus_api::history::{
    History, HistoryConversation, HistoryPagination, HistoryRead, HistorySearch, HistoryTurn, MatchField, SearchMatch,
    SearchPage,
};
pub use nexus_api::inputs::{DeliveryMode, Input, InputCreated, InputKind, InputPage, InputState, NewInput};
pub use nexus_api::memory::{MemoryDeleted, MemoryDocument, MemoryEntry, PutDocument};
pub use nexus_api::runs::{Append, Appended, Attention, Created, NewRun, Receipt, Run, RunPage, RunRead};
pub use nexus_api::steps::{AskStep, ModelStep, OnFailure, Step, ToolStep, Visibility};
pub use nexus_api::tasks::{
    CacheReport, CacheRound, ProviderBody, Resolution, Resolved, SealedRequest, Task, TaskError, TaskPage,
};
pub use nexus_api::turns::{Cancellation, Turn, TurnPage, TurnRole, TurnStatus};
pub use nexus_api::views::{Graph, GraphEdge, GraphNode, Transcript, TranscriptRow};
pub use run::RunRef;
pub use uploads::{Upload, UploadBytes};
pub use workspace::Workspace;
