//! Media links in the continuation (runs.md §8, uploads.md §7, seed "The result envelope"), on
//! both engines: a scripted round calls a runner tool, the runner commits a result linking its
//! captures, and the next round's sealed request carries one attachment-only entry after the
//! round's last result (accepted images and PDFs), index lines for oversized or refused media,
//! and the resource_link JSON of non-media links.

mod common;

use common::{RunnerWorld as World, runner_world, shot_tools};

use nexus_kernel::executor::commit::CommitRequest;
use nexus_kernel::uploads::Creator;
use nexus_providers::{Entry, Part};
use nexus_store::TaskKind;
use nexus_store::testing::{TestStore, engines};
use serde_json::{Value, json};
use uuid::Uuid;

const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R', 0, 0, 0, 1, 0, 0, 0, 1, 8,
    6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89,
];
const PDF: &[u8] = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n";

async fn world(ts: TestStore) -> World {
    runner_world(ts, shot_tools()).await
}

impl World {
    /// A capture of the runner holding `bytes` (streamed in two chunks).
    async fn capture(&self, name: &str, bytes: &[u8]) -> Value {
        let mut w = self.kernel.uploads().begin_upload().await.unwrap();
        let (a, b) = bytes.split_at(bytes.len() / 2);
        w.write(a).await.unwrap();
        w.write(b).await.unwrap();
        self.kernel
            .uploads()
            .create_upload(Creator::Executor(&self.runner), name, w)
            .await
            .map(|created| serde_json::to_value(created.upload).unwrap())
            .unwrap()
    }

    /// A started run of one model step `m` (script `name`: one call of `shot`, then "Done.").
    async fn run(&self, name: &str, model: &str) -> Uuid {
        self.script(
            name,
            &[
                json!({"text": "Shooting.", "tool_calls": [{"id": "c1", "name": "shot", "input": {}}]}),
                json!({"text": "Done."}),
            ],
        );
        let routed = self.routed("shot", "shot");
        self.start(json!({"approval_mode": "bypass", "steps": [
            {"key": "m", "model": {"prompt": "Take a shot.", "model": model, "tools": [routed]}}]}))
            .await
    }

    /// Claims the run's tool row: (key, claim token).
    async fn claim(&self, run: Uuid) -> (String, String) {
        let tool = self
            .tasks(run)
            .await
            .into_iter()
            .find(|t| t.kind == TaskKind::Tool)
            .expect("the call's tool row");
        let claimed = self
            .kernel
            .executor()
            .claim(&self.runner, run, &tool.key)
            .await
            .unwrap();
        (tool.key, claimed.claim.claim_token)
    }

    /// Commits the claimed tool row with `content`, then drives the engine.
    async fn commit(&self, run: Uuid, claim: &(String, String), content: Value) -> Value {
        let out = match CommitRequest::parse(&json!({"claim_token": claim.1, "content": content})) {
            Ok(body) => self.kernel.executor().commit(&self.runner, run, &claim.0, &body).await,
            Err(refused) => Err(refused),
        };
        self.drive().await;
        out.map(|reply| serde_json::to_value(reply.task).unwrap())
            .unwrap_or_else(|e| json!({"error": e.code.as_str()}))
    }

    /// The sealed entries of the continuation round.
    async fn continuation_entries(&self, run: Uuid) -> Vec<Entry> {
        let tasks = self.tasks(run).await;
        let root = tasks.iter().find(|t| t.key == "m").unwrap();
        let next = tasks
            .iter()
            .find(|t| t.kind == TaskKind::Model && t.declaring_task_id == Some(root.id))
            .expect("a continuation round");
        serde_json::from_value(self.request_read(run, &next.key).await["entries"].clone()).unwrap()
    }
}

fn link(u: &Value, name: &str, mime: Option<&str>) -> Value {
    let mut l = json!({"type": "resource_link", "uri": format!("nexus://uploads/{}", u["public_id"].as_str().unwrap()), "name": name});
    if let Some(m) = mime {
        l["mimeType"] = json!(m);
    }
    l
}

