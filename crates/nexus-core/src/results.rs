//! The result content grammar (executor.md §9.1; seed "The result envelope"): what a commit or a
//! resolution may send as `content`, normalized into the stored blocks.
//!
//! `content` is MCP's `CallToolResult.content`: a bare string, or a list of `text` and
//! `resource_link` blocks. A bare string and a single text block store the same bytes (the
//! tool-result entry is the prompt-cache breakpoint), and whitespace-only text writes nothing.
//!
//! Not here: the storage guard (`result_unstorable`: a U+0000 in text the store refuses) and
//! the capture check (`unknown_result_upload`), which need the store.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::{bounds, jcs};

mod word;
pub use word::ToolWord;

/// The only URI scheme the kernel resolves in a `resource_link`.
pub const UPLOAD_URI_PREFIX: &str = "nexus://uploads/";

/// The refusal words of the content grammar (all 422; the park stands).
pub mod code {
    /// A shape outside the grammar.
    pub const INVALID_CONTENT: &str = "invalid_content";
    /// A well-formed block of another kind (`image`, `audio`, `resource`, …).
    pub const UNSUPPORTED_CONTENT_KIND: &str = "unsupported_content_kind";
    /// More than 32,768 blocks.
    pub const TOO_MANY_CONTENT_BLOCKS: &str = "too_many_content_blocks";
    /// `content` canonical JSON larger than 1,048,576 bytes.
    pub const RESULT_TOO_LARGE: &str = "result_too_large";
}

/// One stored content block.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// `{"type":"text","text":…}`, never whitespace-only.
    Text(String),
    /// A `resource_link` object kept verbatim, member order as sent.
    ResourceLink(Map<String, Value>),
}

impl Block {
    /// The stored JSON of this block.
    pub fn to_json(&self) -> Value {
        match self {
            Block::Text(t) => {
                let mut m = Map::new();
                m.insert("type".into(), Value::String("text".into()));
                m.insert("text".into(), Value::String(t.clone()));
                Value::Object(m)
            }
            Block::ResourceLink(m) => Value::Object(m.clone()),
        }
    }

    /// The upload a `resource_link` names (its URI was validated by [`normalize_content`]).
    pub fn linked_upload(&self) -> Option<Uuid> {
        match self {
            Block::ResourceLink(m) => m.get("uri").and_then(Value::as_str).and_then(upload_of_uri),
            Block::Text(_) => None,
        }
    }
}

/// Serializes as [`Block::to_json`] does, without building the `Value` (replies write the
/// blocks straight out).
impl Serialize for Block {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Block::Text(t) => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("type", "text")?;
                m.serialize_entry("text", t)?;
                m.end()
            }
            Block::ResourceLink(m) => m.serialize(s),
        }
    }
}

/// A refused `content`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ContentError {
    /// One of [`code`].
    pub code: &'static str,
    /// Human text naming the offending value. Not a contract.
    pub message: String,
}

impl ContentError {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    fn invalid(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_CONTENT, message)
    }
}

/// The upload id of a `nexus://uploads/<uuid>` URI (hyphenated UUID, either case).
pub fn upload_of_uri(uri: &str) -> Option<Uuid> {
    let id = uri.strip_prefix(UPLOAD_URI_PREFIX)?;
    if id.len() != 36 {
        return None;
    }
    Uuid::try_parse(id).ok()
}

/// Validates and normalizes `content` into its stored blocks.
///
/// Checks in order: the top-level shape (a string or an array, else `invalid_content`), the
/// block count (`too_many_content_blocks`), the canonical size of `content` as sent
/// (`result_too_large`), then each block in order (the first bad block answers).
pub fn normalize_content(content: &Value) -> Result<Vec<Block>, ContentError> {
    let items = match content {
        Value::String(s) => {
            if jcs::len(content) > bounds::RESULT_CONTENT {
                return Err(too_large(content));
            }
            return Ok(text_block(s).into_iter().collect());
        }
        Value::Array(items) => items,
        _ => {
            return Err(ContentError::invalid(
                "content must be a string or a list of content blocks",
            ));
        }
    };
    if items.len() > bounds::CONTENT_BLOCKS {
        return Err(ContentError::new(
            code::TOO_MANY_CONTENT_BLOCKS,
            format!(
                "content has {} blocks; at most {} are allowed",
                items.len(),
                bounds::CONTENT_BLOCKS
            ),
        ));
    }
    if jcs::len(content) > bounds::RESULT_CONTENT {
        return Err(too_large(content));
    }
    let mut blocks = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if let Some(block) = block(item, i)? {
            blocks.push(block);
        }
    }
    Ok(blocks)
}

