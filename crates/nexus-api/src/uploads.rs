//! The upload descriptor both planes answer with (uploads.md §1, §3): a member's upload and an
//! executor's capture are the same record.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An upload's descriptor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Upload {
    /// The upload's id (named in steps' `attachments` and as `nexus://uploads/<id>`).
    pub public_id: String,
    /// The sanitized filename.
    pub filename: String,
    /// The type detected from the bytes (never the part's declared type).
    pub content_type: String,
    /// The blob's size.
    pub byte_size: u64,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The `{upload}` answer of ingest and of a descriptor read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UploadEnvelope {
    /// The upload.
    pub upload: Upload,
}

impl Upload {
    /// `nexus://uploads/<public_id>`: the URI a `resource_link` block names.
    pub fn uri(&self) -> String {
        format!("nexus://uploads/{}", self.public_id)
    }
}
