//! Uploads and captures over HTTP (uploads.md §1–§6, executor.md §9 binding, §12 claim-scoped
//! reads), on every available engine.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode};
use nexus_core::bounds;
use nexus_kernel::Kernel;
use nexus_kernel::uploads::Committer;
use nexus_server::{AppState, router};
use nexus_store::prelude::*;
use nexus_store::testing::{self, TestStore};
use nexus_store::{MemberKind, NewMember, NewRun, NewTask, RunStatus, TaskKind, TaskRow, TaskStatus};
use serde_json::{Value, json};
use tower::ServiceExt;
use uuid::Uuid;

const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R', 0, 0, 0, 1, 0, 0, 0, 1, 8,
    6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89,
];
const BOUNDARY: &str = "nexus-test-boundary";

struct H {
    dialect: &'static str,
    kernel: Kernel,
    app: Router,
    boot: Value,
    blobs: tempfile::TempDir,
    _store: TestStore,
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    bytes: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.bytes)))
    }
    fn code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or("").to_string()
    }
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }
}

async fn harnesses() -> Vec<H> {
    let mut out = Vec::new();
    for store in testing::engines().await {
        let blobs = tempfile::tempdir().unwrap();
        let kernel = Kernel::builder(store.store.clone()).blobs_dir(blobs.path()).build();
        let boot = serde_json::to_value(kernel.admin().bootstrap().await.expect("bootstrap")).unwrap();
        let app = router(AppState::new(kernel.clone()));
        out.push(H {
            dialect: store.dialect,
            kernel,
            app,
            boot,
            blobs,
            _store: store,
        });
    }
    out
}

/// One `upload[file]` part (or a part of another name / without filename).
fn multipart(name: &str, filename: Option<&str>, claimed_type: &str, bytes: &[u8]) -> Vec<u8> {
    let mut body = format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"");
    if let Some(f) = filename {
        body.push_str(&format!("; filename=\"{f}\""));
    }
    body.push_str(&format!("\r\nContent-Type: {claimed_type}\r\n\r\n"));
    let mut out = body.into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    out
}

/// A multipart body of one file part holding exactly `len` zero bytes, streamed in 1 MiB chunks.
fn file_of(len: usize) -> Body {
    let mib = 1 << 20;
    let mut chunks: Vec<Result<Bytes, std::io::Error>> = vec![Ok(Bytes::from(format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"upload[file]\"; filename=\"big.bin\"\r\n\r\n"
    )))];
    let whole = Bytes::from(vec![0u8; mib]);
    chunks.extend((0..len / mib).map(|_| Ok(whole.clone())));
    chunks.push(Ok(Bytes::from(vec![0u8; len % mib])));
    chunks.push(Ok(Bytes::from(format!("\r\n--{BOUNDARY}--\r\n"))));
    Body::from_stream(futures_util::stream::iter(chunks))
}

impl H {
    fn token(&self, who: &str) -> String {
        let key = if who == "runner" {
            "transport_token"
        } else {
            "member_token"
        };
        self.boot[who][key].as_str().unwrap().to_string()
    }
    fn agent_transport(&self) -> String {
        self.boot["agent"]["transport_token"].as_str().unwrap().to_string()
    }

    async fn raw(&self, req: Request<Body>) -> Reply {
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec();
        Reply { status, headers, bytes }
    }

    async fn get(&self, path: &str, token: &str, headers: &[(&str, &str)]) -> Reply {
        let mut req = Request::builder()
            .method(Method::GET)
            .uri(path)
            .header("authorization", format!("Bearer {token}"));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.raw(req.body(Body::empty()).unwrap()).await
    }

    async fn post_body(&self, path: &str, token: Option<&str>, content_type: &str, body: Body) -> Reply {
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("content-type", content_type);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        self.raw(req.body(body).unwrap()).await
    }

    async fn upload_to(&self, path: &str, token: &str, filename: &str, bytes: &[u8]) -> Reply {
        let ct = format!("multipart/form-data; boundary={BOUNDARY}");
        self.post_body(
            path,
            Some(token),
            &ct,
            Body::from(multipart("upload[file]", Some(filename), "text/plain", bytes)),
        )
        .await
    }

