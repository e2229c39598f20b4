//! Captures (uploads.md §1, §3) and claim-scoped attachment reads (executor.md §12).

use reqwest::Method;
use reqwest::multipart::Part;

use super::{ExecutorClient, segment};
use crate::error::{ApiError, Result};
use crate::http::Http;
pub use nexus_api::uploads::Upload;
use nexus_api::uploads::UploadEnvelope;

fn attachment_path(run: &str, key: &str, upload: &str) -> String {
    format!(
        "/agent_api/v1/executor/inbox/{}/{}/attachments/{}",
        segment(run),
        segment(key),
        segment(upload)
    )
}

impl ExecutorClient {
    /// `POST X/uploads`: stores `bytes` as a capture of this executor (unbound until a commit
    /// links it; reclaimed after 24 h otherwise). The type is detected by the server.
    pub async fn upload_capture(&self, bytes: Vec<u8>, filename: &str) -> Result<Upload> {
        let part = Part::bytes(bytes)
            .file_name(filename.to_owned())
            .mime_str("application/octet-stream")?;
        let request = self
            .http()
            .authed(Method::POST, "/agent_api/v1/executor/uploads")?
            .multipart(crate::upload::form(part));
        Ok(Http::send::<UploadEnvelope>(request).await?.upload)
    }

    /// `GET X/uploads/{id}`: the descriptor of one of this executor's own captures.
    pub async fn capture(&self, upload_id: &str) -> Result<Upload> {
        let path = format!("/agent_api/v1/executor/uploads/{}", segment(upload_id));
        Ok(Http::send::<UploadEnvelope>(self.http().authed(Method::GET, &path)?)
            .await?
            .upload)
    }

    /// `GET X/inbox/{run}/{task}/attachments/{upload}`: the descriptor of an upload reachable
    /// from a claimed run, read under the current claim.
    pub async fn attachment(&self, run: &str, key: &str, token: &str, upload_id: &str) -> Result<Upload> {
        let request = self
            .http()
            .authed(Method::GET, &attachment_path(run, key, upload_id))?
            .header("Claim-Token", token);
        Ok(Http::send::<UploadEnvelope>(request).await?.upload)
    }

    /// `GET X/inbox/{run}/{task}/attachments/{upload}/bytes`: the whole blob.
    pub async fn attachment_bytes(&self, run: &str, key: &str, token: &str, upload_id: &str) -> Result<Vec<u8>> {
        let path = format!("{}/bytes", attachment_path(run, key, upload_id));
        let request = self.http().authed(Method::GET, &path)?.header("Claim-Token", token);
        let response = request.send().await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        if !status.is_success() {
            return Err(ApiError::from_response(status.as_u16(), &bytes).into());
        }
        Ok(bytes.to_vec())
    }
}
