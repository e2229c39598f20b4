//! The error envelope `{"error":{"code","message", …extra}}` (errors-and-auth.md §1).
//! Every handled failure leaves the server through [`ApiError`].

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use nexus_core::codes::Code;
use nexus_kernel::KernelError;
use serde_json::{Map, Value, json};

/// A failure on its way to the client.
#[derive(Debug)]
pub struct ApiError(pub KernelError);

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self(KernelError::new(code, message))
    }

    pub fn of(code: Code) -> Self {
        Self(KernelError::of(code))
    }
}

impl From<KernelError> for ApiError {
    fn from(err: KernelError) -> Self {
        Self(err)
    }
}

/// The envelope body for an error.
pub fn envelope(err: &KernelError) -> Value {
    let mut inner = Map::new();
    inner.insert("code".into(), json!(err.code.as_str()));
    inner.insert("message".into(), json!(err.message));
    for (key, value) in [("reason", &err.reason), ("path", &err.path), ("detail", &err.detail)] {
        if let Some(v) = value {
            inner.insert(key.into(), json!(v));
        }
    }
    for (key, value) in err.extra.iter().flat_map(|m| m.iter()) {
        inner.insert(key.clone(), value.clone());
    }
    json!({ "error": inner })
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, axum::Json(envelope(&self.0))).into_response();
        if self.0.code == Code::Unauthorized {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"Nexus\""),
            );
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
