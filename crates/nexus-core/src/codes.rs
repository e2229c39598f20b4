//! The HTTP error codes of the product contract (errors-and-auth.md §3), each with its status
//! and its documentation, defined once. The server maps a [`Code`] to the envelope
//! `{"error":{"code","message"}}`; the docs and the tests read the same table.
//!
//! Task error keys (data on a settled task) and tool-result words (kernel tool results) are
//! separate vocabularies and live in [`TaskErrorKey`] and the kernel tool files.

macro_rules! codes {
    ($( $variant:ident = $status:literal, $code:literal, $doc:literal; )*) => {
        /// An HTTP error code. `as_str` is the wire word; `status` is its HTTP status.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $( #[doc = $doc] $variant, )*
        }

        impl Code {
            /// Every code, in table order.
            pub const ALL: &'static [Code] = &[$( Code::$variant, )*];

            /// The snake_case wire word.
            pub const fn as_str(self) -> &'static str {
                match self { $( Code::$variant => $code, )* }
            }

            /// The HTTP status the code is always served with.
            pub const fn status(self) -> u16 {
                match self { $( Code::$variant => $status, )* }
            }

            /// What the code means (also the default human message).
            pub const fn doc(self) -> &'static str {
                match self { $( Code::$variant => $doc, )* }
            }

            /// Looks a code up by its wire word.
            pub fn from_word(word: &str) -> Option<Code> {
                match word { $( $code => Some(Code::$variant), )* _ => None }
            }
        }
    };
}

codes! {
    BadRequest = 400, "bad_request", "The body is not JSON, not an object, or not valid UTF-8.";
    ParameterMissing = 400, "parameter_missing", "A required parameter is absent.";
    ParameterInvalid = 400, "parameter_invalid", "A parameter has a value outside its grammar.";
    Unauthorized = 401, "unauthorized", "authentication required";
    NotAuthorized = 403, "not_authorized", "The caller lacks the standing this verb needs.";
    NotAgent = 403, "not_agent", "Only an agent member may use this route.";
    NotFound = 404, "not_found", "No such resource is visible to the caller.";
    RunnerNotFound = 404, "runner_not_found", "No such runner is visible to the caller.";
    MethodNotAllowed = 405, "method_not_allowed", "The route exists but does not take this HTTP method.";
    RequestNotSealed = 404, "request_not_sealed", "The model task has no sealed request yet.";
    AlreadyClaimed = 409, "already_claimed", "Another claim holds this row, or its claim expired.";
    AlreadyTerminal = 409, "already_terminal", "The resource has already ended.";
    ConversationArchived = 409, "conversation_archived", "The conversation is archived and takes no inputs.";
    ClaimInactive = 409, "claim_inactive", "The claim is no longer active.";
    DuplicateTaskKey = 409, "duplicate_task_key", "A task with this key already exists in the run.";
    ExtensionTooLong = 409, "extension_too_long", "The extension passes the longest allowed deadline.";
    IdempotencyEnvelopeMismatch = 409, "idempotency_envelope_mismatch", "The Idempotency-Key was used with a different body.";
    InputNotPending = 409, "input_not_pending", "Only a pending input can be deleted.";
    InputQueueFull = 409, "input_queue_full", "The conversation already holds 64 pending inputs.";
    NotABranch = 409, "not_a_branch", "The row is not the root round of a branch.";
    NotAbandonable = 409, "not_abandonable", "The row is not an adjudication candidate of a live run.";
    NotAddressedHere = 409, "not_addressed_here", "The row is not addressed to this executor.";
    NotAdjudicable = 409, "not_adjudicable", "The run is not running or needs_attention, so its approvals cannot be decided.";
    NotAwaitingApproval = 409, "not_awaiting_approval", "The row is not held for approval.";
    NotClaimableKind = 409, "not_claimable_kind", "Rows of this kind cannot be claimed.";
    NotClaimant = 409, "not_claimant", "The caller does not hold this claim.";
    NotEligible = 409, "not_eligible", "The executor is not eligible for this run.";
    NotExtendable = 409, "not_extendable", "The row cannot be extended in its current state.";
    NotResolvable = 409, "not_resolvable", "The await is held by the kernel and cannot be resolved through a door.";
    NotRetryable = 409, "not_retryable", "The row is not an adjudication candidate, or the run is canceling or has ended.";
    NotStartable = 409, "not_startable", "The run cannot be started in its current state.";
    RunNotAppendable = 409, "run_not_appendable", "The run does not accept appends in its current state.";
    StaleClaim = 409, "stale_claim", "The claim token is stale.";
    StaleObject = 409, "stale_object", "The expected lock version does not match the stored one.";
    StaleRevision = 409, "stale_revision", "expected_revision does not match the run's current revision.";
    SubagentFollowsParent = 409, "subagent_follows_parent", "A child conversation is archived and unarchived with its parent.";
    ConversationHosted = 409, "conversation_hosted", "A conversation owns this run's growth: the body names the conversation and the turn.";
    TaskNotClaimable = 409, "task_not_claimable", "The task is not in a claimable state.";
    TaskNotRunning = 409, "task_not_running", "The task was never started.";
    TipLive = 409, "tip_live", "The run's tip is still live.";
    TipUnresolved = 409, "tip_unresolved", "The run's deliverable is an unadjudicated failure.";
    ContentTooLarge = 413, "content_too_large", "The content exceeds its size bound.";
    UnsupportedMediaType = 415, "unsupported_media_type", "A JSON route was given a body whose Content-Type is not JSON.";
    RangeNotSatisfiable = 416, "range_not_satisfiable", "The requested byte range cannot be served.";
    ValidationFailed = 422, "validation_failed", "The body breaks the grammar; reason and path say where.";
    InvalidSteps = 422, "invalid_steps", "One or more steps break the step grammar.";
    EdgeAuthoringRefused = 422, "edge_authoring_refused", "Raw graph fields are refused: edges come only from written order, after and results.";
    InvalidApprovalMode = 422, "invalid_approval_mode", "approval_mode is not one of bypass, ask, rules.";
    InvalidApprovalRules = 422, "invalid_approval_rules", "approval_rules break the rule grammar.";
    RunnerNotDeclared = 422, "runner_not_declared", "The selected runner is not among the declared candidates.";
    RunnerNotEligible = 422, "runner_not_eligible", "The runner is not eligible for the answering principal.";
    ToolNotServed = 422, "tool_not_served", "The routed runner does not serve this tool.";
    ToolNotDeclared = 422, "tool_not_declared", "A named tool is not a callable of the declaration.";
    AnswererNotEligible = 422, "answerer_not_eligible", "The named answerer may not answer in this workspace or conversation.";
    DeliverAtAmbiguous = 422, "deliver_at_ambiguous", "deliver_at and deliver_in were both given.";
    DeliverAtInPast = 422, "deliver_at_in_past", "deliver_at is more than 2 minutes in the past.";
    DeliverAtTooFar = 422, "deliver_at_too_far", "deliver_at is more than 10 years ahead.";
    DeliverAtNotSteerable = 422, "deliver_at_not_steerable", "A scheduled input cannot steer.";
    ReservedNamespace = 422, "reserved_namespace", "The name belongs to a kernel-reserved namespace.";
    InvalidAnnouncement = 422, "invalid_announcement", "The announcement breaks its grammar.";
    FrameTooLarge = 422, "frame_too_large", "The progress frame exceeds 65,536 bytes.";
    InvalidFrame = 422, "invalid_frame", "The progress frame breaks its grammar.";
    InvalidContent = 422, "invalid_content", "A content shape outside the result grammar.";
    UnsupportedContentKind = 422, "unsupported_content_kind", "A well-formed content block of an unsupported kind.";
    TooManyContentBlocks = 422, "too_many_content_blocks", "More content blocks than a body can hold.";
    ResultTooLarge = 422, "result_too_large", "The result content exceeds its bound.";
    ResultUnstorable = 422, "result_unstorable", "The result bytes cannot be stored.";
    UnknownResultUpload = 422, "unknown_result_upload", "A linked upload is not the committer's own capture.";
    InvalidResultType = 422, "invalid_result_type", "result_type must be absent or \"complete\".";
    InvalidOutcome = 422, "invalid_outcome", "outcome must be \"completed\" or \"failed\".";
    InvalidTitle = 422, "invalid_title", "title must be a string without U+0000.";
    InvalidMetadata = 422, "invalid_metadata", "metadata must be an object; metadata.checkpoint an object with a string hash.";
    MetadataTooLarge = 422, "metadata_too_large", "metadata exceeds 65,536 bytes of canonical JSON.";
    InvalidTimeoutMs = 422, "invalid_timeout_ms", "timeout_ms must be a positive integer.";
    RateLimited = 429, "rate_limited", "Too many requests; honour Retry-After.";
    InternalError = 500, "internal_error", "An unexpected server error.";
    CorruptRow = 500, "corrupt_row", "A stored row this request needs does not read; an operator must repair it, and a retry meets it again.";
    Unavailable = 503, "unavailable", "The store cannot be reached.";
}

