//! `nexus.conversation.search` (kernel-tools.md §10).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.conversation.search",
    wire: "session_search",
    effect: EffectProfile::READ,
    template: "Search the conversation history of this workspace: conversation titles, the inputs sent and the final replies. Tool output and reasoning are not searched. Archived conversations are skipped unless `archived` says otherwise, and child conversations are included only with `include_auxiliary: true`.\n\nA field matches when it contains every word of the query as a whole word, ignoring case and punctuation; end a word with `*` to match it as a prefix (`deploy*` finds `deployment`). Matches come best first, ranked by relevance among the newest matches. The result is JSON text: `matches`, each with `conversation_public_id`, `title`, `turn_public_id` and `position` (null for a title), the matching `field` and an `excerpt` of at most 500 characters; and `pagination`. At most `limit` matches come back (default 20, at most 50); pass `pagination.next_after` as `after` for the next page.\n\nTo read the turns around a match, call {{session_read}} with its `conversation_public_id` as `session_id` and its `turn_public_id` as `around_turn_id`.",
    parameters: r#"{"type":"object","properties":{
  "query":{"type":"string","description":"Words that must all occur in a field, ignoring case; a word ending in * matches as a prefix. Non-blank, at most 1,024 bytes."},
  "archived":{"type":"string","enum":["exclude","include","only"],"description":"exclude (default): skip archived conversations. include: search them too. only: search only them."},
  "include_auxiliary":{"type":"boolean","description":"true: also search child conversations. Default false."},
  "limit":{"type":"integer","minimum":1,"maximum":50,"description":"The most matches to return, 1 to 50. Default 20."},
  "after":{"type":"string","description":"The pagination.next_after value of the previous page, to continue after it. Omit for the first page."}},
  "required":["query"],"additionalProperties":false}"#,
};
