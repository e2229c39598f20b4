//! The upload descriptor both planes answer with (uploads.md §1, §3), and the one multipart
//! shape ingest reads: a member's upload and an executor's capture are the same record.

/// The one multipart part ingest reads.
const FILE_PART: &str = "upload[file]";

/// The ingest body: one part named `upload[file]`.
pub(crate) fn form(part: reqwest::multipart::Part) -> reqwest::multipart::Form {
    reqwest::multipart::Form::new().part(FILE_PART, part)
}
