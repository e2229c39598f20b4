//! Uploads (a byte-exact round trip, a file upload, who may read), memory documents (put, read,
//! list, conditional writes, delete; a conversation's scope) and runner discovery.

use nexus_sdk::member::{NewConversation, PutDocument};

use crate::harness::{refusal, served};

#[tokio::test]
async fn an_upload_round_trips_byte_for_byte() {
    for s in served(&[]).await {
        let d = s.dialect;
        // Not UTF-8, with NUL: detected as octet-stream.
        let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        let upload = s.agent.upload("dir/blob.bin", bytes.clone()).await.unwrap();
        assert_eq!(upload.byte_size, bytes.len() as u64, "{d}");
        assert_eq!(upload.filename, "blob.bin", "path components are stripped");
        assert_eq!(upload.content_type, "application/octet-stream");

        let described = s.agent.upload_descriptor(&upload.public_id).await.unwrap();
        assert_eq!(described, upload, "{d}");
        let read = s.agent.upload_bytes(&upload.public_id).await.unwrap();
        assert!(read.bytes == bytes, "{d}: the bytes differ");
        assert!(read.etag.is_some());

        // From a file: streamed, named by the file, typed by its bytes.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "plain text\n").unwrap();
        let from_file = s.agent.upload_file(&path).await.unwrap();
        assert_eq!(from_file.filename, "notes.txt");
        assert_eq!(from_file.content_type, "text/plain", "{d}");
        let read = s.agent.upload_bytes(&from_file.public_id).await.unwrap();
        assert_eq!(read.bytes, b"plain text\n");
        let missing = s.agent.upload_file(dir.path().join("absent")).await;
        assert!(matches!(missing, Err(nexus_sdk::Error::Io(_))));

        // Another member sees nothing of an unbound upload; an unknown id is not found.
        assert_eq!(
            refusal(s.human.upload_descriptor(&upload.public_id).await),
            (404, "not_found".into())
        );
        assert_eq!(
            refusal(s.human.upload_bytes(&upload.public_id).await),
            (404, "not_found".into())
        );
        let ghost = "00000000-0000-7000-8000-000000000000";
        assert_eq!(
            refusal(s.agent.upload_descriptor(ghost).await),
            (404, "not_found".into())
        );
    }
}

#[tokio::test]
async fn memory_documents_are_put_read_listed_and_deleted() {
    for s in served(&[]).await {
        let d = s.dialect;
        let ws = s.ws();
        let put = ws
            .memory()
            .put(&PutDocument::new("workspace/notes/plan.md", "step one\n"))
            .await
            .unwrap();
        assert_eq!(put.path, "workspace/notes/plan.md", "{d}");
        assert_eq!(put.content, "step one\n");
        let version = put.lock_version;

        let read = ws.memory().read("workspace/notes/plan.md").await.unwrap();
        assert_eq!(read, put, "{d}");

        ws.memory()
            .put(&PutDocument::new("workspace/other.md", "x"))
            .await
            .unwrap();
        let listed = ws.memory().list(Some("workspace/notes")).await.unwrap();
        let paths: Vec<&str> = listed.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["workspace/notes/plan.md"], "{d}");
        assert_eq!(listed[0].byte_size, 9);
        let all = ws.memory().list(None).await.unwrap();
        assert_eq!(all.len(), 2, "{d}");

        // A conditional write: the stored version wins, a stale one is refused.
        let stale = PutDocument::new("workspace/notes/plan.md", "step two\n").expected_lock_version(version + 7);
        assert_eq!(refusal(ws.memory().put(&stale).await), (409, "stale_object".into()));
        let next = PutDocument::new("workspace/notes/plan.md", "step two\n").expected_lock_version(version);
        let written = ws.memory().put(&next).await.unwrap();
        assert!(written.lock_version > version, "{d}");

        let bad = ws.memory().put(&PutDocument::new("nowhere", "x")).await.unwrap_err();
        let api = bad.api().unwrap();
        assert_eq!(
            (api.status, api.code.as_str(), api.reason()),
            (422, "validation_failed", Some("memory_path_invalid"))
        );

        assert_eq!(
            refusal(ws.memory().delete("workspace/notes/plan.md", Some(version)).await),
            (409, "stale_object".into())
        );
        let deleted = ws
            .memory()
            .delete("workspace/notes/plan.md", Some(written.lock_version))
            .await
            .unwrap();
        assert_eq!(deleted.path, "workspace/notes/plan.md");
        assert_eq!(deleted.lock_version, written.lock_version, "{d}");
        assert_eq!(
            refusal(ws.memory().read("workspace/notes/plan.md").await),
            (404, "not_found".into())
        );
        assert_eq!(
            refusal(ws.memory().delete("workspace/notes/plan.md", None).await),
            (404, "not_found".into())
        );
    }
}

#[tokio::test]
async fn a_conversations_memory_is_reached_through_its_door() {
    for s in served(&[]).await {
        let d = s.dialect;
        let ws = s.ws();
        let made = ws.create_conversation(&NewConversation::new()).await.unwrap();
        let door = ws.conversation(&made.conversation.public_id).memory();
        let put = door
            .put(&PutDocument::new("conversation/notes.md", "decided: blue\n"))
            .await
            .unwrap();
        assert_eq!(put.path, "conversation/notes.md", "{d}");
        assert_eq!(
            door.read("conversation/notes.md").await.unwrap().content,
            "decided: blue\n"
        );
        let listed: Vec<String> = door.list(None).await.unwrap().into_iter().map(|e| e.path).collect();
        assert_eq!(listed, ["conversation/notes.md"], "{d}");
        // The workspace's door has no conversation: the path needs one.
        assert_eq!(
            refusal(ws.memory().read("conversation/notes.md").await),
            (400, "parameter_missing".into())
        );
        let other = ws.create_conversation(&NewConversation::new()).await.unwrap();
        assert_eq!(
            refusal(
                ws.conversation(&other.conversation.public_id)
                    .memory()
                    .read("conversation/notes.md")
                    .await
            ),
            (404, "not_found".into())
        );
        door.delete("conversation/notes.md", Some(put.lock_version))
            .await
            .unwrap();
        assert!(door.list(Some("conversation")).await.unwrap().is_empty(), "{d}");
    }
}

#[tokio::test]
async fn runners_are_discovered() {
    for s in served(&[]).await {
        let d = s.dialect;
        s.announce_echo().await;
        let runners = s.agent.runners().await.unwrap();
        let runner = runners
            .iter()
            .find(|r| r.public_id == s.runner_id())
            .unwrap_or_else(|| panic!("{d}: the bootstrap runner is listed in {runners:?}"));
        assert_eq!(runner.kind, "runner");
        assert_eq!(runner.tool_names().collect::<Vec<_>>(), ["echo"], "{d}");
        assert!(runner.last_seen_at.is_some());
        let one = s.agent.runner(&s.runner_id()).await.unwrap();
        assert_eq!(&one, runner, "{d}");
        let agent_app = s.boot["agent"]["executor_public_id"].as_str().unwrap();
        assert_eq!(refusal(s.agent.runner(agent_app).await), (404, "not_found".into()));
    }
}
