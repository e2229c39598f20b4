//! Memory documents through the member door (kernel-tools.md §8): the listing, the document,
//! the delete answer and the write body.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::Timestamp;

/// One document of a listing (no content).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MemoryEntry {
    /// `<scope>/<segment>(/<segment>)*`.
    pub path: String,
    /// The content's length in bytes.
    pub byte_size: u64,
    /// A skill document's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The version a conditional write or delete names.
    pub lock_version: i64,
    /// The time of the last write.
    #[serde(default)]
    pub updated_at: Option<Timestamp>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A document read whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MemoryDocument {
    /// The document's path.
    pub path: String,
    /// The UTF-8 text.
    pub content: String,
    /// A skill document's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The version a conditional write or delete names.
    pub lock_version: i64,
    /// The time of the last write.
    #[serde(default)]
    pub updated_at: Option<Timestamp>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// What a delete removed: the path and the version it had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MemoryDeleted {
    /// The deleted path.
    pub path: String,
    /// The version removed.
    pub lock_version: i64,
}

/// `GET W/memory/doc` and `PUT W/memory/doc`: `{document}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DocumentEnvelope {
    /// The document.
    pub document: MemoryDocument,
}

/// `DELETE W/memory/doc`: `{document: {path, lock_version}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DeletedEnvelope {
    /// What was removed.
    pub document: MemoryDeleted,
}

/// `GET W/memory`: the documents under a prefix, without content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DocumentList {
    /// The documents.
    pub documents: Vec<MemoryEntry>,
}

/// The body of `PUT W/memory/doc`: create or replace a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PutDocument {
    /// The document's path.
    pub path: String,
    /// The UTF-8 text (at most 65,536 bytes).
    pub content: String,
    /// Required for a `skills/<name>` document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Refuse with 409 `stale_object` unless the stored version is this (0: no document yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_lock_version: Option<i64>,
    /// The conversation whose `conversation/` documents the path reaches (the SDK's
    /// conversation door sets it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_public_id: Option<String>,
}

impl PutDocument {
    /// A last-writer-wins write of `content` at `path`.
    pub fn new(path: impl Into<String>, content: impl Into<String>) -> PutDocument {
        PutDocument {
            path: path.into(),
            content: content.into(),
            description: None,
            expected_lock_version: None,
            conversation_public_id: None,
        }
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> PutDocument {
        self.description = Some(description.into());
        self
    }

    /// Writes only if the stored version is `version`.
    pub fn expected_lock_version(mut self, version: i64) -> PutDocument {
        self.expected_lock_version = Some(version);
        self
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        serde_json::to_value(self).expect("a document body serializes")
    }
}
