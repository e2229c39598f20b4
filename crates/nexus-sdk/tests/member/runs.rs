//! Runs end to end: create (idempotent), start, list, reads of tasks, sealed request, provider
//! body, cache, transcript, graph and events, append, stop, and their refusals.

use nexus_sdk::member::{
    Append, ApprovalMode, EventKind, NewRun, Page, Resolution, RunStatus, Step, TaskKind, TaskStatus,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::harness::{eventually, refusal, served, task_when};

fn plain_script() -> (&'static str, Vec<Value>) {
    (
        "plain",
        vec![json!({"text": "Done.", "usage": {"input_tokens": 11, "output_tokens": 7}})],
    )
}

fn plain_run() -> NewRun {
    NewRun::new(ApprovalMode::Bypass).step(Step::model("Say done.").model("scripted/plain").key("m"))
}

#[tokio::test]
async fn a_model_run_is_driven_and_read_through_the_sdk() {
    for s in served(&[plain_script()]).await {
        let d = s.dialect;
        let ws = s.ws();

        // Create twice under one key: the second is the replay of the first.
        let created = ws.create_run(&plain_run().idempotency_key("once")).await.unwrap();
        assert!(!created.replayed, "{d}");
        assert_eq!(created.run.status, RunStatus::Pending, "{d}");
        assert_eq!(created.run.approval_mode, ApprovalMode::Bypass);
        assert_eq!(created.receipt.accepted_task_keys, ["m"]);
        assert_eq!(created.receipt.deliverable_task_key.as_deref(), Some("m"));
        let again = ws.create_run(&plain_run().idempotency_key("once")).await.unwrap();
        assert!(again.replayed, "{d}");
        assert_eq!(again.run.public_id, created.run.public_id);
        let other = NewRun::new(ApprovalMode::Ask)
            .step(Step::model("x").model("scripted/plain"))
            .idempotency_key("once");
        assert_eq!(
            refusal(ws.create_run(&other).await),
            (409, "idempotency_envelope_mismatch".into())
        );
        let bad_key = plain_run().idempotency_key("line\nbreak");
        assert!(matches!(
            ws.create_run(&bad_key).await,
            Err(nexus_sdk::Error::InvalidArgument(_))
        ));

        let run = ws.run(&created.run.public_id);
        let started = run.start().await.unwrap();
        assert_eq!(started.status, RunStatus::Running, "{d}");
        assert!(started.started_at.is_some());
        assert_eq!(refusal(run.start().await), (409, "not_startable".into()));

        let ended = run.wait_until(RunStatus::is_terminal).await.unwrap();
        assert_eq!(ended.status, RunStatus::Completed, "{d}");
        let read = run.get().await.unwrap();
        assert_eq!((read.usage.input_tokens, read.usage.output_tokens), (11, 7), "{d}");
        assert!(read.run.ended_at.is_some());

        // Tasks: the list, one read, an unknown key.
        let tasks = run.tasks(&Page::first()).await.unwrap();
        assert_eq!(tasks.tasks.len(), 1, "{d}");
        assert_eq!(tasks.pagination.next_after, None);
        let m = run.task("m").await.unwrap();
        assert_eq!(
            (m.kind.clone(), m.status.clone()),
            (TaskKind::Model, TaskStatus::Completed)
        );
        assert_eq!(m.output.as_deref(), Some("Done."), "{d}");
        assert_eq!(m.model.as_deref(), Some("scripted/plain"));
        assert_eq!(m.usage.as_ref().map(|u| u.output_tokens), Some(7));
        assert_eq!(refusal(run.task("nope").await), (404, "not_found".into()));

        // The sealed request, and the provider bytes with their digest.
        let sealed = run.request("m").await.unwrap();
        let body = run.provider_body("m").await.unwrap();
        let digest = hex(&Sha256::digest(&body.bytes));
        assert_eq!(body.body_sha256, digest, "{d}");
        assert_eq!(sealed.body_sha256, digest);
        assert_eq!(sealed.request_bytes, body.bytes.len() as i64);
        assert!(!sealed.entries.is_empty());

        let cache = run.cache().await.unwrap();
        assert_eq!(cache.rounds.len(), 1, "{d}");
        assert_eq!(cache.rounds[0].key, "m");
        assert_eq!(cache.usage.output_tokens, 7);

        let transcript = run.transcript(false).await.unwrap();
        let texts: Vec<(&str, Option<&str>)> = transcript
            .rows
            .iter()
            .map(|r| (r.role.as_str(), r.text.as_deref()))
            .collect();
        assert_eq!(
            texts,
            [("user", Some("Say done.")), ("assistant", Some("Done."))],
            "{d}"
        );

        let graph = run.graph().await.unwrap();
        assert_eq!(graph.nodes.len(), 1);
        assert_eq!(graph.nodes[0].key, "m");
        assert!(graph.mermaid.starts_with("flowchart"), "{}", graph.mermaid);

        // Events: a gapless page from 1; after the last, nothing.
        let page = run.events(0, None).await.unwrap();
        let sequences: Vec<i64> = page.events.iter().map(|e| e.sequence).collect();
        assert_eq!(sequences, (1..=sequences.len() as i64).collect::<Vec<_>>(), "{d}");
        assert_eq!(page.next_after, *sequences.last().unwrap());
        let last_change = page.events.iter().rev().find_map(|e| e.run_status_change()).unwrap();
        assert_eq!(last_change.to, RunStatus::Completed);
        assert!(page.events.iter().any(|e| e.kind == EventKind::TasksAppended));
        let two = run.events(0, Some(2)).await.unwrap();
        assert_eq!(two.events.len(), 2);
        assert_eq!(two.next_after, 2);
        let rest = run.events(page.next_after, None).await.unwrap();
        assert!(rest.events.is_empty());
        assert_eq!(rest.next_after, page.next_after);

        // An ended run refuses growth and a stop.
        let more = Append::new().step(Step::model("More.").model("scripted/plain"));
        assert_eq!(refusal(run.append(&more).await), (409, "run_not_appendable".into()));
        assert_eq!(refusal(run.stop(true).await), (409, "already_terminal".into()));

        // Listing: by status, and page by page.
        let pending = ws.create_run(&plain_run()).await.unwrap();
        let completed = ws.runs(Some(&RunStatus::Completed), &Page::first()).await.unwrap();
        let ids: Vec<&str> = completed.runs.iter().map(|r| r.public_id.as_str()).collect();
        assert_eq!(ids, [created.run.public_id.as_str()], "{d}");
        let first = Page::first().limit(1);
        let page1 = ws.runs(None, &first).await.unwrap();
        assert_eq!(page1.runs.len(), 1);
        let page2 = ws.runs(None, &page1.pagination.next(&first).unwrap()).await.unwrap();
        let mut both = vec![page1.runs[0].public_id.clone(), page2.runs[0].public_id.clone()];
        both.sort();
        let mut expected = vec![created.run.public_id.clone(), pending.run.public_id.clone()];
        expected.sort();
        assert_eq!(both, expected, "{d}");

        // A pending run stops straight to canceled; an unknown run is not found.
        let stopped = ws.run(&pending.run.public_id).stop(false).await.unwrap();
        assert_eq!(stopped.status, RunStatus::Canceled, "{d}");
        let ghost = ws.run("00000000-0000-7000-8000-000000000000");
        assert_eq!(refusal(ghost.get().await), (404, "not_found".into()));
        assert!(matches!(
            ws.run("..").get().await,
            Err(nexus_sdk::Error::InvalidArgument(_))
        ));
    }
}

#[tokio::test]
async fn append_resolve_and_a_forced_stop() {
    for s in served(&[plain_script()]).await {
        let d = s.dialect;
        let ws = s.ws();
        let (run, created) = ws
            .start_run(&NewRun::new(ApprovalMode::Bypass).step(Step::ask("Ship it?").key("q")))
            .await
            .unwrap();
        let token = created.receipt.resolution_token("q").expect("a token").to_owned();
        task_when(&run, "q", |t| t.status == TaskStatus::Dispatched).await;

        // Append behind the open ask, once, under a key; the replay changes nothing.
        let append = Append::new()
            .step(Step::model("After the answer.").model("scripted/plain").key("after"))
            .expected_revision(1)
            .idempotency_key("a1");
        let appended = run.append(&append).await.unwrap();
        assert_eq!(appended.receipt.accepted_task_keys, ["after"], "{d}");
        assert_eq!(appended.receipt.revision, 2);
        assert!(run.append(&append).await.unwrap().replayed);
        let stale = Append::new().step(Step::ask("x")).expected_revision(1);
        assert_eq!(refusal(run.append(&stale).await), (409, "stale_revision".into()));

        // The ask: a wrong token is refused; the right one settles it; again is idle.
        let wrong = Resolution::text("yes").token("not-the-token");
        assert_eq!(refusal(run.resolve("q", &wrong).await), (409, "stale_claim".into()));
        let resolved = run.resolve("q", &Resolution::text("yes").token(&token)).await.unwrap();
        assert!(!resolved.idle);
        assert_eq!(resolved.task.status, TaskStatus::Completed, "{d}");
        assert_eq!(resolved.task.output.as_deref(), Some("yes"));
        let again = run.resolve("q", &Resolution::text("no").token(&token)).await.unwrap();
        assert!(again.idle, "{d}");
        let ended = run.wait_until(RunStatus::is_terminal).await.unwrap();
        assert_eq!(ended.status, RunStatus::Completed, "{d}");
        assert_eq!(ended.deliverable_task_key.as_deref(), Some("after"));

        // A forced stop cancels an open ask at once.
        let (run, _) = ws
            .start_run(&NewRun::new(ApprovalMode::Bypass).step(Step::ask("Wait for me").key("q")))
            .await
            .unwrap();
        task_when(&run, "q", |t| t.status == TaskStatus::Dispatched).await;
        let stopping = run.stop(true).await.unwrap();
        assert!(
            matches!(stopping.status, RunStatus::Canceling | RunStatus::Canceled),
            "{d}: {}",
            stopping.status
        );
        let ended = run.wait_until(RunStatus::is_terminal).await.unwrap();
        assert_eq!(ended.status, RunStatus::Canceled, "{d}");
        let q = eventually("the ask to settle", || async {
            let q = run.task("q").await.ok()?;
            q.status.is_settled().then_some(q)
        })
        .await;
        assert_eq!(q.status, TaskStatus::Canceled, "{d}");
        assert_eq!(q.error.map(|e| e.key).as_deref(), Some("run_canceled"));
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