fn id(u: &Value) -> Uuid {
    Uuid::parse_str(u["public_id"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn a_committed_capture_rides_in_the_attachment_only_message() {
    for ts in engines().await {
        let d = ts.dialect;
        let w = world(ts).await;
        let png = w.capture("shot.txt", PNG).await; // detected image/png whatever the name says
        assert_eq!(png["content_type"], "image/png", "{d}");
        let pdf = w.capture("report.pdf", PDF).await;
        let notes = w.capture("notes.txt", b"plain notes").await;
        let mut big_bytes = PNG.to_vec();
        big_bytes.resize(8_388_609, 0);
        let big = w.capture("big.png", &big_bytes).await;
        assert_eq!(big["byte_size"], 8_388_609, "{d}");

        let run = w.run("media", "scripted/media").await;
        let claim = w.claim(run).await;
        let task = w
            .commit(
                run,
                &claim,
                json!([
                    {"type": "text", "text": "Here it is."},
                    link(&png, "screen", Some("text/plain")), // the link's mimeType is never trusted
                    link(&big, "huge", None),
                    link(&notes, "notes", Some("text/plain")),
                    link(&pdf, "report", None),
                ]),
            )
            .await;
        assert_eq!(task["status"], "completed", "{d}: {task}");

        let entries = w.continuation_entries(run).await;
        let n = entries.len();
        // … user prompt, assistant, the one result, then ONE attachment-only entry.
        let Entry::ToolResult { output, is_error, .. } = &entries[n - 2] else {
            panic!("{d}: the round's last result precedes the attachments: {entries:?}")
        };
        assert!(!is_error, "{d}");
        let expected = [
            "Here it is.".to_string(),
            format!(
                "[attachment: huge (image/png, 8388609 bytes) nexus://uploads/{}]",
                id(&big)
            ),
            format!(
                r#"{{"type":"resource_link","uri":"nexus://uploads/{}","name":"notes","mimeType":"text/plain"}}"#,
                id(&notes)
            ),
        ]
        .join("\n");
        assert_eq!(output, &expected, "{d}");
        assert_eq!(
            entries[n - 1],
            Entry::Attachments {
                parts: vec![
                    Part::Image {
                        upload: id(&png),
                        media_type: "image/png".into()
                    },
                    Part::Document { upload: id(&pdf) },
                ]
            },
            "{d}"
        );
        assert_eq!(
            entries
                .iter()
                .filter(|e| matches!(e, Entry::Attachments { .. }))
                .count(),
            1,
            "{d}"
        );

        // The committed captures are bound: the run's members read their bytes.
        let bytes = w.kernel.uploads().upload_bytes(&w.agent, id(&png)).await.unwrap();
        assert_eq!(bytes.upload.content_type, "image/png", "{d}");
    }
}

#[tokio::test]
async fn a_foreign_link_refuses_the_commit_and_the_park_stands() {
    for ts in engines().await {
        let d = ts.dialect;
        let w = world(ts).await;
        let png = w.capture("shot.png", PNG).await;
        let run = w.run("refused", "scripted/refused").await;
        let claim = w.claim(run).await;
        let other = w.kernel.uploads().begin_upload().await.unwrap();
        let member_upload = w
            .kernel
            .uploads()
            .create_upload(Creator::Member(&w.agent), "m.png", other)
            .await
            .map(|created| serde_json::to_value(created.upload).unwrap())
            .unwrap();
        let refused = w
            .commit(run, &claim, json!([link(&member_upload, "theirs", None)]))
            .await;
        assert_eq!(refused["error"], "unknown_result_upload", "{d}: whole or nothing");
        let task = w.commit(run, &claim, json!([link(&png, "shot", None)])).await;
        assert_eq!(
            task["status"], "completed",
            "{d}: the park stood after the refusal: {task}"
        );
        let entries = w.continuation_entries(run).await;
        let Entry::ToolResult { output, .. } = &entries[entries.len() - 2] else {
            panic!("{d}: {entries:?}")
        };
        assert_eq!(output, "", "{d}: an attached image contributes no text");
        assert!(matches!(entries.last(), Some(Entry::Attachments { .. })), "{d}");
    }
}
