//! The `messages` array (providers.md §5.1): neutral entries to alternating user and
//! assistant messages.
//!
//! - `User` and `Attachments` parts: `text` blocks (blank text is skipped), `image` and
//!   `document` blocks with base64 `source`s read from the [`BlobReader`] (a missing upload is
//!   `provider_error` naming it).
//! - `ToolResult`: a `tool_result` block; `content` is the output, omitted when blank;
//!   `is_error: true` only when the output is an error.
//! - `Assistant`: its `native` blocks first, verbatim (an array's elements; a lone object is one
//!   block; `null` is none), then a `text` block when the text is not blank, then one
//!   `tool_use` per call with `input` the parsed arguments. Arguments that are not a JSON object
//!   (malformed, or another JSON value) are sent as `{}`: the kernel has already answered such a
//!   call with an error result, and the wire only takes an object.
//! - Consecutive entries of one role merge into one message, in entry order. The kernel orders a
//!   round's entries as results, attachments, steer (providers.md §3), so one user message holds
//!   the `tool_result` blocks, then the attachment blocks, then the steer text. An entry with no
//!   block (an empty assistant reply) opens no message, so its neighbours merge.
//!
//! The [`Writer`] can resume after the last closed message of an earlier body (see
//! `encode.rs`): it records where it opened its last message and what it had read by then.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use uuid::Uuid;

use super::json::{blank, write_str, write_value};
use crate::neutral::{Entry, Part, RawToolCall};
use crate::provider::{BlobReader, ProviderError};

/// A message's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

/// Where the writer opened a message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    /// The length of the output before the message (and its separating comma).
    pub pos: usize,
    /// The index of the entry that opened it.
    pub entry: usize,
    /// The end of the last user block before it (see [`Writer::last_user_block_end`]).
    pub user_block_end: Option<usize>,
    /// How many uploads were read before it.
    pub uploads: usize,
}

/// Writes messages into `out`. Positions are in message coordinates: `offset` (the length of
/// the earlier messages, kept elsewhere) plus the position in `out`.
pub(crate) struct Writer<'a> {
    out: &'a mut Vec<u8>,
    offset: usize,
    blobs: &'a dyn BlobReader,
    /// The role of the open message.
    open: Option<Role>,
    /// Whether a message precedes the next one (which then needs a comma).
    any: bool,
    /// The position just after the last block written in a user message (message
    /// coordinates).
    pub last_user_block_end: Option<usize>,
    /// Where the last message opened, if this writer opened one (message coordinates).
    pub opened: Option<Mark>,
    /// The uploads inlined, in order, with their sizes.
    pub uploads: Vec<(Uuid, usize)>,
}

impl<'a> Writer<'a> {
    /// A writer after `offset` bytes of earlier (closed) messages, `any` if there are some;
    /// `last_user_block_end` as they left it.
    pub(crate) fn new(
        out: &'a mut Vec<u8>,
        offset: usize,
        blobs: &'a dyn BlobReader,
        any: bool,
        last_user_block_end: Option<usize>,
    ) -> Self {
        Self {
            out,
            offset,
            blobs,
            open: None,
            any,
            last_user_block_end,
            opened: None,
            uploads: Vec::new(),
        }
    }

