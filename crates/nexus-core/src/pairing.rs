//! The pairing law and what the model reads (runs.md §8).
//!
//! Every call a round made receives exactly one result in the continuation's request. This
//! module renders that result's `output` from the settled row ([`render_result`]), the output of
//! a call that has no row ([`no_row_output`]), and the envelopes of unpaired sources
//! ([`task_result_envelope`], [`answer_envelope`]) with their escaping.
//!
//! The failure sentences live in one table, [`SENTENCES`]: one fact, one place.

use serde_json::Value;

use crate::bounds;
use crate::codes::task_error;
use crate::results::Block;

/// Opens a result the model must read as an error.
pub const TOOL_USE_ERROR_OPEN: &str = "<tool_use_error>";
/// Closes a result the model must read as an error.
pub const TOOL_USE_ERROR_CLOSE: &str = "</tool_use_error>";

/// Sentence for key `approval_denied`.
pub const APPROVAL_DENIED_SENTENCE: &str =
    "An approver declined this call, so it did not run; do not repeat it unchanged";
/// Sentence for key `approval_expired`.
pub const APPROVAL_EXPIRED_SENTENCE: &str =
    "Nobody decided on this call before its approval window closed, so it did not run";
/// Sentence for key `result_unstorable`.
pub const RESULT_UNSTORABLE_SENTENCE: &str =
    "The tool ran, but its result could not be kept; its effect may have happened";
/// Sentence for status `canceled`.
pub const CANCELED_SENTENCE: &str = "The call was stopped before it finished";
/// Sentence for status `skipped`.
pub const SKIPPED_SENTENCE: &str = "The call was not run because something it depended on failed";
/// Sentence for status `failed`.
pub const FAILED_SENTENCE: &str = "The call could not be completed";
/// Sentence for status `timed_out`.
pub const TIMED_OUT_SENTENCE: &str = "The call did not finish before its deadline";
/// Sentence for status `uncertain`.
pub const UNCERTAIN_SENTENCE: &str =
    "The executor's claim on this call lapsed without a result; its effect may have happened";
/// Sentence for a call that has no row (or no settled row) when the continuation is built.
pub const NO_ROW_SENTENCE: &str = "The call did not finish before the round ended, so it has no result";

/// What a sentence row matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentenceMatch {
    /// The row's `error.key`.
    Key(&'static str),
    /// The row's status.
    Status(&'static str),
}

/// Sentence selection, first match wins (runs.md §8): keys first, then statuses.
pub const SENTENCES: [(SentenceMatch, &str); 8] = [
    (
        SentenceMatch::Key(task_error::APPROVAL_DENIED),
        APPROVAL_DENIED_SENTENCE,
    ),
    (
        SentenceMatch::Key(task_error::APPROVAL_EXPIRED),
        APPROVAL_EXPIRED_SENTENCE,
    ),
    (
        SentenceMatch::Key(task_error::RESULT_UNSTORABLE),
        RESULT_UNSTORABLE_SENTENCE,
    ),
    (SentenceMatch::Status("canceled"), CANCELED_SENTENCE),
    (SentenceMatch::Status("skipped"), SKIPPED_SENTENCE),
    (SentenceMatch::Status("failed"), FAILED_SENTENCE),
    (SentenceMatch::Status("timed_out"), TIMED_OUT_SENTENCE),
    (SentenceMatch::Status("uncertain"), UNCERTAIN_SENTENCE),
];

/// The sentence for a settled, non-completed row, or `None` when nothing matches (the row is
/// not settled).
pub fn sentence_for(status: &str, error_key: Option<&str>) -> Option<&'static str> {
    SENTENCES.iter().find_map(|(m, s)| {
        let hit = match m {
            SentenceMatch::Key(k) => error_key == Some(*k),
            SentenceMatch::Status(st) => status == *st,
        };
        hit.then_some(*s)
    })
}

/// Detected upload types that make a `resource_link` a media link.
pub const MEDIA_TYPES: [&str; 5] = ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"];

