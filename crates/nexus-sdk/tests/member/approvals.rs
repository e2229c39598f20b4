//! Approvals in `ask` mode: the held calls listed, one approved, one denied with a reason, the
//! refusals of a second decision, and the run finishing on the continuation.

use nexus_sdk::member::{ApprovalMode, NewRun, Page, RunStatus, Step, TaskStatus};
use nexus_sdk::tools;
use serde_json::json;

use crate::harness::{eventually, refusal, served, task_when};

#[tokio::test]
async fn held_calls_are_approved_and_denied() {
    let script = vec![
        json!({"text": "Listing twice.", "tool_calls": [
            {"id": "c1", "name": "runners_list", "input": {}},
            {"id": "c2", "name": "runners_list", "input": {}}]}),
        json!({"text": "Done."}),
    ];
    for s in served(&[("listing", script.clone())]).await {
        let d = s.dialect;
        let ws = s.ws();
        let step = Step::model("List the machines.")
            .model("scripted/listing")
            .kernel_tools([tools::RUNNERS_LIST]);
        let (run, _) = ws.start_run(&NewRun::new(ApprovalMode::Ask).step(step)).await.unwrap();

        let held = eventually("two held calls", || async {
            let page = ws.approvals(&Page::first()).await.ok()?;
            (page.approvals.len() == 2).then_some(page)
        })
        .await;
        let keys: Vec<&str> = held.approvals.iter().map(|a| a.task_key.as_str()).collect();
        assert_eq!(keys, ["r1t0", "r1t1"], "{d}");
        for a in &held.approvals {
            assert_eq!(a.run_public_id, run.public_id());
            assert_eq!(a.tool_name.as_deref(), Some("runners_list"));
            assert!(a.effect_profile.is_object(), "{d}: {:?}", a.effect_profile);
            assert!(a.deadline_at.is_some());
        }
        let one = ws.approvals(&Page::first().limit(1)).await.unwrap();
        assert_eq!(one.approvals.len(), 1);
        assert!(one.pagination.next_after.is_some(), "{d}");
        assert_eq!(run.task("r1t0").await.unwrap().status, TaskStatus::NeedsApproval);

        // A denial with a reason; a second decision on that row is refused while the other
        // row still holds the run open.
        let denied = run.deny("r1t1", Some("not today")).await.unwrap();
        assert_eq!(denied.status, TaskStatus::Failed, "{d}");
        let error = denied.error.expect("an error");
        assert_eq!(
            (error.key.as_str(), error.detail.as_deref()),
            ("approval_denied", Some("not today"))
        );
        assert_eq!(
            refusal(run.approve("r1t1").await),
            (409, "not_awaiting_approval".into())
        );
        assert_eq!(refusal(run.approve("r9t9").await), (404, "not_found".into()));

        // The human approves the other (any member with write standing may).
        let human_run = s.human.workspace(&s.ws_id()).run(run.public_id());
        let approved = human_run.approve("r1t0").await.unwrap();
        assert!(
            matches!(approved.status, TaskStatus::Running | TaskStatus::Completed),
            "{d}: {}",
            approved.status
        );

        let t0 = task_when(&run, "r1t0", |t| t.status.is_settled()).await;
        assert_eq!(t0.status, TaskStatus::Completed, "{d}");
        assert!(t0.rest.contains_key("approval"), "{d}: {:?}", t0.rest);
        let ended = run.wait_until(RunStatus::is_terminal).await.unwrap();
        assert_eq!(ended.status, RunStatus::Completed, "{d}");
        assert!(ws.approvals(&Page::first()).await.unwrap().approvals.is_empty());
        assert_eq!(refusal(run.deny("r1t0", None).await), (409, "not_adjudicable".into()));
    }
}