    /// A member upload; returns the descriptor.
    async fn upload(&self, who: &str, filename: &str, bytes: &[u8]) -> Value {
        let r = self
            .upload_to("/agent_api/v1/uploads", &self.token(who), filename, bytes)
            .await;
        assert_eq!(
            r.status,
            StatusCode::CREATED,
            "{}: {:?}",
            self.dialect,
            String::from_utf8_lossy(&r.bytes)
        );
        r.json()["upload"].clone()
    }

    /// A capture of the bootstrap runner; returns the descriptor.
    async fn capture(&self, filename: &str, bytes: &[u8]) -> Value {
        let r = self
            .upload_to("/agent_api/v1/executor/uploads", &self.token("runner"), filename, bytes)
            .await;
        assert_eq!(
            r.status,
            StatusCode::CREATED,
            "{}: {:?}",
            self.dialect,
            String::from_utf8_lossy(&r.bytes)
        );
        r.json()["upload"].clone()
    }

    async fn member_id(&self, who: &str) -> i64 {
        let id = Uuid::parse_str(self.boot[who]["public_id"].as_str().unwrap()).unwrap();
        self.kernel.store.member_by_public_id(id).await.unwrap().unwrap().id
    }
    async fn runner_id(&self) -> i64 {
        let id = Uuid::parse_str(self.boot["runner"]["executor_public_id"].as_str().unwrap()).unwrap();
        self.kernel.store.executor_by_public_id(id).await.unwrap().unwrap().id
    }
    async fn agent_app_id(&self) -> i64 {
        let id = Uuid::parse_str(self.boot["agent"]["executor_public_id"].as_str().unwrap()).unwrap();
        self.kernel.store.executor_by_public_id(id).await.unwrap().unwrap().id
    }

    /// A member of the account with standing in no workspace, and its bearer.
    async fn stranger(&self) -> String {
        let account_id = self
            .kernel
            .store
            .member_by_id(self.member_id("human").await)
            .await
            .unwrap()
            .unwrap()
            .account_id;
        let (m, _) = self
            .kernel
            .store
            .create_member(NewMember {
                public_id: Uuid::now_v7(),
                account_id,
                kind: MemberKind::Human,
                handle: "stranger".into(),
                display_name: "Stranger".into(),
                role: nexus_store::MemberRole::Member,
                steward_id: None,
                agent_executor_public_id: None,
                now: nexus_kernel::time::now_ms(),
            })
            .await
            .unwrap();
        self.kernel.admin().mint_member_token(&m).await.unwrap()
    }

    /// A run of the bootstrap workspace created by the agent, with one tool row addressed to
    /// the runner (claimed with `token` when given).
    async fn run_with_tool(&self, tool_input: &Value, claim: Option<(&str, i64)>) -> (Uuid, TaskRow) {
        let ws = Uuid::parse_str(self.boot["workspace_public_id"].as_str().unwrap()).unwrap();
        let ws = self.kernel.store.workspace_by_public_id(ws).await.unwrap().unwrap();
        let agent = self.member_id("agent").await;
        let runner = self.runner_id().await;
        let now = nexus_kernel::time::now_ms();
        let mut tx = self.kernel.store.begin().await.unwrap();
        let run = tx
            .insert_run(NewRun {
                public_id: Uuid::now_v7(),
                workspace_id: ws.id,
                created_by_id: agent,
                answering_member_id: agent,
                declaring_agent_id: None,
                status: RunStatus::Running,
                hosting: nexus_store::Hosting::Standalone,
                approval_mode: nexus_store::ApprovalMode::Bypass,
                approval_rules: None,
                default_runner_id: None,
                revision: 1,
                created_at: now,
                started_at: Some(now),
            })
            .await
            .unwrap();
        let (status, token, deadline) = match claim {
            Some((t, deadline)) => (TaskStatus::Dispatched, Some(t.to_string()), Some(deadline)),
            None => (TaskStatus::Completed, None, None),
        };
        let task = tx
            .insert_task(NewTask {
                run_id: run.id,
                key: "t1".into(),
                kind: TaskKind::Tool,
                status,
                origin: nexus_store::Origin::Author,
                on_failure: nexus_store::OnFailure::Propagate,
                visibility: nexus_store::Visibility::Visible,
                tool_name: Some("shot".into()),
                tool_input: Some(tool_input.to_string()),
                addressed_executor_id: Some(runner),
                target_executor_id: Some(runner),
                claimant_id: claim.map(|_| runner),
                claim_token: token,
                claimed_at: claim.map(|_| now),
                deadline_at: deadline,
                created_at: now,
                ..Default::default()
            })
            .await
            .unwrap();
        tx.commit().await.unwrap();
        (run.public_id, task)
    }

