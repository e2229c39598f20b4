//! `nexus.conversation.read` (kernel-tools.md §10).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.conversation.read",
    wire: "session_read",
    effect: EffectProfile::READ,
    template: "Read the turns of one conversation of this workspace, archived ones included. The result is JSON text: the `conversation` (`public_id`, `title`), its `turns` in ascending position, each with `public_id`, `position`, `role`, `created_at` and its `prompt` or `content` text, and `pagination`. Text is cut at 2,000 characters per field and 12,000 per page, and marked `truncated`. An unknown id gives unknown_conversation.\n\nWithout a cursor you get the newest turns. Give at most one cursor: `around_turn_id` for the turns around one turn (such as a match from {{session_search}}), `before_position` for older turns or `after_position` for newer ones. `pagination` says whether there are older or newer turns (`has_older`, `has_newer`) and gives the `before_position` and `after_position` to pass for the next page. `limit` caps the turns per page (default 20, at most 50).",
    parameters: r#"{"type":"object","properties":{
  "session_id":{"type":"string","description":"The conversation id, such as a conversation_public_id from {{session_search}}."},
  "around_turn_id":{"type":"string","description":"A turn id: read the turns around it. Do not combine with another cursor."},
  "after_position":{"type":"integer","minimum":0,"description":"Read the turns after this position (newer), such as pagination.after_position of the previous page. Do not combine with another cursor."},
  "before_position":{"type":"integer","minimum":0,"description":"Read the turns before this position (older), such as pagination.before_position of the previous page. Do not combine with another cursor."},
  "limit":{"type":"integer","minimum":1,"maximum":50,"description":"The most turns to return, 1 to 50. Default 20."}},
  "required":["session_id"],"additionalProperties":false}"#,
};
