//! The authorization matrix (errors-and-auth.md §2, §3), generated from the route table the
//! router is built from (`nexus_server::table::ROUTES`): every route × {no bearer, malformed,
//! unknown, wrong secret, the other plane, revoked, expired, fenced epoch} answers the identical
//! 401; another account's bearer reaches nothing of this account (404 `not_found`); a member
//! with read standing gets 403 `not_authorized` from every verb and is served by every read; a
//! member with write standing passes every check. A route added to the router is in `ROUTES`,
//! so it is in this matrix.

mod common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::{Harness, harnesses};
use nexus_kernel::credentials;
use nexus_server::table::{Plane, ROUTES, Route, Standing};
use nexus_store::prelude::*;
use nexus_store::{AssignmentScope, MemberKind, NewCredential, NewMember, NewRunner};
use serde_json::{Value, json};
use tower::ServiceExt;
use uuid::Uuid;

const IDENTICAL_401: &str = r#"{"error":{"code":"unauthorized","message":"authentication required"}}"#;
const BOUNDARY: &str = "matrixboundary";

/// The resources the path templates name, all in the bootstrap workspace.
struct Fixture {
    ws: String,
    run: String,
    conversation: String,
    input: String,
    upload: String,
    capture: String,
    runner: String,
}

/// Every bearer the matrix sends.
struct Bearers {
    /// A member with write standing (the bootstrap agent) and the bootstrap runner.
    agent: String,
    runner: String,
    /// A human member with only read standing in the workspace.
    reader: String,
    /// An agent (write standing in its own workspace) and a runner of another account.
    foreign_member: String,
    foreign_runner: String,
    /// Credentials that authenticate nothing, per plane: (label, bearer or none).
    failing_member: Vec<(&'static str, Option<String>)>,
    failing_transport: Vec<(&'static str, Option<String>)>,
}

/// What one request got: status, `WWW-Authenticate`, and the body (error bodies only: a
/// success may be an endless stream, and is not read).
struct Got {
    status: StatusCode,
    challenge: Option<String>,
    body: String,
}

impl Got {
    fn code(&self) -> String {
        serde_json::from_str::<Value>(&self.body)
            .ok()
            .and_then(|v| v["error"]["code"].as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// The concrete path of a template: each `{param}` is the fixture's resource of that kind.
fn concrete(route: &Route, f: &Fixture) -> String {
    let id_of = |path: &str| {
        if path.starts_with("/agent_api/v1/executors/") {
            &f.runner
        } else if path.starts_with("/agent_api/v1/executor/uploads/") {
            &f.capture
        } else {
            &f.upload
        }
    };
    let mut out = String::new();
    for segment in route.path.split('/').skip(1) {
        out.push('/');
        out.push_str(match segment {
            "{ws}" => &f.ws,
            "{run}" => &f.run,
            "{task}" | "{key}" => "t",
            "{c}" => &f.conversation,
            "{input}" => &f.input,
            "{upload}" => &f.upload,
            "{id}" => id_of(route.path),
            "{*path}" => "index.html",
            s if s.starts_with('{') => panic!("{route:?}: no fixture for {s}; add one to the matrix"),
            s => s,
        });
    }
    if route.path.ends_with("/memory/doc") {
        out.push_str("?path=workspace/matrix");
    }
    out
}

/// Whether the route's path names a resource of the bootstrap account.
fn names_a_resource(route: &Route) -> bool {
    route.path.contains('{') && !route.path.contains("{*")
}

async fn send(h: &Harness, route: &Route, path: &str, bearer: Option<&str>) -> Got {
    let mut req = Request::builder().method(route.method.clone()).uri(path);
    if let Some(b) = bearer {
        req = req.header("authorization", format!("Bearer {b}"));
    }
    if route.plane == Plane::Transport {
        // The claim routes refuse a request without one (400) before they look the row up.
        req = req.header("claim-token", "matrix");
    }
    let body = if route.method == Method::POST || route.method == Method::PUT {
        req = req.header("content-type", "application/json");
        Body::from("{}")
    } else {
        Body::empty()
    };
    let resp = h.app.clone().oneshot(req.body(body).unwrap()).await.unwrap();
    let status = resp.status();
    let challenge = resp
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string());
    let body = if status.is_success() {
        String::new()
    } else {
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Got {
        status,
        challenge,
        body,
    }
}

#[tokio::test]
async fn every_route_answers_every_bearer_as_specified() {
    // The API had 68 routes when the table was made; a shrinking table is a lost route.
    assert!(ROUTES.len() >= 68, "the table lists every route ({})", ROUTES.len());
    for h in harnesses().await {
        let d = h.dialect;
        let f = fixture(&h).await;
        let b = bearers(&h).await;
        let mut cells = 0;
        for route in ROUTES {
            let path = concrete(route, &f);
            let failing = match route.plane {
                Plane::Public => {
                    for bearer in [None, Some("not-a-nexus-token"), Some(b.agent.as_str())] {
                        let got = send(&h, route, &path, bearer).await;
                        assert!(got.status.is_success(), "{d} {route:?}: {}", got.status);
                        cells += 1;
                    }
                    continue;
                }
                Plane::Member => &b.failing_member,
                Plane::Transport => &b.failing_transport,
            };
            for (label, bearer) in failing {
                let got = send(&h, route, &path, bearer.as_deref()).await;
                let what = format!("{d} {route:?} with {label}");
                assert_eq!(got.status, StatusCode::UNAUTHORIZED, "{what}: {}", got.body);
                assert_eq!(got.body, IDENTICAL_401, "{what}");
                assert_eq!(got.challenge.as_deref(), Some("Bearer realm=\"Nexus\""), "{what}");
                cells += 1;
            }
            // Another account's bearer of the route's plane.
            let foreign = match route.plane {
                Plane::Member => &b.foreign_member,
                _ => &b.foreign_runner,
            };
            let got = send(&h, route, &path, Some(foreign)).await;
            let what = format!("{d} {route:?} with another account's bearer");
            if names_a_resource(route) {
                refused(&got, StatusCode::NOT_FOUND, "not_found", &what);
            } else {
                served(&got, &what);
            }
            cells += 1;
            // A member with read standing.
            if route.plane == Plane::Member && route.standing != Standing::Own {
                let got = send(&h, route, &path, Some(&b.reader)).await;
                let what = format!("{d} {route:?} with read standing");
                if route.standing == Standing::Write {
                    refused(&got, StatusCode::FORBIDDEN, "not_authorized", &what);
                } else {
                    served(&got, &what);
                }
                cells += 1;
            }
        }
        // Last, the holders themselves pass every check (verbs may change state, so they go
        // after every refusal above).
        for route in ROUTES.iter().filter(|r| r.plane != Plane::Public) {
            let bearer = if route.plane == Plane::Member {
                &b.agent
            } else {
                &b.runner
            };
            let got = send(&h, route, &concrete(route, &f), Some(bearer)).await;
            served(&got, &format!("{d} {route:?} with its holder's bearer"));
            cells += 1;
        }
        eprintln!("{d}: {} routes, {cells} cells", ROUTES.len());
    }
}

#[track_caller]
fn refused(got: &Got, status: StatusCode, code: &str, what: &str) {
    assert_eq!(
        (got.status, got.code().as_str()),
        (status, code),
        "{what}: {}",
        got.body
    );
}

/// The request passed authentication and authorization: whatever it got (success, or a
/// refusal of the empty body or of the resource's state, such as 404 `request_not_sealed`) is
/// not 401, not 403, and not the 404 `not_found` that conceals what the caller may not see.
#[track_caller]
fn served(got: &Got, what: &str) {
    let refused = matches!(got.status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
        || (got.status == StatusCode::NOT_FOUND && got.code() == "not_found");
    assert!(!refused, "{what}: {} {}", got.status, got.body);
}

/// The table itself: unique (method, path) pairs, workspace standing exactly under `W`, and
/// no member route under `X`.
#[test]
fn the_table_is_consistent() {
    let mut seen = std::collections::HashSet::new();
    for route in ROUTES {
        assert!(seen.insert((route.method.clone(), route.path)), "{route:?} twice");
        let under_w = route.path.starts_with("/agent_api/v1/workspaces/{ws}");
        assert_eq!(
            under_w,
            route.standing != Standing::Own,
            "{route:?}: workspace standing applies exactly to routes under W"
        );
        assert_eq!(
            route.path == "/agent_api/v1/executor" || route.path.starts_with("/agent_api/v1/executor/"),
            route.plane == Plane::Transport,
            "{route:?}: the transport plane is exactly X"
        );
        if route.standing == Standing::Write {
            assert_ne!(route.method, Method::GET, "{route:?}: a verb is not a GET");
        }
    }
}

// ---- fixtures --------------------------------------------------------------------------------

async fn fixture(h: &Harness) -> Fixture {
    let human = h.human_token();
    h.announce_runner(
        json!([{"name": "read", "effect_profile": nexus_core::registry::EffectProfile::READ.to_json(),
                              "timeout_ms": 60000, "description": "Read.", "input_schema": {"type": "object"}}]),
    )
    .await;
    // The run's tool row names the upload, so its claimant may read it (executor.md §12); the
    // run is started, so the row is parked for the runner.
    let upload = upload_file(h, "/agent_api/v1/uploads", &h.agent_token(), "upload").await;
    let step = json!({"key": "t", "tool": {"name": "read", "input": {"file": format!("nexus://uploads/{upload}")},
                      "route": {"kind": "runner", "runner_executor_public_id": h.runner_id()}}});
    let run = h
        .start_run(&h.agent_token(), "bypass", Value::Null, json!([step]))
        .await;
    let made = created(
        h,
        &human,
        &format!("{}/conversations", h.w()),
        json!({"conversation": {}}),
    )
    .await;
    let conversation = made["conversation"]["public_id"].as_str().unwrap().to_string();
    let inputs = format!("{}/conversations/{conversation}/inputs", h.w());
    let made = created(h, &human, &inputs, json!({"input": {"content": "hello"}})).await;
    let input = made["input"]["public_id"].as_str().unwrap().to_string();
    let r = h
        .json(
            Method::PUT,
            &format!("{}/memory/doc", h.w()),
            Some(&human),
            &json!({"path": "workspace/matrix", "content": "x"}),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.json());
    let capture = upload_file(h, "/agent_api/v1/executor/uploads", &h.runner_token(), "capture").await;
    Fixture {
        ws: h.ws_public_id(),
        run,
        conversation,
        input,
        upload,
        capture,
        runner: h.runner_id(),
    }
}

/// POSTs `body` to `path` as `bearer`, which must create; returns the answer.
async fn created(h: &Harness, bearer: &str, path: &str, body: Value) -> Value {
    let r = h.json(Method::POST, path, Some(bearer), &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{path}: {}", r.json());
    r.json()
}

/// Posts a one-part multipart body to `path`; returns the created descriptor's public id.
async fn upload_file(h: &Harness, path: &str, bearer: &str, key: &str) -> String {
    let body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"upload[file]\"; filename=\"a.txt\"\r\n\
         Content-Type: text/plain\r\n\r\nhello\r\n--{BOUNDARY}--\r\n"
    );
    let r = h
        .send(
            Method::POST,
            path,
            Some(bearer),
            Some((&format!("multipart/form-data; boundary={BOUNDARY}"), body.into_bytes())),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let v = r.json();
    v.get(key).or(v.get("upload")).unwrap()["public_id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn bearers(h: &Harness) -> Bearers {
    let store = &h.kernel.store;
    let now = nexus_kernel::time::now_ms();
    let human = h.human_token();
    let runner = h.runner_token();
    let reader = h.member_with("reader", nexus_store::Standing::Read).await;

    // Another account: its own workspace, a member with write standing there, and a runner.
    let account = store.ensure_account(Uuid::now_v7(), "elsewhere", now).await.unwrap();
    let ws = store
        .ensure_workspace(Uuid::now_v7(), account.id, "main", now)
        .await
        .unwrap();
    let outsider = |kind, handle: &str, steward_id| NewMember {
        public_id: Uuid::now_v7(),
        account_id: account.id,
        kind,
        handle: handle.into(),
        display_name: handle.into(),
        role: nexus_store::MemberRole::Member,
        steward_id,
        agent_executor_public_id: (kind == MemberKind::Agent).then(Uuid::now_v7),
        now,
    };
    let (steward, _) = store
        .create_member(outsider(MemberKind::Human, "outsider", None))
        .await
        .unwrap();
    // An agent, so that the agent-only routes (the configuration, the assembly) reach their
    // account checks too.
    let (member, _) = store
        .create_member(outsider(MemberKind::Agent, "outsider-agent", Some(steward.id)))
        .await
        .unwrap();
    store
        .set_standing(ws.id, member.id, nexus_store::Standing::Write)
        .await
        .unwrap();
    let foreign_member = h.kernel.admin().mint_member_token(&member).await.unwrap();
    let foreign = store
        .create_runner(NewRunner {
            public_id: Uuid::now_v7(),
            account_id: account.id,
            display_name: "outsider-runner".into(),
            assignment_scope: AssignmentScope::AccountWide,
            manager_id: steward.id,
            now,
        })
        .await
        .unwrap();
    let foreign_runner = h.kernel.admin().mint_transport_token(&foreign).await.unwrap();

    // Per plane: revoked and expired credentials of live holders.
    let human_row = store
        .member_by_public_id(h.boot["human"]["public_id"].as_str().unwrap().parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let runner_row = store
        .executor_by_public_id(h.runner_id().parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let revoked_member = h.kernel.admin().mint_member_token(&human_row).await.unwrap();
    h.kernel.admin().revoke_token(&revoked_member).await.unwrap();
    let revoked_transport = h.kernel.admin().mint_transport_token(&runner_row).await.unwrap();
    h.kernel.admin().revoke_token(&revoked_transport).await.unwrap();
    let expired = |plane, member_id, executor_id| {
        let minted = credentials::mint();
        let new = NewCredential {
            public_id: minted.public_id,
            plane,
            member_id,
            executor_id,
            epoch: 0,
            secret_sha256: minted.secret_sha256,
            expires_at: Some(now - 1_000),
            now,
        };
        async move {
            store.insert_credential(new).await.unwrap();
            minted.token
        }
    };
    let expired_member = expired(nexus_store::Plane::Member, Some(human_row.id), None).await;
    let expired_transport = expired(nexus_store::Plane::ExecutorTransport, None, Some(runner_row.id)).await;
    // Fenced: a second runner re-paired, so its first bearer is one epoch behind.
    let (second, stale) = h
        .kernel
        .admin()
        .create_runner("fenced", AssignmentScope::UserPrivate, &human_row.handle)
        .await
        .unwrap();
    h.kernel
        .admin()
        .repair_executor(&second.public_id.to_string())
        .await
        .unwrap();

    let failing = |bearer: &str, other_plane: &str, revoked: String, expired: String| {
        let (id, _) = credentials::parse_bearer(bearer).unwrap();
        vec![
            ("no bearer", None),
            ("an empty bearer", Some(String::new())),
            ("a malformed bearer", Some("not-a-nexus-token".to_string())),
            ("another version", Some(format!("nexus-v2-{id}.{}", "x".repeat(43)))),
            (
                "an unknown credential",
                Some(format!("nexus-v1-{}.{}", Uuid::now_v7(), "x".repeat(43))),
            ),
            ("the wrong secret", Some(format!("nexus-v1-{id}.{}", "y".repeat(43)))),
            ("the other plane", Some(other_plane.to_string())),
            ("a revoked credential", Some(revoked)),
            ("an expired credential", Some(expired)),
            ("a fenced epoch", Some(stale.clone())),
        ]
    };
    Bearers {
        agent: h.agent_token(),
        failing_member: failing(&human, &runner, revoked_member, expired_member),
        failing_transport: failing(&runner, &human, revoked_transport, expired_transport),
        runner,
        reader,
        foreign_member,
        foreign_runner,
    }
}