    async fn bind(&self, task_id: i64, upload: &Value) {
        let id = Uuid::parse_str(upload["public_id"].as_str().unwrap()).unwrap();
        let mut tx = self.kernel.store.begin().await.unwrap();
        self.kernel
            .uploads()
            .bind_result_uploads(&mut tx, task_id, &[id])
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }

    fn blob_files(&self) -> usize {
        let mut n = 0;
        for dir in std::fs::read_dir(self.blobs.path()).unwrap() {
            let dir = dir.unwrap();
            if dir.file_name() == "tmp" {
                continue;
            }
            n += std::fs::read_dir(dir.path()).unwrap().count();
        }
        n
    }

    fn temp_files(&self) -> usize {
        std::fs::read_dir(self.blobs.path().join("tmp"))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

fn id_of(u: &Value) -> Uuid {
    Uuid::parse_str(u["public_id"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn ingest_detects_the_type_from_the_bytes() {
    for h in harnesses().await {
        let d = h.dialect;
        // A PNG claimed as text/plain and named .txt is image/png, renamed .png.
        let u = h.upload("agent", "../secret/shot.txt", PNG).await;
        let keys: Vec<&str> = u.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["public_id", "filename", "content_type", "byte_size", "created_at"],
            "{d}"
        );
        assert_eq!(u["content_type"], "image/png", "{d}");
        assert_eq!(u["filename"], "shot.png", "{d}");
        assert_eq!(u["byte_size"], PNG.len(), "{d}");
        assert!(u["created_at"].as_str().unwrap().ends_with('Z'), "{d}");

        let t = h.upload("agent", "notes.md", "# hello\n".as_bytes()).await;
        assert_eq!(t["content_type"], "text/plain", "{d}");
        assert_eq!(t["filename"], "notes.md", "{d}");
        let b = h.upload("agent", "x.bin", b"\x00\x01\x02\xff").await;
        assert_eq!(b["content_type"], "application/octet-stream", "{d}");
        let p = h.upload("agent", "report", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n").await;
        assert_eq!(p["content_type"], "application/pdf", "{d}");
        assert_eq!(p["filename"], "report.pdf", "{d}");

        // Ingest has no idempotency; the same bytes share one blob.
        let again = h.upload("agent", "shot.png", PNG).await;
        assert_ne!(again["public_id"], u["public_id"], "{d}");
        assert_eq!(h.blob_files(), 4, "{d}");
        assert_eq!(h.temp_files(), 0, "{d}");
    }
}

#[tokio::test]
async fn ingest_refusals() {
    for h in harnesses().await {
        let d = h.dialect;
        let agent = h.token("agent");
        let ct = format!("multipart/form-data; boundary={BOUNDARY}");
        // No credential: 401.
        let r = h
            .post_body(
                "/agent_api/v1/uploads",
                None,
                &ct,
                Body::from(multipart("upload[file]", Some("a"), "x/y", b"a")),
            )
            .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{d}");
        // A member bearer on the transport route: 401.
        let r = h
            .upload_to("/agent_api/v1/executor/uploads", &agent, "a.txt", b"a")
            .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{d}");
        // No upload[file] part: 400 parameter_missing.
        let r = h
            .post_body(
                "/agent_api/v1/uploads",
                Some(&agent),
                &ct,
                Body::from(multipart("other", Some("a"), "x/y", b"a")),
            )
            .await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (StatusCode::BAD_REQUEST, "parameter_missing"),
            "{d}"
        );
        // Not multipart at all: no part.
        let r = h
            .post_body(
                "/agent_api/v1/uploads",
                Some(&agent),
                "application/octet-stream",
                Body::from(PNG),
            )
            .await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (StatusCode::BAD_REQUEST, "parameter_missing"),
            "{d}"
        );
        // A part that is not a file: 400 parameter_invalid.
        let r = h
            .post_body(
                "/agent_api/v1/uploads",
                Some(&agent),
                &ct,
                Body::from(multipart("upload[file]", None, "x/y", b"a")),
            )
            .await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (StatusCode::BAD_REQUEST, "parameter_invalid"),
            "{d}"
        );

        // Exactly the bound is accepted; one byte more is 413 content_too_large, streamed. The
        // same for captures (uploads.md §3): `upload_bound` covers both.
        for (path, token) in [
            ("/agent_api/v1/uploads", agent.clone()),
            ("/agent_api/v1/executor/uploads", h.token("runner")),
        ] {
            let r = h.post_body(path, Some(&token), &ct, file_of(bounds::UPLOAD)).await;
            assert_eq!(
                r.status,
                StatusCode::CREATED,
                "{d} {path}: {:?}",
                String::from_utf8_lossy(&r.bytes)
            );
            let created = r.json();
            let descriptor = created.get("upload").or(created.get("capture")).unwrap();
            assert_eq!(descriptor["byte_size"], json!(bounds::UPLOAD), "{d} {path}");
            let r = h.post_body(path, Some(&token), &ct, file_of(bounds::UPLOAD + 1)).await;
            assert_eq!(
                (r.status, r.code().as_str()),
                (StatusCode::PAYLOAD_TOO_LARGE, "content_too_large"),
                "{d} {path}"
            );
        }
        assert_eq!(h.temp_files(), 0, "{d}: the refused bytes leave no staging file");
    }
}

#[tokio::test]
async fn descriptor_reads() {
    for h in harnesses().await {
        let d = h.dialect;
        let u = h.upload("agent", "shot.png", PNG).await;
        let path = format!("/agent_api/v1/uploads/{}", u["public_id"].as_str().unwrap());
        let r = h.get(&path, &h.token("agent"), &[]).await;
        assert_eq!(r.status, StatusCode::OK, "{d}");
        assert_eq!(r.json()["upload"], u, "{d}");
        // Only the creating member reads the descriptor.
        let r = h.get(&path, &h.token("human"), &[]).await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (StatusCode::NOT_FOUND, "not_found"),
            "{d}"
        );
        for missing in [
            format!("/agent_api/v1/uploads/{}", Uuid::now_v7()),
            "/agent_api/v1/uploads/not-a-uuid".to_string(),
        ] {
            let r = h.get(&missing, &h.token("agent"), &[]).await;
            assert_eq!(
                (r.status, r.code().as_str()),
                (StatusCode::NOT_FOUND, "not_found"),
                "{d}"
            );
        }

        // A capture: its executor reads it on the transport plane; nobody else does.
        let c = h.capture("screen.txt", PNG).await;
        assert_eq!(c["content_type"], "image/png", "{d}");
        let cpath = format!("/agent_api/v1/executor/uploads/{}", c["public_id"].as_str().unwrap());
        let r = h.get(&cpath, &h.token("runner"), &[]).await;
        assert_eq!(r.status, StatusCode::OK, "{d}");
        assert_eq!(r.json()["upload"], c, "{d}");
        let r = h.get(&cpath, &h.agent_transport(), &[]).await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (StatusCode::NOT_FOUND, "not_found"),
            "{d}"
        );
        // A member upload is not an executor's capture.
        let r = h
            .get(
                &format!("/agent_api/v1/executor/uploads/{}", u["public_id"].as_str().unwrap()),
                &h.token("runner"),
                &[],
            )
            .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{d}");
        // Executors never read through member routes (a transport bearer is refused there).
        let r = h
            .get(
                &format!("/agent_api/v1/uploads/{}/bytes", c["public_id"].as_str().unwrap()),
                &h.token("runner"),
                &[],
            )
            .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{d}");
    }
}

