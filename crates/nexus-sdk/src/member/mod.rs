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

mod approvals;
mod conversation_stream;
mod conversations;
mod events;
mod executors;
mod history;
mod inputs;
mod memory;
mod run;
mod runs;
mod steps;
mod tasks;
mod turns;
mod types;
mod uploads;
mod views;
mod wire;
mod workspace;

pub use approvals::{Approval, ApprovalPage};
pub use conversation_stream::ConversationEventStream;
pub use conversations::{
    ArchivedFilter, Conversation, ConversationCreated, ConversationEvent, ConversationEventKind, ConversationEventPage,
    ConversationPage, ConversationParent, ConversationRef, NewConversation,
};
pub use events::{
    Ephemeral, Event, EventKind, EventPage, EventStream, Frame, Reconnect, RunStatusChange, TaskStatusChange,
};
pub use executors::ExecutorInfo;
pub use history::{
    History, HistoryConversation, HistoryPagination, HistoryRead, HistorySearch, HistoryTurn, MatchField, SearchMatch,
    SearchPage,
};
pub use inputs::{DeliveryMode, Input, InputCreated, InputKind, InputPage, InputState, NewInput};
pub use memory::{MemoryDeleted, MemoryDocument, MemoryDoor, MemoryEntry, PutDocument};
pub use run::RunRef;
pub use runs::{Append, Appended, Attention, Created, NewRun, Receipt, Run, RunPage, RunRead};
pub use steps::{AskStep, ModelStep, OnFailure, Step, ToolStep, Visibility};
pub use tasks::{
    CacheReport, CacheRound, ProviderBody, Resolution, Resolved, SealedRequest, Task, TaskError, TaskPage,
};
pub use turns::{Cancellation, Turn, TurnPage, TurnRole, TurnStatus};
pub use types::{ApprovalMode, CallRef, Page, Pagination, Rest, RunStatus, TaskKind, TaskStatus, Timestamp, Usage};
pub use uploads::{Upload, UploadBytes};
pub use views::{Graph, GraphEdge, GraphNode, Transcript, TranscriptRow};
pub use workspace::Workspace;
