//! Run recovery through the member client (runs.md §6, §2): a failed runner call retried to a
//! new generation, a second failure abandoned, the branch-cancel refusal on a row that roots
//! no branch, and the run's default runner changed and refused.

use nexus_sdk::member::{ApprovalMode, NewRun, Step, TaskStatus};
use serde_json::json;

use crate::harness::{refusal, served, task_when};

const KEY: &str = "s1-tool-1";

/// Claims the row as the runner and commits a failed outcome.
async fn fail(s: &crate::harness::Served, run: &str) {
    let token = s.claim(run, KEY).await;
    let body = json!({"claim_token": token, "outcome": "failed", "content": "boom"});
    let (status, reply) = s
        .executor(reqwest::Method::POST, &format!("/inbox/{run}/{KEY}/commit"), Some(body))
        .await;
    assert_eq!(status, 200, "{reply}");
}

#[tokio::test]
async fn a_failed_call_is_retried_then_abandoned_and_the_default_runner_moves() {
    for s in served(&[]).await {
        let d = s.dialect;
        s.announce_echo().await;
        let ws = s.ws();
        let step = Step::runner_tool("echo", json!({"text": "hi"})).runner(s.runner_id());
        let (run, _) = ws
            .start_run(&NewRun::new(ApprovalMode::Bypass).step(step))
            .await
            .unwrap();
        task_when(&run, KEY, |t| t.status == TaskStatus::Dispatched).await;

        // Not a candidate yet: the row is live.
        assert_eq!(
            refusal(run.retry(KEY, None).await),
            (409, "not_retryable".into()),
            "{d}"
        );
        fail(&s, run.public_id()).await;
        let failed = task_when(&run, KEY, |t| t.status == TaskStatus::Failed).await;
        assert_eq!(failed.generation, 1, "{d}");

        let retried = run.retry(KEY, None).await.unwrap();
        assert_eq!(retried.generation, 2, "{d}: a retry is a new generation");
        task_when(&run, KEY, |t| t.status == TaskStatus::Dispatched).await;
        fail(&s, run.public_id()).await;
        task_when(&run, KEY, |t| t.status == TaskStatus::Failed && t.generation == 2).await;

        let abandoned = run.abandon(KEY).await.unwrap();
        assert_eq!(abandoned.failure_resolution.as_deref(), Some("abandoned"), "{d}");
        assert_eq!(refusal(run.abandon(KEY).await), (409, "not_abandonable".into()), "{d}");
        assert_eq!(
            refusal(run.cancel_branch(KEY).await),
            (409, "not_a_branch".into()),
            "{d}"
        );
        assert_eq!(refusal(run.retry("nope", None).await), (404, "not_found".into()), "{d}");

        let moved = run.set_default_runner(Some(&s.runner_id())).await.unwrap();
        assert_eq!(moved.default_runner_executor_public_id, Some(s.runner_id()), "{d}");
        let cleared = run.set_default_runner(None).await.unwrap();
        assert_eq!(cleared.default_runner_executor_public_id, None, "{d}");
        let unknown = run
            .set_default_runner(Some("01a24200-0000-7000-8000-000000000000"))
            .await;
        assert_eq!(refusal(unknown), (404, "runner_not_found".into()), "{d}");
    }
}