#[tokio::test]
async fn bytes_reads_ranges_and_etags() {
    for h in harnesses().await {
        let d = h.dialect;
        let agent = h.token("agent");
        let u = h.upload("agent", "shot.png", PNG).await;
        let path = format!("/agent_api/v1/uploads/{}/bytes", u["public_id"].as_str().unwrap());
        let r = h.get(&path, &agent, &[]).await;
        assert_eq!(r.status, StatusCode::OK, "{d}");
        assert_eq!(r.bytes, PNG, "{d}");
        let etag = r.header("etag").to_string();
        assert_eq!(etag.len(), 66, "{d}: a strong ETag of the sha256");
        assert!(etag.starts_with('"') && !etag.starts_with("W/"), "{d}");
        assert_eq!(r.header("accept-ranges"), "bytes", "{d}");
        assert_eq!(r.header("cache-control"), "private, max-age=31556952", "{d}");
        assert_eq!(r.header("content-type"), "image/png", "{d}");
        assert_eq!(
            r.header("content-disposition"),
            "inline; filename*=UTF-8''shot.png",
            "{d}"
        );
        assert_eq!(r.header("content-length"), PNG.len().to_string(), "{d}");

        let r = h.get(&path, &agent, &[("range", "bytes=1-3")]).await;
        assert_eq!(r.status, StatusCode::PARTIAL_CONTENT, "{d}");
        assert_eq!(r.bytes, b"PNG", "{d}");
        assert_eq!(r.header("content-range"), format!("bytes 1-3/{}", PNG.len()), "{d}");
        let r = h.get(&path, &agent, &[("range", "bytes=-4")]).await;
        assert_eq!(r.status, StatusCode::PARTIAL_CONTENT, "{d}");
        assert_eq!(r.bytes, &PNG[PNG.len() - 4..], "{d}");
        let r = h.get(&path, &agent, &[("range", "bytes=1000-")]).await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (StatusCode::RANGE_NOT_SATISFIABLE, "range_not_satisfiable"),
            "{d}"
        );
        assert_eq!(r.header("content-range"), format!("bytes */{}", PNG.len()), "{d}");

        let r = h.get(&path, &agent, &[("if-none-match", &etag)]).await;
        assert_eq!(r.status, StatusCode::NOT_MODIFIED, "{d}");
        assert!(r.bytes.is_empty(), "{d}");
        assert_eq!(r.header("etag"), etag, "{d}");
        let r = h.get(&path, &agent, &[("if-none-match", "\"other\"")]).await;
        assert_eq!(r.status, StatusCode::OK, "{d}");

        // Non-media is served as an attachment.
        let t = h.upload("agent", "notes.txt", b"hello").await;
        let r = h
            .get(
                &format!("/agent_api/v1/uploads/{}/bytes", t["public_id"].as_str().unwrap()),
                &agent,
                &[],
            )
            .await;
        assert_eq!(
            r.header("content-disposition"),
            "attachment; filename*=UTF-8''notes.txt",
            "{d}"
        );
        assert_eq!(r.bytes, b"hello", "{d}");
    }
}

