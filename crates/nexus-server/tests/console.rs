//! The console's files (`/console`, issue 26): embedded, same-origin policy on every response,
//! gzip when asked, `ETag` revalidation, and every module the pages import is served. The
//! console's behaviour in a browser is tested by `tests/console/` (scripts/test).

mod common;

use std::io::Read;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{Harness, harnesses};

async fn get(h: &Harness, path: &str, headers: &[(&str, &str)]) -> common::Reply {
    let mut req = Request::builder().uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    h.raw(req.body(Body::empty()).unwrap()).await
}

fn assert_policy(r: &common::Reply) {
    let csp = r.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert_eq!(csp, nexus_server::console::CSP);
    for directive in [
        "default-src 'self'",
        "script-src 'self';",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} missing from {csp}");
    }
    assert!(!csp.contains("unsafe-eval") && !csp.contains("http:") && !csp.contains('*'));
    assert_eq!(r.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
}

#[tokio::test]
async fn the_index_is_served_with_a_same_origin_policy() {
    let h = &harnesses().await[0];
    for path in ["/console", "/console/", "/console/index.html"] {
        let r = get(h, path, &[]).await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
        assert!(
            r.headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        let body = String::from_utf8(r.bytes.clone()).unwrap();
        assert!(
            body.contains(r#"<script type="module" src="/console/js/app.js">"#),
            "{body}"
        );
        assert!(
            !body.contains("http://") && !body.contains("https://"),
            "no other origin"
        );
        assert_policy(&r);
    }
    // A missing file is a 404 under the same policy; no credential is needed for the files.
    let r = get(h, "/console/js/nope.js", &[]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_policy(&r);
}

#[tokio::test]
async fn files_are_gzipped_when_asked_and_revalidate_by_etag() {
    let h = &harnesses().await[0];
    let plain = get(h, "/console/js/transcript.js", &[]).await;
    assert_eq!(plain.status, StatusCode::OK);
    assert!(
        plain.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(plain.headers.get(header::CONTENT_ENCODING).is_none());
    assert_eq!(plain.headers[header::CACHE_CONTROL], "no-cache");
    let zipped = get(h, "/console/js/transcript.js", &[("accept-encoding", "gzip")]).await;
    assert_eq!(zipped.headers[header::CONTENT_ENCODING], "gzip");
    assert!(zipped.bytes.len() < plain.bytes.len());
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&zipped.bytes[..])
        .read_to_end(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, plain.bytes);
    let etag = plain.headers[header::ETAG].to_str().unwrap().to_string();
    let again = get(h, "/console/js/transcript.js", &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.bytes.is_empty());
    let other = get(h, "/console/js/transcript.js", &[("if-none-match", "\"other\"")]).await;
    assert_eq!(other.status, StatusCode::OK);
}

/// Every relative module a page imports (statically or with `import()`) and the vendored
/// renderer are served: a renamed file cannot leave a page that fails only in a browser.
#[tokio::test]
async fn every_imported_module_is_served() {
    let h = &harnesses().await[0];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("console/js");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for piece in text.split("\"./").skip(1) {
            let name = piece.split('"').next().unwrap();
            if !name.ends_with(".js") {
                continue;
            }
            let r = get(h, &format!("/console/js/{name}"), &[]).await;
            assert_eq!(r.status, StatusCode::OK, "js/{name}");
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} imports found");
    let r = get(h, "/console/vendor/mermaid.min.js", &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.bytes.len() > 1_000_000);
    assert_eq!(get(h, "/console/console.css", &[]).await.status, StatusCode::OK);
}
