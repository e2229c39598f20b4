//! The OpenAPI document (issue 28): every route of the router has an entry, the committed copy
//! equals what this build serves, and the document is the one `GET /agent_api/v1/openapi.json`
//! answers with.

use std::collections::BTreeSet;

use nexus_server::openapi::{self, ops::OPS};
use nexus_server::table::ROUTES;
use serde_json::Value;

const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../contracts/nexus/v1/openapi.json");

#[test]
fn every_route_has_an_entry_and_every_entry_a_route() {
    let routes: BTreeSet<(String, &str)> = ROUTES.iter().map(|r| (r.method.to_string(), r.path)).collect();
    let entries: BTreeSet<(String, &str)> = OPS.iter().map(|o| (o.method.to_string(), o.path)).collect();
    let missing: Vec<_> = routes.difference(&entries).collect();
    let stray: Vec<_> = entries.difference(&routes).collect();
    assert!(missing.is_empty(), "routes without a document entry: {missing:?}");
    assert!(stray.is_empty(), "document entries without a route: {stray:?}");
    assert_eq!(OPS.len(), ROUTES.len(), "an entry is listed twice");
}

#[test]
fn the_document_names_every_route_with_its_plane() {
    let document: Value = serde_json::from_str(openapi::document_text()).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    for route in ROUTES {
        let path = route.path.replace("{*", "{");
        let operation = &document["paths"][&path][route.method.as_str().to_lowercase()];
        assert!(
            operation.is_object(),
            "{} {} is not in the document",
            route.method,
            route.path
        );
        let tags = operation["tags"].as_array().unwrap();
        assert_eq!(tags.len(), 1, "{route:?}");
        let security = &operation["security"];
        match route.plane {
            nexus_server::table::Plane::Public => assert_eq!(security, &serde_json::json!([]), "{route:?}"),
            nexus_server::table::Plane::Member => assert!(security[0].get("member").is_some(), "{route:?}"),
            nexus_server::table::Plane::Transport => assert!(security[0].get("transport").is_some(), "{route:?}"),
        }
        if route.plane != nexus_server::table::Plane::Public {
            let unauthorized = &operation["responses"]["401"]["content"]["application/json"]["schema"];
            let words = &unauthorized["allOf"][1]["properties"]["error"]["properties"]["code"]["enum"];
            assert_eq!(words, &serde_json::json!(["unauthorized"]), "{route:?}");
        }
    }
}

/// schemathesis' negative check sends what the document calls invalid and expects a refusal, so
/// no schema may refuse what the server serves: the preview reads four configuration members
/// and ignores the rest (declarations.md §12.1), and an exploded query object's members sit
/// beside other query keys, which the server ignores.
#[test]
fn request_schemas_refuse_nothing_the_server_ignores() {
    let document: Value = serde_json::from_str(openapi::document_text()).unwrap();
    let configuration = &document["components"]["schemas"]["AssemblyRequest"]["properties"]["configuration"];
    let members: Vec<&str> = configuration["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(members, nexus_api::assembly::PREVIEWED_FIELDS);
    let window = parameter(
        &document,
        "/agent_api/v1/workspaces/{ws}/conversations/{c}/history",
        "window",
    );
    assert!(window["schema"].get("additionalProperties").is_none(), "{window}");
    assert!(window["schema"].get("maxProperties").is_none(), "{window}");
    // The search query: the server serves any query with a Unicode letter or digit.
    let query = parameter(&document, "/agent_api/v1/workspaces/{ws}/conversation_search", "query");
    let schema = jsonschema::draft202012::new(&query["schema"]).unwrap();
    for served in ["abc", "Ģª", "日本", "x!", " 7 "] {
        assert!(schema.is_valid(&Value::from(served)), "{served:?} against {query}");
    }
    for refused in ["", "  ", "!?", "-_-"] {
        assert!(!schema.is_valid(&Value::from(refused)), "{refused:?} against {query}");
    }
}

/// The parameter `name` of `GET path`.
fn parameter<'a>(document: &'a Value, path: &str, name: &str) -> &'a Value {
    let parameters = document["paths"][path]["get"]["parameters"].as_array().unwrap();
    parameters.iter().find(|p| p["name"] == name).unwrap()
}

#[test]
fn operation_ids_are_unique() {
    let document: Value = serde_json::from_str(openapi::document_text()).unwrap();
    let mut seen = BTreeSet::new();
    for item in document["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            let id = operation["operationId"].as_str().unwrap().to_string();
            assert!(seen.insert(id.clone()), "operationId {id} twice");
        }
    }
    assert_eq!(seen.len(), ROUTES.len());
}

#[test]
fn every_reference_resolves() {
    let document: Value = serde_json::from_str(openapi::document_text()).unwrap();
    let schemas = document["components"]["schemas"].as_object().unwrap();
    let mut refs = Vec::new();
    collect_refs(&document, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r}"));
        assert!(schemas.contains_key(name), "{r} does not resolve");
    }
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.push(r.clone());
            }
            map.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

#[test]
fn the_committed_document_is_this_build_s() {
    let committed = std::fs::read_to_string(COMMITTED).expect("contracts/nexus/v1/openapi.json");
    assert!(
        committed == openapi::document_text(),
        "contracts/nexus/v1/openapi.json has drifted from the server; run `nexus contracts generate`"
    );
}

/// The document guard logs what the document does not promise: a non-envelope error, a typed
/// body that breaks its schema, an undocumented success status.
#[tokio::test]
async fn the_guard_logs_answers_the_document_does_not_promise() {
    use axum::Router;
    use axum::http::{Request, StatusCode};
    use axum::routing::get;
    use tower::ServiceExt;

    let log = tempfile::NamedTempFile::new().unwrap();
    // SAFETY: this test binary's other tests read no environment variable while it runs
    // (nextest runs each test in its own process).
    unsafe { std::env::set_var(nexus_server::openapi::guard::ENV, log.path()) };
    let app = Router::new()
        .route("/healthz", get(|| async { (StatusCode::IM_A_TEAPOT, "plain text") }))
        .route(
            "/agent_api/v1/workspaces/{ws}/runs/{run}",
            get(|| async { axum::Json(serde_json::json!({"run": {}})) }),
        )
        .route(
            "/agent_api/v1/workspaces/{ws}/runs",
            get(|| async { (StatusCode::ACCEPTED, axum::Json(serde_json::json!({}))) }),
        )
        .layer(axum::middleware::from_fn(nexus_server::openapi::guard::check));
    for uri in [
        "/healthz",
        "/agent_api/v1/workspaces/w/runs/r",
        "/agent_api/v1/workspaces/w/runs",
    ] {
        let request = Request::get(uri).body(axum::body::Body::empty()).unwrap();
        app.clone().oneshot(request).await.unwrap();
    }
    let logged = std::fs::read_to_string(log.path()).unwrap();
    assert!(
        logged.contains("GET /healthz: status 418 without the error envelope"),
        "{logged}"
    );
    assert!(
        logged.contains("GET /agent_api/v1/workspaces/{ws}/runs/{run}: 200 body is not a RunRead"),
        "{logged}"
    );
    assert!(
        logged.contains("GET /agent_api/v1/workspaces/{ws}/runs: success status 202 is not documented"),
        "{logged}"
    );
}