/// Task error keys (errors-and-auth.md §4): data on a settled task, with no HTTP status.
pub mod task_error {
    pub const TOOL_FAILED: &str = "tool_failed";
    pub const TOOL_TIMEOUT: &str = "tool_timeout";
    pub const TOOL_UNCERTAIN: &str = "tool_uncertain";
    pub const TOOL_NOT_SERVED: &str = "tool_not_served";
    pub const EXECUTOR_REVOKED: &str = "executor_revoked";
    pub const RESULT_UNSTORABLE: &str = "result_unstorable";
    pub const APPROVAL_DENIED: &str = "approval_denied";
    pub const APPROVAL_EXPIRED: &str = "approval_expired";
    pub const UNKNOWN_TOOL: &str = "unknown_tool";
    pub const INVALID_TOOL_ARGUMENTS: &str = "invalid_tool_arguments";
    pub const TRUNCATED_TOOL_ARGUMENTS: &str = "truncated_tool_arguments";
    pub const INVALID_TOOL_INPUT: &str = "invalid_tool_input";
    pub const TOOL_INPUT_TOO_LARGE: &str = "tool_input_too_large";
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn words_are_unique_snake_case_and_round_trip() {
        let mut seen = HashSet::new();
        for code in Code::ALL {
            let w = code.as_str();
            assert!(seen.insert(w), "duplicate code {w}");
            assert!(w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{w}");
            assert_eq!(Code::from_word(w), Some(*code));
            assert!((400..600).contains(&code.status()));
        }
        assert_eq!(Code::from_word("nope"), None);
    }

    #[test]
    fn statuses_follow_the_contract() {
        assert_eq!(Code::Unauthorized.status(), 401);
        assert_eq!(Code::ContentTooLarge.status(), 413);
        assert_eq!(Code::UnsupportedMediaType.status(), 415);
        assert_eq!(Code::ValidationFailed.status(), 422);
        assert_eq!(Code::Unauthorized.doc(), "authentication required");
    }
}
