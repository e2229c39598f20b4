//! What the document says about each route of [`crate::table::ROUTES`]: its summary, query,
//! body, success answers (typed by `nexus_api`) and its own error codes (from the route files of
//! the spec). The builder adds what follows from the route's plane, standing and body kind.
//!
//! A route in the table without an entry here (or an entry without a route) fails
//! `tests/openapi.rs`.

use nexus_api::approvals::ApprovalPage;
use nexus_api::assembly::{AssemblyPreview, AssemblyRequest};
use nexus_api::catalog::Catalog;
use nexus_api::common::TaskEnvelope;
use nexus_api::conversations::{
    ConversationCreated, ConversationEnvelope, ConversationEventPage, ConversationPage, CreateConversation,
};
use nexus_api::events::EventPage;
use nexus_api::executors::{Announcement, ExecutorDescription, ExecutorEnvelope, ExecutorList};
use nexus_api::history::{History, SearchPage};
use nexus_api::inbox::{ClaimGrant, ClaimStatusReply, Commit, CommitReply, Extend, InboxList, Progress, ProgressReply};
use nexus_api::inputs::{CreateInput, InputCreated, InputEnvelope, InputPage};
use nexus_api::memory::{DeletedEnvelope, DocumentEnvelope, DocumentList, PutDocument};
use nexus_api::profile::{MemberList, Profile, PutConfiguration};
use nexus_api::runs::{AppendSteps, Appended, CreateRun, Created, RunEnvelope, RunPage, RunRead};
use nexus_api::tasks::{CacheEnvelope, Resolution, Resolved, SealedEnvelope, TaskPage};
use nexus_api::turns::{Cancellation, TurnPage};
use nexus_api::uploads::UploadEnvelope;
use nexus_api::verbs::{Deny, Retry, SetDefaultRunner, Stop};
use nexus_api::views::{Graph, Transcript};
use nexus_core::codes::Code;

use super::op::{Body, Content, Kind, Op, Param, Reply, Shape, header, param, reply, required, typed};

macro_rules! json {
    ($t:ty) => {
        Content::Json(typed::<$t>())
    };
}

macro_rules! object {
    ($doc:literal) => {
        Content::Json(Shape::Object($doc))
    };
}

macro_rules! op {
    ($method:ident $path:expr, $summary:literal, [$($q:expr),* $(,)?], $body:expr, $replies:expr, [$($c:ident),* $(,)?]) => {
        Op {
            method: stringify!($method),
            path: $path,
            summary: $summary,
            query: &[$($q),*],
            body: $body,
            replies: &$replies,
            codes: &[$(Code::$c),*],
        }
    };
}

macro_rules! w {
    ($rest:literal) => {
        concat!("/agent_api/v1/workspaces/{ws}", $rest)
    };
}

const AFTER: Param = param(
    "after",
    Kind::Cursor,
    "The cursor a previous page returned as `next_after`.",
);
const LIMIT: Param = param("limit", Kind::Integer, "The page size (clamped to 1–200; default 50).");
const SEQ_AFTER: Param = param(
    "after",
    Kind::Sequence,
    "Events after this sequence (0: from the first).",
);
const HISTORY_LIMIT: Param = param(
    "limit",
    Kind::Range(1, nexus_core::bounds::HISTORY_READ_MAX_LIMIT as i64),
    "At most this many (1–50).",
);
const EVENTS_LIMIT: Param = param(
    "limit",
    Kind::Integer,
    "At most this many events (default 100, at most 500).",
);
const CONVERSATION: Param = param(
    "conversation_public_id",
    Kind::OptionalUuid,
    "Reach this conversation's `conversation/` documents.",
);
const ARCHIVED: Param = param(
    "archived",
    Kind::Words(&["exclude", "include", "only"]),
    "Which conversations by archive state (default `exclude`).",
);

const IDEMPOTENCY_KEY: Param = header(
    "Idempotency-Key",
    Kind::Key,
    "A repeat with the same key and body replays the first answer (errors-and-auth.md §6).",
    false,
);
const CLAIM_TOKEN: Param = header("Claim-Token", Kind::Key, "The claim's token.", true);
const MEMORY_PATH: Param = required(param("path", Kind::MemoryPath, "The document's path."));

const EMPTY_BODY: Body = Body::Json(Shape::Object("`{}` (members are ignored unless the route names them)."));
const NO_BODY: Body = Body::Optional(Shape::Object("`{}` or no body at all."));

