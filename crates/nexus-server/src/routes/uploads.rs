//! Uploads and captures (uploads.md §1, §3; executor.md §12).
//!
//! Ingest takes `multipart/form-data` with one part named `upload[file]`, streamed into the
//! blob store chunk by chunk: the 413 is sent as soon as the file crosses 104,857,600 bytes.
//! Bytes reads stream the blob with `Range`, a strong `ETag` and `If-None-Match`.

use crate::extract::Path;
use axum::Json;
use axum::body::Body;
use axum::extract::multipart::{MultipartError, MultipartRejection};
use axum::extract::{Multipart, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use nexus_api::uploads::UploadEnvelope;
use nexus_core::bounds;
use nexus_core::codes::Code;
use nexus_kernel::Kernel;
use nexus_kernel::uploads::Creator;
use nexus_store::UploadRow;
use tokio_util::io::ReaderStream;

use crate::AppState;
use crate::auth::{Executor, Member};
use crate::edges::{self, WithinBound};
use crate::error::{ApiError, ApiResult};
use crate::routes::runs::path_id;

/// The one part ingest reads.
pub const FILE_PART: &str = "upload[file]";

/// The body limit of the ingest routes: the upload bound plus room for multipart framing.
pub const INGEST_BODY_LIMIT: usize = bounds::UPLOAD + 64 * 1024;

/// `Cache-Control` of member bytes reads.
const PRIVATE_CACHE: &str = "private, max-age=31556952";

fn too_large() -> ApiError {
    ApiError::new(
        Code::ContentTooLarge,
        format!("an upload holds at most {} bytes", bounds::UPLOAD),
    )
}

fn missing_part() -> ApiError {
    ApiError::new(
        Code::ParameterMissing,
        format!("the body must be multipart/form-data with one part named {FILE_PART}"),
    )
}

fn multipart_error(e: MultipartError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        too_large()
    } else {
        ApiError::new(
            Code::ParameterInvalid,
            format!("malformed multipart body: {}", e.body_text()),
        )
    }
}

/// `POST /agent_api/v1/uploads` (member plane): 201 `{upload}`.
pub async fn create(
    State(state): State<AppState>,
    Member(p): Member,
    _: WithinBound,
    multipart: Result<Multipart, MultipartRejection>,
) -> ApiResult<Response> {
    let deadline = state.timeouts.upload;
    edges::read_within(deadline, ingest(&state.kernel, Creator::Member(&p), multipart)).await
}

/// `POST /agent_api/v1/executor/uploads` (transport plane, a capture): 201 `{upload}`.
pub async fn create_capture(
    State(state): State<AppState>,
    Executor(e): Executor,
    _: WithinBound,
    multipart: Result<Multipart, MultipartRejection>,
) -> ApiResult<Response> {
    let deadline = state.timeouts.upload;
    edges::read_within(deadline, ingest(&state.kernel, Creator::Executor(&e), multipart)).await
}

async fn ingest(
    kernel: &Kernel,
    creator: Creator<'_>,
    multipart: Result<Multipart, MultipartRejection>,
) -> ApiResult<Response> {
    let mut multipart = multipart.map_err(|_| missing_part())?;
    let mut found = None;
    loop {
        let Some(mut field) = multipart.next_field().await.map_err(multipart_error)? else {
            break;
        };
        if field.name() != Some(FILE_PART) {
            continue;
        }
        if found.is_some() {
            return Err(ApiError::new(
                Code::ParameterInvalid,
                format!("the body holds more than one {FILE_PART} part"),
            ));
        }
        let Some(filename) = field.file_name().map(str::to_string) else {
            return Err(ApiError::new(
                Code::ParameterInvalid,
                format!("the {FILE_PART} part is not a file (it has no filename)"),
            ));
        };
        let mut writer = kernel.uploads().begin_upload().await?;
        while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
            if writer.len() + chunk.len() as u64 > bounds::UPLOAD as u64 {
                return Err(too_large());
            }
            writer.write(&chunk).await?;
        }
        found = Some((filename, writer));
    }
    let (filename, writer) = found.ok_or_else(missing_part)?;
    let body = kernel.uploads().create_upload(creator, &filename, writer).await?;
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `GET /agent_api/v1/uploads/{id}`: the creating member reads the descriptor.
pub async fn get(
    State(state): State<AppState>,
    Member(p): Member,
    Path(id): Path<String>,
) -> ApiResult<Json<UploadEnvelope>> {
    Ok(Json(state.kernel.uploads().get_upload(&p, path_id(&id)?).await?))
}