#[tokio::test]
async fn bound_uploads_are_readable_by_workspace_members() {
    for h in harnesses().await {
        let d = h.dialect;
        let stranger = h.stranger().await;
        let c = h.capture("shot.png", PNG).await;
        let u = h.upload("agent", "notes.txt", b"notes").await;
        let cbytes = format!("/agent_api/v1/uploads/{}/bytes", c["public_id"].as_str().unwrap());
        let ubytes = format!("/agent_api/v1/uploads/{}/bytes", u["public_id"].as_str().unwrap());
        // Unbound: only the creator (for a capture: no member at all).
        for (path, who) in [
            (&cbytes, h.token("agent")),
            (&cbytes, h.token("human")),
            (&ubytes, h.token("human")),
        ] {
            let r = h.get(path, &who, &[]).await;
            assert_eq!(
                (r.status, r.code().as_str()),
                (StatusCode::NOT_FOUND, "not_found"),
                "{d} {path}"
            );
        }
        // Bound to a row of a run in the workspace: every member with standing reads it.
        let (_, task) = h.run_with_tool(&json!({}), None).await;
        h.bind(task.id, &c).await;
        h.bind(task.id, &u).await;
        h.bind(task.id, &u).await; // a repeat binding is idle
        for who in ["agent", "human"] {
            let r = h.get(&cbytes, &h.token(who), &[]).await;
            assert_eq!(r.status, StatusCode::OK, "{d} {who}");
            assert_eq!(r.bytes, PNG, "{d}");
            let r = h.get(&ubytes, &h.token(who), &[]).await;
            assert_eq!(r.status, StatusCode::OK, "{d} {who}");
        }
        // … but not a member without standing there; and the descriptor stays the creator's.
        let r = h.get(&cbytes, &stranger, &[]).await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (StatusCode::NOT_FOUND, "not_found"),
            "{d}"
        );
        let r = h
            .get(
                &format!("/agent_api/v1/uploads/{}", u["public_id"].as_str().unwrap()),
                &h.token("human"),
                &[],
            )
            .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{d}");
    }
}

