//! Uploads (uploads.md §1–§3): the descriptor and a bytes read.

use super::wire::{self, Route, V1};
pub use nexus_api::uploads::Upload;
use nexus_api::uploads::UploadEnvelope;

/// The bytes of an upload and the headers that describe them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadBytes {
    /// The blob.
    pub bytes: Vec<u8>,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// The strong `ETag` (the blob's checksum).
    pub etag: Option<String>,
}

impl crate::Client {
    /// `POST /agent_api/v1/uploads`: stores `bytes` as a new upload named `filename`
    /// (201 `{upload}`). Ingest has no idempotency: a repeat makes another upload. Refusals:
    /// 413 `content_too_large` past 104,857,600 bytes.
    pub async fn upload(&self, filename: &str, bytes: impl Into<Vec<u8>>) -> crate::Result<Upload> {
        let part = reqwest::multipart::Part::bytes(bytes.into()).file_name(filename.to_owned());
        self.send_upload(part).await
    }

    /// [`Client::upload`](crate::Client::upload) of a local file, streamed from disk, named by
    /// its file name.
    pub async fn upload_file(&self, path: impl AsRef<std::path::Path>) -> crate::Result<Upload> {
        let part = reqwest::multipart::Part::file(path).await?;
        self.send_upload(part).await
    }

    async fn send_upload(&self, part: reqwest::multipart::Part) -> crate::Result<Upload> {
        let form = crate::upload::form(part);
        let route = Route::new(V1).lit("uploads");
        let request = self
            .http
            .authed(reqwest::Method::POST, route.finish()?)?
            .multipart(form);
        let created: UploadEnvelope = crate::http::Http::send(request).await?;
        Ok(created.upload)
    }

    /// `GET /agent_api/v1/uploads/{id}`: the descriptor (only its creator may read it).
    pub async fn upload_descriptor(&self, upload_public_id: &str) -> crate::Result<Upload> {
        let route = Route::new(V1).lit("uploads").seg(upload_public_id);
        let read: UploadEnvelope = wire::get(&self.http, &route).await?;
        Ok(read.upload)
    }

    /// `GET /agent_api/v1/uploads/{id}/bytes`: the whole blob (404 `not_found` for an upload
    /// the caller may not read).
    pub async fn upload_bytes(&self, upload_public_id: &str) -> crate::Result<UploadBytes> {
        let route = Route::new(V1).lit("uploads").seg(upload_public_id).lit("bytes");
        let response = wire::checked(self.http.authed(reqwest::Method::GET, route.finish()?)?).await?;
        let content_type = wire::header_text(&response, "content-type");
        let etag = wire::header_text(&response, "etag");
        let bytes = response.bytes().await?.to_vec();
        Ok(UploadBytes {
            bytes,
            content_type,
            etag,
        })
    }
}
