//! The document guard: with `NEXUS_DOCUMENT_GUARD=<file>` in the environment, every answer of a
//! routed request is checked against the document — a success status the route's entry does
//! not list, a typed JSON body that breaks its `nexus_api` type's schema, or an error code the
//! route cannot answer with at that status, appends one line to `<file>`. `scripts/test` runs the whole suite with the guard on and fails when the file
//! is not empty, so every status and code the tests provoke is one the document promises.
//!
//! Off (the default), the router has no such layer.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;

use nexus_core::codes::Code;

use super::op::{Content, Shape};
use super::{codes_of, op_of, status_of};
use crate::table::{ROUTES, Route};

/// The environment variable naming the guard's log file.
pub const ENV: &str = "NEXUS_DOCUMENT_GUARD";

/// An error body larger than this is not an envelope worth reading.
const ENVELOPE_MAX: usize = 64 * 1024;

/// A typed success body is read whole up to this size to be validated (the largest reads the
/// tests provoke are transcripts of a few hundred rounds).
const BODY_MAX: usize = 64 * 1024 * 1024;

/// The guard's file, when the environment names one.
pub fn log_path() -> Option<PathBuf> {
    std::env::var_os(ENV).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// What each `(method, path template)` may answer: success statuses and error codes.
struct Allowed {
    route: &'static Route,
    statuses: BTreeSet<u16>,
    /// The component each typed JSON success status carries.
    typed: HashMap<u16, String>,
    codes: BTreeSet<&'static str>,
}

fn allowed() -> &'static HashMap<(String, String), Allowed> {
    static ALLOWED: OnceLock<HashMap<(String, String), Allowed>> = OnceLock::new();
    ALLOWED.get_or_init(|| {
        ROUTES
            .iter()
            .filter_map(|route| {
                let op = op_of(route)?;
                let allowed = Allowed {
                    route,
                    statuses: op.replies.iter().map(|r| r.status).collect(),
                    typed: op
                        .replies
                        .iter()
                        .filter_map(|r| match r.content {
                            Content::Json(Shape::Typed { name, .. }) => Some((r.status, name().into_owned())),
                            _ => None,
                        })
                        .collect(),
                    codes: codes_of(route, op),
                };
                Some(((route.method.as_str().to_string(), route.path.to_string()), allowed))
            })
            .collect()
    })
}

/// The middleware (mounted by [`crate::router`] only when [`log_path`] is set).
pub async fn check(request: Request, next: Next) -> Response {
    let method = request.method().as_str().to_string();
    let path = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    let response = next.run(request).await;
    let Some(path) = path else { return response };
    let Some(entry) = allowed().get(&(method.clone(), path.clone())) else {
        record(&format!("{method} {path}: a routed request with no document entry"));
        return response;
    };
    let status = response.status().as_u16();
    if status < 400 {
        if !entry.statuses.contains(&status) {
            record(&format!("{method} {path}: success status {status} is not documented"));
        }
        let json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
        let Some(component) = entry.typed.get(&status).filter(|_| json) else {
            return response;
        };
        let (parts, body) = response.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, BODY_MAX).await else {
            record(&format!("{method} {path}: a {status} body past {BODY_MAX} bytes"));
            return Response::from_parts(parts, Body::empty());
        };
        match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(instance) => {
                let errors = schema_errors(component, &instance);
                if !errors.is_empty() {
                    record(&format!(
                        "{method} {path}: {status} body is not a {component}: {}",
                        errors.join("; ")
                    ));
                }
            }
            Err(_) => record(&format!("{method} {path}: {status} body is not JSON")),
        }
        return Response::from_parts(parts, Body::from(bytes));
    }
    let (parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, ENVELOPE_MAX).await {
        Ok(bytes) => bytes,
        Err(_) => {
            record(&format!("{method} {path}: status {status} with an unreadable body"));
            return Response::from_parts(parts, Body::empty());
        }
    };
    let code = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.pointer("/error/code").and_then(|c| c.as_str()).map(str::to_string));
    match code {
        None => record(&format!("{method} {path}: status {status} without the error envelope")),
        Some(code) if !entry.codes.contains(code.as_str()) => {
            record(&format!("{method} {path}: {status} {code} is not documented"))
        }
        Some(code) => {
            let documented = Code::from_word(&code).map(|c| status_of(entry.route, c));
            if documented != Some(status) {
                record(&format!("{method} {path}: {code} served with {status}"));
            }
        }
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// The first few ways `instance` breaks `components/schemas/<component>` of the document.
fn schema_errors(component: &str, instance: &serde_json::Value) -> Vec<String> {
    static VALIDATORS: OnceLock<Mutex<HashMap<String, std::sync::Arc<jsonschema::Validator>>>> = OnceLock::new();
    let validator = {
        let mut validators = VALIDATORS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let built = validators.entry(component.to_string()).or_insert_with(|| {
            let mut root = serde_json::to_value(super::document()).expect("the document serializes");
            root["$ref"] = serde_json::Value::String(format!("#/components/schemas/{component}"));
            let validator = jsonschema::draft202012::options()
                .build(&root)
                .unwrap_or_else(|e| panic!("the schema of {component} does not build: {e}"));
            std::sync::Arc::new(validator)
        });
        built.clone()
    };
    validator
        .iter_errors(instance)
        .take(3)
        .map(|e| format!("at {:?}: {e}", e.instance_path().to_string()))
        .collect()
}

fn record(line: &str) {
    static LOCK: Mutex<()> = Mutex::new(());
    let Some(path) = log_path() else { return };
    let _held = LOCK.lock();
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = writeln!(file, "{line}");
    }
}