const TASK: Reply = reply(200, json!(TaskEnvelope), "The task after the verb.");
const RUN: Reply = reply(200, json!(RunEnvelope), "The run.");
const CONVERSATION_READ: Reply = reply(200, json!(ConversationEnvelope), "The conversation.");
const UPLOAD: Reply = reply(200, json!(UploadEnvelope), "The upload's descriptor.");
const UPLOAD_CREATED: Reply = reply(201, json!(UploadEnvelope), "The upload was stored.");
const BYTES: [Reply; 3] = [
    reply(200, Content::Bytes, "The whole blob (`Accept-Ranges: bytes`)."),
    reply(206, Content::Bytes, "The requested range (`Content-Range`)."),
    reply(304, Content::Empty, "`If-None-Match` names the current ETag."),
];

/// Every route's entry, in the route table's order.
pub static OPS: &[Op] = &[
    op!(GET "/healthz", "Liveness", [], Body::None, [reply(200, object!("`{status: \"ok\"}`."), "The server answers.")], []),
    op!(GET "/agent_api/v1/openapi.json", "This document", [], Body::None, [
        reply(200, object!("The OpenAPI 3.1 document of this API."), "The document."),
    ], []),
    op!(GET "/console", "The console's page", [], Body::None, [
        reply(200, Content::Page, "The console."),
        reply(304, Content::Empty, "`If-None-Match` names the current ETag."),
    ], []),
    op!(GET "/console/", "The console's page", [], Body::None, [
        reply(200, Content::Page, "The console."),
        reply(304, Content::Empty, "`If-None-Match` names the current ETag."),
    ], []),
    op!(GET "/console/{*path}", "A console file", [], Body::None, [
        reply(200, Content::Page, "The file."),
        reply(304, Content::Empty, "`If-None-Match` names the current ETag."),
    ], [NotFound]),
    op!(GET "/agent_api/v1/tools", "The kernel tool catalog", [], Body::None, [
        reply(200, json!(Catalog), "Every kernel tool, in registry order (registry.md §7)."),
        reply(304, Content::Empty, "`If-None-Match` names the current ETag."),
    ], []),
    op!(POST "/agent_api/v1/tools/assembly", "Preview a tools block", [], Body::Json(typed::<AssemblyRequest>()), [
        reply(200, json!(AssemblyPreview), "The preview (declarations.md §12.1)."),
    ], [ValidationFailed, ReservedNamespace, ToolNotDeclared, ContentTooLarge, ParameterMissing, ParameterInvalid, RunnerNotEligible, RunnerNotDeclared, ToolNotServed, NotAgent, RunnerNotFound]),
    op!(GET "/agent_api/v1/profile", "The caller's profile", [], Body::None, [
        reply(200, json!(Profile), "The profile (declarations.md §12.2)."),
    ], []),
    op!(PUT "/agent_api/v1/profile/configuration", "Replace the caller's configuration", [], Body::Json(typed::<PutConfiguration>()), [
        reply(200, json!(Profile), "The profile read after the write (declarations.md §12.3)."),
    ], [NotAgent, ValidationFailed, RunnerNotFound, RunnerNotEligible, ToolNotDeclared, ParameterMissing, ParameterInvalid]),
    op!(GET "/agent_api/v1/executors", "The runners eligible for the caller", [
        param("kind", Kind::Words(&["runner"]), "Only `runner` is listed."),
    ], Body::None, [reply(200, json!(ExecutorList), "The runners.")], [ParameterInvalid]),
    op!(GET "/agent_api/v1/executors/{id}", "One eligible runner", [], Body::None, [
        reply(200, json!(ExecutorEnvelope), "The runner."),
    ], []),
    op!(POST "/agent_api/v1/uploads", "Upload a file", [], Body::Upload, [UPLOAD_CREATED], [ContentTooLarge, ParameterInvalid]),
    op!(GET "/agent_api/v1/uploads/{id}", "An upload's descriptor", [], Body::None, [UPLOAD], []),
    op!(GET "/agent_api/v1/uploads/{id}/bytes", "An upload's bytes", [], Body::None, BYTES, [RangeNotSatisfiable]),
    op!(GET "/agent_api/v1/executor", "The calling executor", [], Body::None, [
        reply(200, json!(ExecutorDescription), "The executor (executor.md §2)."),
    ], []),
    op!(PUT "/agent_api/v1/executor/announcement", "Announce what the executor serves", [], Body::Json(typed::<Announcement>()), [
        reply(200, json!(ExecutorDescription), "Announced: the `GET X` body (executor.md §4)."),
    ], [InvalidAnnouncement, ReservedNamespace, ContentTooLarge, ValidationFailed, ParameterMissing, ParameterInvalid]),
    op!(POST "/agent_api/v1/executor/progress", "Report progress on a claim", [], Body::Json(typed::<Progress>()), [
        reply(202, json!(ProgressReply), "Relayed, or why not (executor.md §11)."),
    ], [FrameTooLarge, InvalidFrame, NotClaimant, ClaimInactive, StaleClaim, NotFound, ParameterMissing, ParameterInvalid]),
    op!(GET "/agent_api/v1/executor/channel", "The executor's push channel (WebSocket)", [], Body::None, [
        reply(101, Content::Empty, "Switching protocols: a WebSocket of control frames (executor.md §13)."),
    ], [BadRequest]),
    op!(GET "/agent_api/v1/executor/inbox", "The executor's inbox", [AFTER, LIMIT], Body::None, [
        reply(200, json!(InboxList), "One page (executor.md §6)."),
    ], [ParameterInvalid]),
    op!(POST "/agent_api/v1/executor/inbox/{run}/{task}/claim", "Claim a row", [IDEMPOTENCY_KEY], NO_BODY, [
        reply(200, json!(ClaimGrant), "Claimed (executor.md §7)."),
    ], [AlreadyClaimed, AlreadyTerminal, NotClaimableKind, NotAddressedHere, TaskNotClaimable, NotEligible, ToolNotServed, NotAuthorized]),
    op!(GET "/agent_api/v1/executor/inbox/{run}/{task}/claim", "A claim's status", [CLAIM_TOKEN], Body::None, [
        reply(200, json!(ClaimStatusReply), "The claim's state (executor.md §7)."),
    ], [NotAddressedHere, NotClaimant, ParameterMissing]),
    op!(POST "/agent_api/v1/executor/inbox/{run}/{task}/extend", "Extend a claim", [], Body::Json(typed::<Extend>()), [
        reply(200, json!(ClaimGrant), "Extended: the new deadline (executor.md §8)."),
    ], [NotClaimant, ClaimInactive, StaleClaim, AlreadyTerminal, NotAddressedHere, ExtensionTooLong, NotExtendable, InvalidTimeoutMs, ParameterMissing, ParameterInvalid]),
    op!(POST "/agent_api/v1/executor/inbox/{run}/{task}/commit", "Commit a result", [], Body::Json(typed::<Commit>()), [
        reply(200, json!(CommitReply), "Committed, or `idle` when the row had settled (executor.md §9)."),
    ], [NotClaimant, ClaimInactive, StaleClaim, AlreadyTerminal, NotAddressedHere, InvalidContent, UnsupportedContentKind, TooManyContentBlocks, ResultTooLarge, ResultUnstorable, UnknownResultUpload, InvalidResultType, InvalidOutcome, InvalidTitle, InvalidMetadata, MetadataTooLarge, ContentTooLarge, NotClaimableKind, NotAuthorized, ValidationFailed, ParameterMissing, ParameterInvalid]),
    op!(GET "/agent_api/v1/executor/inbox/{run}/{task}/attachments/{upload}", "A claimed call's attachment", [CLAIM_TOKEN], Body::None, [UPLOAD], [NotClaimant, ClaimInactive, StaleClaim, AlreadyTerminal, NotAddressedHere, ParameterMissing]),
    op!(GET "/agent_api/v1/executor/inbox/{run}/{task}/attachments/{upload}/bytes", "A claimed call's attachment bytes", [CLAIM_TOKEN], Body::None, BYTES, [NotClaimant, ClaimInactive, StaleClaim, AlreadyTerminal, NotAddressedHere, RangeNotSatisfiable, ParameterMissing]),
    op!(POST "/agent_api/v1/executor/uploads", "Upload a capture", [], Body::Upload, [UPLOAD_CREATED], [ContentTooLarge, ParameterInvalid]),
    op!(GET "/agent_api/v1/executor/uploads/{id}", "A capture's descriptor", [], Body::None, [UPLOAD], []),
    op!(POST w!("/runs"), "Create a run", [IDEMPOTENCY_KEY], Body::Json(typed::<CreateRun>()), [
        reply(201, json!(Created), "Created."),
        reply(200, json!(Created), "A replay of an earlier create with the same `Idempotency-Key`."),
    ], [IdempotencyEnvelopeMismatch, InvalidApprovalMode, InvalidApprovalRules, RunnerNotEligible, RunnerNotDeclared, RunnerNotFound, EdgeAuthoringRefused, InvalidSteps, ValidationFailed, ToolNotDeclared, ToolNotServed, ReservedNamespace, ParameterMissing, ParameterInvalid]),
    op!(GET w!("/runs"), "List runs", [
        param("status", Kind::Words(&["pending", "running", "needs_attention", "canceling", "completed", "canceled"]), "Only runs in this status."),
        AFTER, LIMIT,
        param("order", Kind::Words(&["asc", "desc"]), "Oldest first (default) or newest first."),
    ], Body::None, [reply(200, json!(RunPage), "One page.")], [ParameterInvalid]),
    op!(GET w!("/approvals"), "The workspace's approval queue", [AFTER, LIMIT], Body::None, [
        reply(200, json!(ApprovalPage), "One page."),
    ], [ParameterInvalid]),
    op!(GET w!("/runs/{run}"), "Read a run", [], Body::None, [reply(200, json!(RunRead), "The run and its usage.")], []),
    op!(POST w!("/runs/{run}/start"), "Start a run", [], EMPTY_BODY, [RUN], [NotStartable]),
    op!(POST w!("/runs/{run}/stop"), "Stop a run", [], Body::Json(typed::<Stop>()), [RUN], [AlreadyTerminal, ParameterInvalid]),
    op!(POST w!("/runs/{run}/tasks"), "Append steps", [IDEMPOTENCY_KEY], Body::Json(typed::<AppendSteps>()), [
        reply(201, json!(Appended), "Appended."),
        reply(200, json!(Appended), "A replay of an earlier append with the same `Idempotency-Key`."),
    ], [RunNotAppendable, ConversationHosted, TipLive, TipUnresolved, DuplicateTaskKey, StaleRevision, IdempotencyEnvelopeMismatch, InvalidSteps, EdgeAuthoringRefused, ValidationFailed, RunnerNotEligible, RunnerNotDeclared, RunnerNotFound, ToolNotDeclared, ToolNotServed, ParameterMissing, ParameterInvalid]),
    op!(GET w!("/runs/{run}/tasks"), "List a run's tasks", [AFTER, LIMIT,
        param("status", Kind::Text, "Only tasks in this public status."),
    ], Body::None, [reply(200, json!(TaskPage), "One page.")], [ParameterInvalid]),
    op!(GET w!("/runs/{run}/tasks/{key}"), "Read a task", [], Body::None, [reply(200, json!(TaskEnvelope), "The task.")], []),
    op!(GET w!("/runs/{run}/tasks/{key}/request"), "A model task's sealed request", [
        param("format", Kind::Words(&["provider"]), "`provider`: the provider body bytes as sent."),
        param("generation", Kind::Integer, "A past generation of the task."),
    ], Body::None, [
        reply(200, Content::Json(Shape::Either(&typed::<SealedEnvelope>(), "With `format=provider`: the provider body as sent (JSON), its SHA-256 in `x-body-sha256`.")), "The sealed record, or the provider body."),
    ], [RequestNotSealed, ParameterInvalid]),
    op!(GET w!("/runs/{run}/cache"), "A run's prompt-cache report", [], Body::None, [
        reply(200, json!(CacheEnvelope), "Per model round: the tools digest and usage."),
    ], []),
    op!(POST w!("/runs/{run}/tasks/{key}/approve"), "Approve a held call", [], EMPTY_BODY, [TASK], [
        NotAwaitingApproval, NotAdjudicable, AlreadyTerminal,
    ]),
    op!(POST w!("/runs/{run}/tasks/{key}/deny"), "Deny a held call", [], Body::Json(typed::<Deny>()), [TASK], [NotAwaitingApproval, NotAdjudicable, AlreadyTerminal, ParameterInvalid]),
    op!(POST w!("/runs/{run}/tasks/{key}/resolution"), "Answer an await", [], Body::Json(typed::<Resolution>()), [
        reply(200, json!(Resolved), "The await's answer."),
    ], [
        StaleClaim, TaskNotRunning, NotResolvable, InvalidOutcome, InvalidContent, UnsupportedContentKind,
        TooManyContentBlocks, ResultTooLarge, ResultUnstorable, UnknownResultUpload, AlreadyTerminal, ValidationFailed,
    ]),
    op!(POST w!("/runs/{run}/tasks/{key}/retry"), "Retry a failed task", [], Body::Json(typed::<Retry>()), [TASK], [NotRetryable, ParameterInvalid]),
    op!(POST w!("/runs/{run}/tasks/{key}/abandon"), "Abandon a failed task", [], EMPTY_BODY, [TASK], [NotAbandonable]),
    op!(POST w!("/runs/{run}/tasks/{key}/cancel"), "Cancel a branch", [], EMPTY_BODY, [TASK], [NotABranch, AlreadyTerminal]),
    op!(PUT w!("/runs/{run}/default_runner"), "Set a run's default runner", [], Body::Json(typed::<SetDefaultRunner>()), [RUN], [RunnerNotFound, ConversationHosted, AlreadyTerminal, RunnerNotEligible, ParameterMissing, ParameterInvalid]),
    op!(GET w!("/runs/{run}/transcript"), "A run's transcript", [
        param("include_hidden", Kind::Boolean, "Include rows hidden from the model."),
    ], Body::None, [reply(200, json!(Transcript), "The transcript.")], [ParameterInvalid]),
    op!(GET w!("/runs/{run}/graph"), "A run's graph", [], Body::None, [reply(200, json!(Graph), "Nodes and edges.")], []),
    op!(GET w!("/runs/{run}/events"), "A run's durable events", [SEQ_AFTER, EVENTS_LIMIT], Body::None, [
        reply(200, json!(EventPage), "Events after the sequence."),
    ], [ParameterInvalid]),
    op!(GET w!("/runs/{run}/events/stream"), "A run's live feed (Server-Sent Events)", [SEQ_AFTER], Body::None, [
        reply(200, Content::Events, "Durable events (with `id:`) and ephemeral frames; resumes from `Last-Event-ID`."),
    ], [ParameterInvalid]),
    op!(POST w!("/conversations"), "Create a conversation", [IDEMPOTENCY_KEY], Body::Json(typed::<CreateConversation>()), [
        reply(201, json!(ConversationCreated), "Created."),
        reply(200, json!(ConversationCreated), "A replay of an earlier create with the same `Idempotency-Key`."),
    ], [AnswererNotEligible, RunnerNotEligible, RunnerNotFound, IdempotencyEnvelopeMismatch, ValidationFailed, ParameterMissing, ParameterInvalid]),
    op!(GET w!("/conversations"), "List conversations", [ARCHIVED, AFTER, LIMIT], Body::None, [
        reply(200, json!(ConversationPage), "One page of top-level conversations."),
    ], [ParameterInvalid]),
    op!(GET w!("/conversations/{c}"), "Read a conversation", [], Body::None, [CONVERSATION_READ], []),
    op!(GET w!("/conversations/{c}/children"), "A conversation's children", [], Body::None, [
        reply(200, json!(ConversationPage), "Every child."),
    ], []),
    op!(POST w!("/conversations/{c}/archive"), "Archive a conversation", [], Body::None, [CONVERSATION_READ], [SubagentFollowsParent]),
    op!(POST w!("/conversations/{c}/unarchive"), "Unarchive a conversation", [], Body::None, [CONVERSATION_READ], [SubagentFollowsParent]),
    op!(PUT w!("/conversations/{c}/default_runner"), "Set a conversation's default runner", [], Body::Json(typed::<SetDefaultRunner>()), [CONVERSATION_READ], [RunnerNotFound, RunnerNotEligible, ParameterMissing, ParameterInvalid]),
    op!(GET w!("/conversations/{c}/events"), "A conversation's durable events", [SEQ_AFTER, EVENTS_LIMIT], Body::None, [
        reply(200, json!(ConversationEventPage), "Events after the sequence."),
    ], [ParameterInvalid]),
    op!(GET w!("/conversations/{c}/events/stream"), "A conversation's live feed (Server-Sent Events)", [SEQ_AFTER], Body::None, [
        reply(200, Content::Events, "Durable events with `id:`; resumes from `Last-Event-ID`."),
    ], [ParameterInvalid]),
    op!(POST w!("/conversations/{c}/inputs"), "Send an input", [IDEMPOTENCY_KEY], Body::Json(typed::<CreateInput>()), [
        reply(201, json!(InputCreated), "Accepted."),
        reply(200, json!(InputCreated), "A replay of an earlier input with the same `Idempotency-Key`."),
    ], [ConversationArchived, InputQueueFull, ValidationFailed, ToolNotDeclared, AnswererNotEligible, DeliverAtAmbiguous, DeliverAtInPast, DeliverAtTooFar, DeliverAtNotSteerable, InvalidApprovalMode, IdempotencyEnvelopeMismatch, ParameterMissing, ParameterInvalid]),
    op!(GET w!("/conversations/{c}/inputs"), "A conversation's inputs", [AFTER, LIMIT], Body::None, [
        reply(200, json!(InputPage), "One page."),
    ], [ParameterInvalid]),
    op!(DELETE w!("/conversations/{c}/inputs/{input}"), "Withdraw a pending input", [], Body::None, [
        reply(200, json!(InputEnvelope), "The input, deleted."),
    ], [InputNotPending]),
    op!(GET w!("/conversations/{c}/turns"), "A conversation's turns", [
        param("after", Kind::Sequence, "Turns after this position (0: from the first)."),
        LIMIT,
    ], Body::None, [reply(200, json!(TurnPage), "One page.")], [ParameterInvalid]),
    op!(POST w!("/conversations/{c}/cancellation"), "Stop the running turn", [], Body::None, [
        reply(200, json!(Cancellation), "Which turn was stopped."),
    ], []),
    op!(GET w!("/members"), "The workspace's members", [
        param("kind", Kind::Words(&["agent", "human"]), "Only members of this kind."),
    ], Body::None, [reply(200, json!(MemberList), "Every member holding standing in the workspace, by handle.")], [ParameterInvalid]),
    op!(GET w!("/conversation_search"), "Search conversation history", [
        required(param("query", Kind::NonBlank, "The words to find (at least one letter or digit).")),
        ARCHIVED,
        param("include_auxiliary", Kind::Boolean, "Include children's conversations."),
        HISTORY_LIMIT,
        param("after", Kind::SearchCursor, "The `next_after` of the previous page."),
    ], Body::None, [reply(200, json!(SearchPage), "Ranked matches.")], [ParameterMissing, ParameterInvalid]),
    op!(GET w!("/conversations/{c}/history"), "A window of a conversation's turns", [
        param(
            "window",
            Kind::OneOf(&[
                ("around_turn_id", Kind::Uuid),
                ("after_position", Kind::Sequence),
                ("before_position", Kind::Sequence),
            ]),
            "At most one of `around_turn_id`, `after_position`, `before_position` (none: the newest turns).",
        ),
        HISTORY_LIMIT,
    ], Body::None, [reply(200, json!(History), "The window.")], [ParameterInvalid]),
    op!(GET w!("/memory"), "List memory documents", [
        param("prefix", Kind::MemoryPrefix, "Only paths under this prefix."),
        CONVERSATION,
    ], Body::None, [reply(200, json!(DocumentList), "The documents, without content.")], [ParameterInvalid, ValidationFailed, ParameterMissing]),
    op!(GET w!("/memory/doc"), "Read a memory document", [MEMORY_PATH, CONVERSATION], Body::None, [
        reply(200, json!(DocumentEnvelope), "The document."),
    ], [ParameterMissing, ParameterInvalid, ValidationFailed]),
    op!(PUT w!("/memory/doc"), "Write a memory document", [], Body::Json(typed::<PutDocument>()), [
        reply(200, json!(DocumentEnvelope), "The document as stored."),
    ], [StaleObject, ValidationFailed, ParameterMissing, ParameterInvalid, ContentTooLarge, ReservedNamespace]),
    op!(DELETE w!("/memory/doc"), "Delete a memory document", [
        MEMORY_PATH,
        param("expected_lock_version", Kind::Sequence, "Delete only this version."),
        CONVERSATION,
    ], Body::None, [reply(200, json!(DeletedEnvelope), "What was removed.")], [StaleObject, ParameterMissing, ParameterInvalid, ValidationFailed]),
];
