//! Every size bound of the product contract (errors-and-auth.md §5), defined once.
//! Byte bounds are measured on canonical JSON unless marked raw.

/// Request body of a JSON route (raw bytes).
pub const REQUEST_BODY: usize = 2_097_152;
/// Request body of the run create and append doors (raw bytes).
pub const REQUEST_BODY_CREATE_APPEND: usize = 1_048_576;
/// A stored declaration (`tool_definitions_bound`).
pub const TOOL_DEFINITIONS: usize = 1_048_576;
/// Commit or resolution `content`.
pub const RESULT_CONTENT: usize = 1_048_576;
/// Content blocks in one commit.
pub const CONTENT_BLOCKS: usize = 32_768;
/// An authored step's or a model call's tool input.
pub const TOOL_INPUT: usize = 65_536;
/// Announcement lists, progress frames, metadata (`envelope_bound`).
pub const ENVELOPE: usize = 65_536;
/// An announced environment (`executor_environment_bound`).
pub const EXECUTOR_ENVIRONMENT: usize = 65_536;
/// One memory document.
pub const MEMORY_DOCUMENT: usize = 65_536;
/// The rendered skills block (`skill_catalog_bound`).
pub const SKILL_CATALOG: usize = 16_384;
/// `tool_search` result JSON.
pub const TOOL_SEARCH_OUTPUT: usize = 65_536;
/// Profile `instructions`.
pub const INSTRUCTIONS: usize = 65_536;
/// Uploads and captures (raw bytes).
pub const UPLOAD: usize = 104_857_600;
/// Media sent inline to a provider (raw bytes).
pub const INLINE_BINARY: usize = 8_388_608;
/// Callables, served tool names, step tool names (characters).
pub const NAME_CHARS: usize = 128;
/// Served names in an announcement (characters).
pub const ANNOUNCED_NAME_CHARS: usize = 64;
/// Task keys, spawn labels, skill names (characters).
pub const KEY_CHARS: usize = 64;
/// A skill or document description (bytes).
pub const DESCRIPTION_BYTES: usize = 1_024;
/// A commit `title` (characters; longer titles are truncated).
pub const TITLE_CHARS: usize = 200;
/// A deny reason or rule reason carried as detail (bytes; truncated).
pub const REASON_BYTES: usize = 256;
/// Steps per create or append request.
pub const STEPS_PER_REQUEST: usize = 64;
/// Default page size of paged lists.
pub const PAGE_DEFAULT: usize = 50;
/// What an executor may send in one frame or message on its push channel (raw bytes). The
/// channel carries no requests, only control frames (a pong or a close is at most 125 bytes),
/// so anything longer closes the channel. Not in the spec's table: the implementation's bound
/// (docs/decisions/190-read-timeouts-and-body-bounds.md).
pub const CHANNEL_INBOUND: usize = 1_024;
/// Maximum page size of paged lists.
pub const PAGE_MAX: usize = 200;
/// `Idempotency-Key` length (characters, visible ASCII).
pub const IDEMPOTENCY_KEY_CHARS: usize = 64;
/// Pending `user` inputs a conversation holds (kernel mail is not counted).
pub const PENDING_INPUTS: usize = 64;
/// How far in the past a `deliver_at` may lie (milliseconds).
pub const DELIVER_AT_PAST_MS: i64 = 2 * 60 * 1000;
/// How far ahead a `deliver_at` may lie (milliseconds; ten years of 365.25 days).
pub const DELIVER_AT_AHEAD_MS: i64 = 315_576_000_000;
/// `session_search` and `GET W/conversation_search` (kernel-tools.md §10): `query` bytes.
pub const HISTORY_QUERY_BYTES: usize = 1_024;
/// History search: the default and largest `limit`.
pub const HISTORY_SEARCH_DEFAULT_LIMIT: usize = 20;
pub const HISTORY_SEARCH_MAX_LIMIT: usize = 50;
/// History search: the newest matching turns (and, apart, titles) that are ranked.
pub const HISTORY_SEARCH_CANDIDATES: usize = 500;
/// History search: a match's `excerpt` (characters).
pub const HISTORY_EXCERPT_CHARS: usize = 500;
/// `session_read` and `GET C/history`: the default and largest `limit`.
pub const HISTORY_READ_DEFAULT_LIMIT: usize = 20;
pub const HISTORY_READ_MAX_LIMIT: usize = 50;
/// History read: the text of one turn's field, and of one page (characters).
pub const HISTORY_FIELD_CHARS: usize = 2_000;
pub const HISTORY_PAGE_CHARS: usize = 12_000;