/// `GET /agent_api/v1/uploads/{id}/bytes`.
pub async fn bytes(
    State(state): State<AppState>,
    Member(p): Member,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let read = state.kernel.uploads().upload_bytes(&p, path_id(&id)?).await?;
    serve_bytes(&state.kernel, &read.upload, &headers, PRIVATE_CACHE).await
}

/// `GET /agent_api/v1/executor/uploads/{id}`: an executor reads its own capture's descriptor.
pub async fn get_capture(
    State(state): State<AppState>,
    Executor(e): Executor,
    Path(id): Path<String>,
) -> ApiResult<Json<UploadEnvelope>> {
    Ok(Json(state.kernel.uploads().get_capture(&e, path_id(&id)?).await?))
}

fn claim_token(headers: &HeaderMap) -> Option<&str> {
    headers.get("claim-token").and_then(|v| v.to_str().ok())
}

/// `GET X/inbox/{run}/{task}/attachments/{upload}` (executor.md §12).
pub async fn claim_attachment(
    State(state): State<AppState>,
    Executor(e): Executor,
    Path((run, task, upload)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let read = claim_read(&state.kernel, &e, &run, &task, &upload, &headers).await?;
    let mut response = Json(nexus_kernel::uploads::envelope(&read)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `GET X/inbox/{run}/{task}/attachments/{upload}/bytes` (executor.md §12).
pub async fn claim_attachment_bytes(
    State(state): State<AppState>,
    Executor(e): Executor,
    Path((run, task, upload)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let read = claim_read(&state.kernel, &e, &run, &task, &upload, &headers).await?;
    serve_bytes(&state.kernel, &read, &headers, "no-store").await
}

async fn claim_read(
    kernel: &Kernel,
    e: &nexus_kernel::ExecutorPrincipal,
    run: &str,
    task: &str,
    upload: &str,
    headers: &HeaderMap,
) -> ApiResult<UploadRow> {
    let token = claim_token(headers);
    if token.is_none_or(str::is_empty) {
        return Err(ApiError::new(
            Code::ParameterMissing,
            "the Claim-Token header is required",
        ));
    }
    let run = path_id(run)?;
    let upload = path_id(upload)?;
    Ok(kernel
        .uploads()
        .claim_attachment(e, run, task, upload, token)
        .await?
        .upload)
}

/// A requested byte range, resolved against the blob size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeRequest {
    /// No (usable) `Range` header: the whole blob.
    Whole,
    /// Inclusive `start..=end`.
    Part(u64, u64),
    /// Syntactically valid but outside the blob.
    Unsatisfiable,
}

/// Parses one `bytes=` range (RFC 9110 §14.1.2). Several ranges or a malformed header are
/// ignored (the whole blob is served).
pub fn parse_range(header: Option<&str>, size: u64) -> RangeRequest {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return RangeRequest::Whole;
    };
    if spec.contains(',') {
        return RangeRequest::Whole;
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return RangeRequest::Whole;
    };
    let (a, b) = (a.trim(), b.trim());
    let num = |s: &str| {
        (!s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
            .then(|| s.parse::<u64>().ok())
            .flatten()
    };
    match (a.is_empty(), b.is_empty()) {
        // bytes=-N: the last N bytes.
        (true, false) => match num(b) {
            Some(0) => RangeRequest::Unsatisfiable,
            Some(_) if size == 0 => RangeRequest::Unsatisfiable,
            Some(n) => RangeRequest::Part(size.saturating_sub(n), size - 1),
            None => RangeRequest::Whole,
        },
        (false, _) => {
            let Some(start) = num(a) else {
                return RangeRequest::Whole;
            };
            let end = if b.is_empty() {
                None
            } else {
                match num(b) {
                    Some(e) if e >= start => Some(e),
                    _ => return RangeRequest::Whole,
                }
            };
            if start >= size {
                return RangeRequest::Unsatisfiable;
            }
            RangeRequest::Part(start, end.unwrap_or(size - 1).min(size - 1))
        }
        (true, true) => RangeRequest::Whole,
    }
}

/// Whether `If-None-Match` matches the entity tag (weak comparison, RFC 9110 §13.1.2).
fn none_match(headers: &HeaderMap, etag: &str) -> bool {
    let Some(v) = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    v.split(',')
        .map(str::trim)
        .any(|t| t == "*" || t.trim_start_matches("W/") == etag)
}

/// RFC 8187 `filename*` value: UTF-8, percent-encoded outside attr-char.
fn ext_value(name: &str) -> String {
    let mut out = String::from("UTF-8''");
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn header_value(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
}

async fn serve_bytes(kernel: &Kernel, u: &UploadRow, headers: &HeaderMap, cache: &'static str) -> ApiResult<Response> {
    let size = u.byte_size.max(0) as u64;
    let etag = format!("\"{}\"", u.sha256);
    let mut common = HeaderMap::new();
    common.insert(header::ETAG, header_value(&etag));
    common.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    common.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if none_match(headers, &etag) {
        return Ok((StatusCode::NOT_MODIFIED, common).into_response());
    }
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    let (status, start, len) = match parse_range(range, size) {
        RangeRequest::Whole => (StatusCode::OK, 0, size),
        RangeRequest::Part(a, b) => {
            common.insert(header::CONTENT_RANGE, header_value(&format!("bytes {a}-{b}/{size}")));
            (StatusCode::PARTIAL_CONTENT, a, b - a + 1)
        }
        RangeRequest::Unsatisfiable => {
            let mut response = ApiError::new(
                Code::RangeNotSatisfiable,
                format!("the range is outside the upload's {size} bytes"),
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_RANGE, header_value(&format!("bytes */{size}")));
            response.headers_mut().extend(common);
            return Ok(response);
        }
    };
    let reader = kernel.uploads().open_upload(u, start, len).await?;
    let inline = u.content_type.starts_with("image/") || u.content_type == "application/pdf";
    let disposition = format!(
        "{}; filename*={}",
        if inline { "inline" } else { "attachment" },
        ext_value(&u.filename)
    );
    common.insert(header::CONTENT_TYPE, header_value(&u.content_type));
    common.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    common.insert(header::CONTENT_DISPOSITION, header_value(&disposition));
    common.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    let body = Body::from_stream(ReaderStream::new(reader));
    Ok((status, common, body).into_response())
}

#[cfg(test)]
mod tests {
    use super::RangeRequest::*;
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_range(None, 10), Whole);
        assert_eq!(parse_range(Some("bytes=0-3"), 10), Part(0, 3));
        assert_eq!(parse_range(Some("bytes=4-"), 10), Part(4, 9));
        assert_eq!(parse_range(Some("bytes=4-100"), 10), Part(4, 9));
        assert_eq!(parse_range(Some("bytes=-3"), 10), Part(7, 9));
        assert_eq!(parse_range(Some("bytes=-30"), 10), Part(0, 9));
        assert_eq!(parse_range(Some("bytes=10-"), 10), Unsatisfiable);
        assert_eq!(parse_range(Some("bytes=-0"), 10), Unsatisfiable);
        assert_eq!(parse_range(Some("bytes=0-"), 0), Unsatisfiable);
        assert_eq!(parse_range(Some("bytes=5-2"), 10), Whole);
        assert_eq!(parse_range(Some("bytes=0-1,4-5"), 10), Whole);
        assert_eq!(parse_range(Some("items=0-1"), 10), Whole);
        assert_eq!(parse_range(Some("bytes=x-1"), 10), Whole);
    }

    #[test]
    fn filename_star() {
        assert_eq!(ext_value("a b.png"), "UTF-8''a%20b.png");
        assert_eq!(ext_value("é\".pdf"), "UTF-8''%C3%A9%22.pdf");
    }
}