#[tokio::test]
async fn result_links_must_name_the_committers_own_uploads() {
    for h in harnesses().await {
        let d = h.dialect;
        let mine = id_of(&h.capture("a.png", PNG).await);
        let other_exec = h
            .upload_to("/agent_api/v1/executor/uploads", &h.agent_transport(), "b.png", PNG)
            .await
            .json()["upload"]
            .clone();
        let theirs = id_of(&other_exec);
        let member_upload = id_of(&h.upload("human", "c.txt", b"c").await);
        let runner = h.runner_id().await;
        let human = h.member_id("human").await;
        let _ = h.agent_app_id().await;

        let mut tx = h.kernel.store.begin().await.unwrap();
        h.kernel
            .uploads()
            .check_result_uploads(&mut tx, Committer::Executor(runner), &[mine])
            .await
            .unwrap();
        h.kernel
            .uploads()
            .check_result_uploads(&mut tx, Committer::Executor(runner), &[])
            .await
            .unwrap();
        for ids in [
            vec![theirs],
            vec![mine, theirs],
            vec![member_upload],
            vec![Uuid::now_v7()],
        ] {
            let e = h
                .kernel
                .uploads()
                .check_result_uploads(&mut tx, Committer::Executor(runner), &ids)
                .await
                .unwrap_err();
            assert_eq!(e.code.as_str(), "unknown_result_upload", "{d} {ids:?}");
            assert_eq!(e.code.status(), 422, "{d}");
        }
        h.kernel
            .uploads()
            .check_result_uploads(&mut tx, Committer::Member(human), &[member_upload])
            .await
            .unwrap();
        let e = h
            .kernel
            .uploads()
            .check_result_uploads(&mut tx, Committer::Member(human), &[mine])
            .await
            .unwrap_err();
        assert_eq!(e.code.as_str(), "unknown_result_upload", "{d}");
        // The refusals leave the unit of work usable.
        assert!(!tx.is_void(), "{d}");
        let e = h
            .kernel
            .uploads()
            .bind_result_uploads(&mut tx, 1, &[Uuid::now_v7()])
            .await
            .unwrap_err();
        assert_eq!(e.code.as_str(), "unknown_result_upload", "{d}");
        tx.rollback().await.unwrap();
    }
}