    /// Writes entry `index`.
    pub(crate) fn entry(&mut self, index: usize, entry: &Entry) -> Result<(), ProviderError> {
        match entry {
            Entry::User { parts } | Entry::Attachments { parts } => {
                for part in parts {
                    self.part(index, part)?;
                }
            }
            Entry::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => {
                self.open_block(Role::User, index);
                self.out.extend_from_slice(br#"{"type":"tool_result","tool_use_id":"#);
                write_str(self.out, call_id);
                if !blank(output) {
                    self.out.extend_from_slice(br#","content":"#);
                    write_str(self.out, output);
                }
                if *is_error {
                    self.out.extend_from_slice(br#","is_error":true"#);
                }
                self.out.push(b'}');
                self.close_block(Role::User);
            }
            Entry::Assistant {
                text,
                tool_calls,
                native,
            } => {
                match native {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(blocks)) => {
                        for block in blocks {
                            self.open_block(Role::Assistant, index);
                            write_value(self.out, block);
                        }
                    }
                    Some(block @ Value::Object(_)) => {
                        self.open_block(Role::Assistant, index);
                        write_value(self.out, block);
                    }
                    Some(_) => {
                        return Err(ProviderError::error(format!(
                            "entries[{index}]: native must be an array of blocks"
                        )));
                    }
                }
                if let Some(text) = text.as_deref().filter(|t| !blank(t)) {
                    self.open_block(Role::Assistant, index);
                    self.text_block(text);
                }
                for call in tool_calls {
                    self.open_block(Role::Assistant, index);
                    self.tool_use(call);
                }
            }
        }
        Ok(())
    }

    /// Closes the open message, if any (the caller closes the array).
    pub(crate) fn finish(&mut self) {
        if self.open.take().is_some() {
            self.out.extend_from_slice(b"]}");
        }
    }

    fn part(&mut self, index: usize, part: &Part) -> Result<(), ProviderError> {
        match part {
            Part::Text { text } => {
                if blank(text) {
                    return Ok(());
                }
                self.open_block(Role::User, index);
                self.text_block(text);
            }
            Part::Image { upload, media_type } => {
                let bytes = self.blob(index, *upload)?;
                self.open_block(Role::User, index);
                self.out
                    .extend_from_slice(br#"{"type":"image","source":{"type":"base64","media_type":"#);
                write_str(self.out, media_type);
                self.data(bytes);
            }
            Part::Document { upload } => {
                let bytes = self.blob(index, *upload)?;
                self.open_block(Role::User, index);
                self.out.extend_from_slice(
                    br#"{"type":"document","source":{"type":"base64","media_type":"application/pdf""#,
                );
                self.data(bytes);
            }
        }
        self.close_block(Role::User);
        Ok(())
    }

    fn blob(&mut self, index: usize, upload: Uuid) -> Result<&'a [u8], ProviderError> {
        let blobs: &'a dyn BlobReader = self.blobs;
        let bytes = blobs.bytes(upload).ok_or_else(|| {
            ProviderError::error(format!(
                "entries[{index}]: the bytes of upload {upload} are not available"
            ))
        })?;
        self.uploads.push((upload, bytes.len()));
        Ok(bytes)
    }

    /// `,"data":"<base64>"}}` (base64 needs no escaping).
    fn data(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(br#","data":""#);
        let start = self.out.len();
        self.out
            .resize(start + base64::encoded_len(bytes.len(), true).unwrap_or(0), 0);
        let written = STANDARD
            .encode_slice(bytes, &mut self.out[start..])
            .expect("the buffer has the encoded length");
        self.out.truncate(start + written);
        self.out.extend_from_slice(br#""}}"#);
    }

    fn text_block(&mut self, text: &str) {
        self.out.extend_from_slice(br#"{"type":"text","text":"#);
        write_str(self.out, text);
        self.out.push(b'}');
    }

    fn tool_use(&mut self, call: &RawToolCall) {
        self.out.extend_from_slice(br#"{"type":"tool_use","id":"#);
        write_str(self.out, &call.id);
        self.out.extend_from_slice(br#","name":"#);
        write_str(self.out, &call.name);
        self.out.extend_from_slice(br#","input":"#);
        match serde_json::from_str::<Value>(&call.arguments) {
            Ok(input @ Value::Object(_)) => write_value(self.out, &input),
            _ => self.out.extend_from_slice(b"{}"),
        }
        self.out.push(b'}');
    }

    /// Starts a block of `role`: after a comma in the open message of that role, else in a new
    /// message (closing the open one).
    fn open_block(&mut self, role: Role, entry: usize) {
        if self.open == Some(role) {
            self.out.push(b',');
            return;
        }
        self.finish();
        self.opened = Some(Mark {
            pos: self.offset + self.out.len(),
            entry,
            user_block_end: self.last_user_block_end,
            uploads: self.uploads.len(),
        });
        if self.any {
            self.out.push(b',');
        }
        self.out.extend_from_slice(match role {
            Role::User => br#"{"role":"user","content":["#,
            Role::Assistant => br#"{"role":"assistant","content":["#,
        });
        self.open = Some(role);
        self.any = true;
    }

    fn close_block(&mut self, role: Role) {
        if role == Role::User {
            self.last_user_block_end = Some(self.offset + self.out.len());
        }
    }
}
