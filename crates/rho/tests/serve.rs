//! rho's own tools inside real runs: a scripted model calls them through the served kernel,
//! rho claims over its push channel and commits; the task reads carry the results, titles and
//! checkpoints, and an escape from root is an `is_error` result the model reads.

mod common;

use common::worlds;
use serde_json::json;

#[tokio::test]
async fn a_model_reads_writes_and_edits_files_under_root_through_rho() {
    for w in worlds().await {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
        let _rho = w.rho(root.path(), "", &["read", "write", "edit", "grep"]).await;
        w.script(
            "files",
            &[
                json!({"tool_calls": [
                    {"id": "c1", "name": "read", "input": {"path": "notes.txt"}},
                    {"id": "c2", "name": "grep", "input": {"pattern": "bet"}},
                ]}),
                json!({"expect": {"last_result": {"call_id": "c2", "contains": "notes.txt"}},
                       "tool_calls": [{"id": "c3", "name": "edit",
                                       "input": {"path": "notes.txt", "old_text": "beta", "new_text": "gamma"}}]}),
                json!({"expect": {"last_result": {"call_id": "c3", "is_error": false}},
                       "tool_calls": [{"id": "c4", "name": "read", "input": {"path": "../outside.txt"}}]}),
                json!({"expect": {"last_result": {"call_id": "c4", "is_error": true, "contains": "outside"}},
                       "text": "done"}),
            ],
        );
        let (run, done) = w.model_run("files").await;
        assert_eq!(done.status.as_str(), "completed", "{}: {done:?}", w.dialect);

        let read = run.task("r1t0").await.unwrap();
        assert_eq!(read.status.as_str(), "completed", "{}", w.dialect);
        assert_eq!(
            read.output.as_deref().map(|o| o.contains("alpha\nbeta")),
            Some(true),
            "{read:?}"
        );
        assert_eq!(read.title.as_deref(), Some("read notes.txt"), "{}", w.dialect);
        assert!(read.metadata.is_none(), "{}: a read takes no checkpoint", w.dialect);

        let grep = run.task("r1t1").await.unwrap();
        assert_eq!(grep.title.as_deref(), Some("grep bet"), "{}", w.dialect);

        let edit = run.task("r2t0").await.unwrap();
        assert_eq!(edit.title.as_deref(), Some("edit notes.txt"), "{}", w.dialect);
        let checkpoint = &edit.metadata.as_ref().expect("an edit carries a checkpoint")["checkpoint"];
        assert!(
            checkpoint["hash"].as_str().is_some_and(|h| !h.is_empty()),
            "{checkpoint}"
        );
        assert!(checkpoint["dirty"].is_boolean(), "{checkpoint}");
        assert_eq!(
            std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
            "alpha\ngamma\n"
        );

        let escape = run.task("r3t0").await.unwrap();
        assert_eq!(escape.status.as_str(), "completed", "{}", w.dialect);
        assert!(escape.is_error, "{}: an escape from root is an error result", w.dialect);
    }
}

#[tokio::test]
async fn rho_announces_its_environment_and_skills() {
    for w in worlds().await {
        let root = tempfile::tempdir().unwrap();
        let skills = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(skills.path().join("deploy")).unwrap();
        std::fs::write(
            skills.path().join("deploy/SKILL.md"),
            "---\ndescription: How to deploy the service.\n---\nRun make deploy.\n",
        )
        .unwrap();
        let extra = format!("skills_dir = \"{}\"\nconcurrency = 2\n", skills.path().display());
        let _rho = w.rho(root.path(), &extra, &["skill", "start_process"]).await;
        let info = w.member.runner(&w.runner_id).await.unwrap();
        let env = &info.environment;
        for key in ["os", "arch", "hostname", "root", "shell"] {
            assert!(
                env.get(key).is_some_and(|v| v.is_string()),
                "{}: environment.{key}: {env:?}",
                w.dialect
            );
        }
        let docs = serde_json::to_value(&info.served_documents).unwrap();
        assert_eq!(
            docs,
            json!([{"name": "deploy", "description": "How to deploy the service."}]),
            "{}",
            w.dialect
        );
    }
}