#[tokio::test]
async fn the_reaper_reclaims_unbound_uploads_after_a_day() {
    for h in harnesses().await {
        let d = h.dialect;
        let agent = h.token("agent");
        let unbound = h.upload("agent", "a.txt", b"only me").await;
        let shared_a = h.upload("agent", "s1.png", PNG).await;
        let shared_b = h.capture("s2.png", PNG).await;
        let (_, task) = h.run_with_tool(&json!({}), None).await;
        h.bind(task.id, &shared_b).await;
        assert_eq!(h.blob_files(), 2, "{d}");

        let now = nexus_kernel::time::now_ms();
        assert_eq!(h.kernel.uploads().reap_uploads(now).await.unwrap(), 0, "{d}: too young");
        assert_eq!(
            h.kernel.uploads().reap_uploads(now + 23 * 3_600_000).await.unwrap(),
            0,
            "{d}"
        );
        assert_eq!(
            h.kernel.uploads().reap_uploads(now + 25 * 3_600_000).await.unwrap(),
            2,
            "{d}"
        );
        // The unbound upload and its blob are gone; the shared blob stays for the bound capture.
        assert_eq!(h.blob_files(), 1, "{d}");
        for u in [&unbound, &shared_a] {
            let r = h
                .get(
                    &format!("/agent_api/v1/uploads/{}", u["public_id"].as_str().unwrap()),
                    &agent,
                    &[],
                )
                .await;
            assert_eq!(r.status, StatusCode::NOT_FOUND, "{d}");
        }
        let r = h
            .get(
                &format!(
                    "/agent_api/v1/uploads/{}/bytes",
                    shared_b["public_id"].as_str().unwrap()
                ),
                &agent,
                &[],
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{d}");
        assert_eq!(r.bytes, PNG, "{d}");
        // A settle naming a reclaimed upload is refused.
        let mut tx = h.kernel.store.begin().await.unwrap();
        let member = h.member_id("agent").await;
        let e = h
            .kernel
            .uploads()
            .check_result_uploads(&mut tx, Committer::Member(member), &[id_of(&unbound)])
            .await
            .unwrap_err();
        assert_eq!(e.code.as_str(), "unknown_result_upload", "{d}");
        drop(tx);
        // The same bytes can be uploaded again after their blob was reclaimed.
        let again = h.upload("agent", "a.txt", b"only me").await;
        let r = h
            .get(
                &format!("/agent_api/v1/uploads/{}/bytes", again["public_id"].as_str().unwrap()),
                &agent,
                &[],
            )
            .await;
        assert_eq!(r.bytes, b"only me", "{d}");
        // The hourly gate: a second call within the hour does nothing.
        let later = now + 50 * 3_600_000;
        h.kernel.uploads().reap_uploads_if_due(later).await.unwrap();
        assert_eq!(
            h.kernel.uploads().reap_uploads_if_due(later + 1000).await.unwrap(),
            0,
            "{d}"
        );
    }
}

#[tokio::test]
async fn claim_scoped_attachment_reads() {
    for h in harnesses().await {
        let d = h.dialect;
        let runner = h.token("runner");
        let bound = h.capture("shot.png", PNG).await;
        let mentioned = h.upload("agent", "input.txt", b"input").await;
        let foreign = h.upload("human", "other.txt", b"other").await;
        let input = json!({"file": format!("nexus://uploads/{}", mentioned["public_id"].as_str().unwrap()), "n": 1});
        let deadline = nexus_kernel::time::now_ms() + 600_000;
        let (run, task) = h.run_with_tool(&input, Some(("tok-1", deadline))).await;
        h.bind(task.id, &bound).await;
        let x = |u: &Value, tail: &str| {
            format!(
                "/agent_api/v1/executor/inbox/{run}/t1/attachments/{}{tail}",
                u["public_id"].as_str().unwrap()
            )
        };

        let r = h.get(&x(&bound, ""), &runner, &[]).await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (StatusCode::BAD_REQUEST, "parameter_missing"),
            "{d}"
        );
        let r = h.get(&x(&bound, ""), &runner, &[("claim-token", "wrong")]).await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (StatusCode::CONFLICT, "not_claimant"),
            "{d}"
        );
        let r = h
            .get(&x(&bound, ""), &h.agent_transport(), &[("claim-token", "tok-1")])
            .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{d}: not addressed to this executor");

        let r = h.get(&x(&bound, ""), &runner, &[("claim-token", "tok-1")]).await;
        assert_eq!(r.status, StatusCode::OK, "{d}: {:?}", String::from_utf8_lossy(&r.bytes));
        assert_eq!(r.json()["upload"], bound, "{d}");
        assert_eq!(r.header("cache-control"), "no-store", "{d}");
        let r = h
            .get(
                &x(&bound, "/bytes"),
                &runner,
                &[("claim-token", "tok-1"), ("range", "bytes=0-0")],
            )
            .await;
        assert_eq!(r.status, StatusCode::PARTIAL_CONTENT, "{d}");
        assert_eq!(r.bytes, &PNG[..1], "{d}");
        assert_eq!(r.header("cache-control"), "no-store", "{d}");
        // A tool_input mention of an upload the run can read (its creator's own).
        let r = h
            .get(&x(&mentioned, "/bytes"), &runner, &[("claim-token", "tok-1")])
            .await;
        assert_eq!(r.status, StatusCode::OK, "{d}");
        assert_eq!(r.bytes, b"input", "{d}");
        // Unreachable from the run.
        let r = h.get(&x(&foreign, ""), &runner, &[("claim-token", "tok-1")]).await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (StatusCode::NOT_FOUND, "not_found"),
            "{d}"
        );

        // A lapsed claim: 409 claim_inactive.
        let (run2, _) = h
            .run_with_tool(&input, Some(("tok-2", nexus_kernel::time::now_ms() - 1)))
            .await;
        let r = h
            .get(
                &format!(
                    "/agent_api/v1/executor/inbox/{run2}/t1/attachments/{}",
                    mentioned["public_id"].as_str().unwrap()
                ),
                &runner,
                &[("claim-token", "tok-2")],
            )
            .await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (StatusCode::CONFLICT, "claim_inactive"),
            "{d}"
        );
    }
}
