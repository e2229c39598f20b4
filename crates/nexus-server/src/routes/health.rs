//! `GET /healthz`: no credential; 200 `{"status":"ok"}` once serving.

use axum::Json;
use serde_json::{Value, json};

pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}