fn too_large(content: &Value) -> ContentError {
    ContentError::new(
        code::RESULT_TOO_LARGE,
        format!(
            "content is {} bytes of canonical JSON; at most {} are allowed",
            jcs::len(content),
            bounds::RESULT_CONTENT
        ),
    )
}

fn text_block(s: &str) -> Option<Block> {
    (!s.trim().is_empty()).then(|| Block::Text(s.to_owned()))
}

fn block(item: &Value, i: usize) -> Result<Option<Block>, ContentError> {
    let Value::Object(m) = item else {
        return Err(ContentError::invalid(format!("content[{i}] is not an object")));
    };
    let kind = match m.get("type") {
        Some(Value::String(t)) if !t.is_empty() => t.as_str(),
        _ => {
            return Err(ContentError::invalid(format!(
                "content[{i}].type must be a non-empty string"
            )));
        }
    };
    match kind {
        "text" => {
            if let Some(k) = m.keys().find(|k| *k != "type" && *k != "text") {
                return Err(ContentError::invalid(format!(
                    "content[{i}] has an unknown member {k:?}"
                )));
            }
            match m.get("text") {
                Some(Value::String(t)) => Ok(text_block(t)),
                _ => Err(ContentError::invalid(format!("content[{i}].text must be a string"))),
            }
        }
        "resource_link" => resource_link(m, i).map(Some),
        other => Err(ContentError::new(
            code::UNSUPPORTED_CONTENT_KIND,
            format!("content[{i}] is a {other:?} block; only text and resource_link blocks are supported"),
        )),
    }
}

fn resource_link(m: &Map<String, Value>, i: usize) -> Result<Block, ContentError> {
    for (k, v) in m {
        let ok = match k.as_str() {
            "type" => true,
            "uri" => v.as_str().and_then(upload_of_uri).is_some(),
            "name" => v.as_str().is_some_and(|s| !s.is_empty()),
            "mimeType" | "title" | "description" => v.is_string(),
            "size" => v.is_u64(),
            _ => {
                return Err(ContentError::invalid(format!(
                    "content[{i}] has an unknown resource_link member {k:?}"
                )));
            }
        };
        if !ok {
            let want = match k.as_str() {
                "uri" => "a nexus://uploads/<uuid> URI",
                "name" => "a non-empty string",
                "size" => "a non-negative integer",
                _ => "a string",
            };
            return Err(ContentError::invalid(format!("content[{i}].{k} must be {want}")));
        }
    }
    for required in ["uri", "name"] {
        if !m.contains_key(required) {
            return Err(ContentError::invalid(format!(
                "content[{i}] is a resource_link without {required}"
            )));
        }
    }
    Ok(Block::ResourceLink(m.clone()))
}

/// The stored form of `content`: `[{"type":"text","text":…}, …]` (links verbatim).
pub fn blocks_to_json(blocks: &[Block]) -> Value {
    Value::Array(blocks.iter().map(Block::to_json).collect())
}

/// Reads stored blocks back (the inverse of [`blocks_to_json`]); `None` for anything that is
/// not a stored block list.
pub fn blocks_from_json(stored: &Value) -> Option<Vec<Block>> {
    stored
        .as_array()?
        .iter()
        .map(|b| {
            let m = b.as_object()?;
            match m.get("type")?.as_str()? {
                "text" => Some(Block::Text(m.get("text")?.as_str()?.to_owned())),
                "resource_link" => Some(Block::ResourceLink(m.clone())),
                _ => None,
            }
        })
        .collect()
}

/// The text projection (`output` on the task read): text blocks joined by `\n`; `""` when none.
pub fn text_projection(blocks: &[Block]) -> String {
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.as_str()),
            Block::ResourceLink(_) => None,
        })
        .collect();
    texts.join("\n")
}

/// The uploads the blocks link, in block order (duplicates kept once, first position).
pub fn linked_uploads(blocks: &[Block]) -> Vec<Uuid> {
    let mut out: Vec<Uuid> = Vec::new();
    for id in blocks.iter().filter_map(Block::linked_upload) {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

#[cfg(test)]
mod tests;
