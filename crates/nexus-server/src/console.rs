//! The console (`/console`): static assets embedded in the binary, served with a
//! Content-Security-Policy that keeps every request on the page's origin, gzip when the browser
//! accepts it, and an `ETag` so a reload revalidates instead of downloading again.
//!
//! The console is a client of the public member API like any other: it holds no route of its
//! own beyond its files (docs/decisions/182-console.md).

use crate::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;

/// The asset folder, `crates/nexus-server/console/`, embedded at build time (in debug builds too).
#[derive(RustEmbed)]
#[folder = "console/"]
struct Assets;

/// Every request stays on the page's origin. `style-src 'unsafe-inline'` exists for Mermaid,
/// which writes a `<style>` element and `style` attributes into the SVG it renders; scripts stay
/// `'self'` only. Images may be `blob:` (a capture fetched with the bearer) or `data:`.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' blob: data:; font-src 'self'; connect-src 'self'; object-src 'none'; \
base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub(crate) async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

pub(crate) async fn asset(Path(path): Path<String>, headers: HeaderMap) -> Response {
    serve(&path, &headers)
}

fn serve(path: &str, request: &HeaderMap) -> Response {
    let Some(file) = Assets::get(path) else {
        return with_policy(
            crate::error::ApiError::new(nexus_core::codes::Code::NotFound, "no such console file").into_response(),
        );
    };
    let etag = format!("\"{}\"", hex::encode(&file.metadata.sha256_hash()[..16]));
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = file.data.into_owned().into_response();
        let mime = file.metadata.mimetype();
        // `.mjs` and `.js` are both served as JavaScript (module scripts need a JS type).
        let mime = if path.ends_with(".js") || path.ends_with(".mjs") {
            "text/javascript; charset=utf-8"
        } else {
            mime
        };
        if let Ok(v) = HeaderValue::from_str(mime) {
            r.headers_mut().insert(header::CONTENT_TYPE, v);
        }
        r
    };
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    // Revalidate every time: a new binary serves new files under the same names.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    with_policy(response)
}

fn with_policy(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}