/// The placeholder of an unpaired source with no output.
pub const NO_OUTPUT: &str = "(task completed with no output)";

/// A brief is shown by its first this-many characters in `<prompt>`.
pub const PROMPT_HEAD_CHARS: usize = 80;
/// A call's stored input JSON is cut to this many bytes in `<call>`.
pub const CALL_HEAD_BYTES: usize = 200;

/// The settled row a call pairs with (the call row itself, or its paired child).
#[derive(Debug, Clone, Copy)]
pub struct SettledView<'a> {
    /// The row's public status.
    pub status: &'a str,
    /// Whether a completed row was committed with `is_error: true`.
    pub is_error: bool,
    /// The stored blocks (completed rows).
    pub content: &'a [Block],
    /// `error.key`, when the row has one.
    pub error_key: Option<&'a str>,
    /// `error.detail`, when the row has one.
    pub error_detail: Option<&'a str>,
}

/// What the kernel knows about uploads and the round's model, for media links.
pub trait MediaJudge {
    /// The detected facts of a bound upload, by its public id (lowercase hyphenated UUID);
    /// `None` when the id names no bound upload.
    fn media_of(&self, upload_public_id: &str) -> Option<MediaInfo>;
    /// Whether the round's model accepts this media type at this size (providers.md §2).
    fn accepts(&self, content_type: &str, byte_size: u64) -> bool;
}

/// The detected facts of one upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaInfo {
    /// The detected type (never a link's `mimeType`).
    pub content_type: String,
    /// The blob's size in bytes.
    pub byte_size: u64,
    /// The upload's stored name.
    pub name: String,
}

/// One paired result as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The `output` of the neutral result item.
    pub output: String,
    /// Whether the item carries `is_error: true`.
    pub is_error: bool,
    /// Upload ids that ride in the round's attachment-only message, in block order.
    pub attachments: Vec<String>,
}

fn wrap_error(body: &str) -> String {
    format!("{TOOL_USE_ERROR_OPEN}{body}{TOOL_USE_ERROR_CLOSE}")
}

/// Renders the result of a call from its settled row (runs.md §8 table).
///
/// - `completed`: the rendered content; with `is_error`, wrapped in `<tool_use_error>`.
/// - another settled status: `<tool_use_error>` + sentence + ` (key)` + `: detail` (each part
///   only when present) + `</tool_use_error>`.
/// - a status that is not settled: read as "no row" ([`no_row_output`]).
pub fn render_result(view: &SettledView, media: &dyn MediaJudge) -> Rendered {
    if view.status == "completed" {
        let (text, attachments) = render_content(view.content, media);
        let output = if view.is_error { wrap_error(&text) } else { text };
        return Rendered {
            output,
            is_error: view.is_error,
            attachments,
        };
    }
    let Some(sentence) = sentence_for(view.status, view.error_key) else {
        return Rendered {
            output: no_row_output(),
            is_error: true,
            attachments: Vec::new(),
        };
    };
    let mut body = sentence.to_owned();
    if let Some(key) = view.error_key {
        body.push_str(" (");
        body.push_str(key);
        body.push(')');
    }
    if let Some(detail) = view.error_detail {
        body.push_str(": ");
        body.push_str(detail);
    }
    Rendered {
        output: wrap_error(&body),
        is_error: true,
        attachments: Vec::new(),
    }
}

