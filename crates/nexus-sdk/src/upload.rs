//! The upload descriptor both planes answer with (uploads.md §1, §3), and the one multipart
//! shape ingest reads: a member's upload and an executor's capture are the same record.

use serde::{Deserialize, Serialize};

use crate::member::Rest;

/// An upload's descriptor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub rest: Rest,
}

#[derive(Deserialize)]
pub(crate) struct UploadEnvelope {
    pub(crate) upload: Upload,
}

impl Upload {
    /// `nexus://uploads/<public_id>`: the URI a `resource_link` block names.
    pub fn uri(&self) -> String {
        format!("nexus://uploads/{}", self.public_id)
    }
}

/// The one multipart part ingest reads.
const FILE_PART: &str = "upload[file]";

/// The ingest body: one part named `upload[file]`.
pub(crate) fn form(part: reqwest::multipart::Part) -> reqwest::multipart::Form {
    reqwest::multipart::Form::new().part(FILE_PART, part)
}