/// Renders completed content: its text lines joined by `\n`, and the attached upload ids.
///
/// A text block contributes its text. A media link (detected type in [`MEDIA_TYPES`]) the
/// model accepts, at most 8,388,608 bytes, contributes nothing and is attached; another media
/// link contributes its [`attachment_index_line`]. Any other link (including one naming no
/// bound upload) contributes its compact JSON in stored member order.
pub fn render_content(blocks: &[Block], media: &dyn MediaJudge) -> (String, Vec<String>) {
    let mut lines: Vec<String> = Vec::with_capacity(blocks.len());
    let mut attachments = Vec::new();
    for block in blocks {
        match block {
            Block::Text(t) => lines.push(t.clone()),
            Block::ResourceLink(link) => {
                let info = block
                    .linked_upload()
                    .map(|id| id.to_string())
                    .and_then(|id| media.media_of(&id).map(|info| (id, info)))
                    .filter(|(_, info)| MEDIA_TYPES.contains(&info.content_type.as_str()));
                match info {
                    Some((id, info))
                        if info.byte_size <= bounds::INLINE_BINARY as u64
                            && media.accepts(&info.content_type, info.byte_size) =>
                    {
                        attachments.push(id);
                    }
                    Some((id, info)) => {
                        let name = link.get("name").and_then(Value::as_str).unwrap_or(&info.name);
                        lines.push(attachment_index_line(name, &info.content_type, info.byte_size, &id));
                    }
                    None => lines.push(Value::Object(link.clone()).to_string()),
                }
            }
        }
    }
    (lines.join("\n"), attachments)
}

/// The index line of media the model does not receive inline:
/// `[attachment: <name> (<content_type>, <byte_size> bytes) nexus://uploads/<id>]`.
pub fn attachment_index_line(name: &str, content_type: &str, byte_size: u64, upload_public_id: &str) -> String {
    format!("[attachment: {name} ({content_type}, {byte_size} bytes) nexus://uploads/{upload_public_id}]")
}

/// The output of a call with no row when the continuation is built.
pub fn no_row_output() -> String {
    wrap_error(NO_ROW_SENTENCE)
}

/// The head line of an unpaired `<task_result>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvelopeHead<'a> {
    /// A branch brief; the first 80 characters are shown.
    Prompt(&'a str),
    /// A tool call: its name and its stored input JSON (cut to 200 bytes with `…`).
    Call {
        /// The called name.
        name: &'a str,
        /// The stored input JSON text.
        input_json: &'a str,
    },
}

/// An unpaired result (step `results`, background deliveries, wait observations):
///
/// ```text
/// <task_result task="KEY" status="S">
/// <prompt>first 80 characters of the brief</prompt>   (or <call>name {"input":…}</call>; optional)
/// the output, or (task completed with no output)
/// </task_result>
/// ```
///
/// The head and the output are escaped with [`escape_envelope_text`].
pub fn task_result_envelope(key: &str, status: &str, head: Option<EnvelopeHead>, output: &str) -> String {
    let mut s = format!("<task_result task=\"{key}\" status=\"{status}\">\n");
    match head {
        Some(EnvelopeHead::Prompt(brief)) => {
            let cut: String = brief.chars().take(PROMPT_HEAD_CHARS).collect();
            s.push_str("<prompt>");
            s.push_str(&escape_envelope_text(&cut));
            s.push_str("</prompt>\n");
        }
        Some(EnvelopeHead::Call { name, input_json }) => {
            s.push_str("<call>");
            s.push_str(&escape_envelope_text(&format!(
                "{name} {}",
                cut_bytes(input_json, CALL_HEAD_BYTES)
            )));
            s.push_str("</call>\n");
        }
        None => {}
    }
    if output.is_empty() {
        s.push_str(NO_OUTPUT);
    } else {
        s.push_str(&escape_envelope_text(output));
    }
    s.push_str("\n</task_result>");
    s
}

/// `s` cut to at most `max` bytes on a character boundary, with `…` appended when cut.
pub fn cut_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// An answer: `<answer task="KEY">…</answer>`, the text escaped.
pub fn answer_envelope(key: &str, text: &str) -> String {
    format!("<answer task=\"{key}\">{}</answer>", escape_envelope_text(text))
}

/// The sequences escaped inside envelopes.
pub const ESCAPED_SEQUENCES: [&str; 4] = ["</task_result", "</message", "<task_result ", "<message "];

/// Escapes only [`ESCAPED_SEQUENCES`], by replacing their `<` with `&lt;`; everything else is
/// kept byte for byte.
pub fn escape_envelope_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if ESCAPED_SEQUENCES.iter().any(|seq| tail.starts_with(seq)) {
            out.push_str("&lt;");
        } else {
            out.push('<');
        }
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
