//! The memory family end to end on both engines (kernel-tools.md §8–§9, declarations.md §8,
//! §11): scripted runs call the memory tools in consecutive rounds, and every result word and
//! bound is checked on the settled rows; skill documents put through the door reach the
//! assembly, the round's skills block and `skill`.

mod common;

use common::{World, text_of, world};

use nexus_kernel::MemberPrincipal;
use nexus_kernel::declarations::AssemblyPreview;
use nexus_kernel::memory::door::{MemoryQuery, PutDocumentRequest};
use nexus_store::testing::engines;
use nexus_store::{RunStatus, TaskKind, TaskRow};
use serde_json::{Value, json};
use uuid::Uuid;

const MEMORY_TOOLS: [&str; 6] = [
    "nexus.memory.read",
    "nexus.memory.write",
    "nexus.memory.edit",
    "nexus.memory.ls",
    "nexus.memory.grep",
    "nexus.memory.delete",
];

impl World {
    /// Creates a run of one model step with the memory tools (and `extra` kernel tools).
    async fn memory_run(&self, script: &str, extra: &[&str]) -> Uuid {
        let mut tools: Vec<&str> = MEMORY_TOOLS.to_vec();
        tools.extend_from_slice(extra);
        let run = json!({"approval_mode": "bypass", "steps": [{"model": {
            "prompt": "Use memory.", "model": format!("scripted/{script}"), "kernel_tools": tools}}]});
        self.create(run).await.0
    }

    async fn start_and_drive(&self, id: Uuid) {
        self.kernel.runs().start_run(&self.agent, self.ws, id).await.unwrap();
        self.drive().await;
    }

    /// Runs one call per round, in order, and returns each call's settled row.
    async fn calls(&self, name: &str, calls: &[(&str, Value)], extra: &[&str]) -> Vec<TaskRow> {
        let mut tools: Vec<&str> = MEMORY_TOOLS.to_vec();
        tools.extend_from_slice(extra);
        self.call_rounds(name, "Use memory.", &tools, calls).await
    }

    async fn put(&self, who: &MemberPrincipal, body: Value) -> Value {
        let request = PutDocumentRequest::parse(&body).unwrap();
        let reply = self
            .kernel
            .memory()
            .memory_put_document(who, self.ws, Ok(request))
            .await
            .unwrap();
        serde_json::to_value(reply).unwrap()
    }
}

/// The door's query naming one document.
fn doc_at(path: &str) -> MemoryQuery<'_> {
    MemoryQuery {
        path: Some(path),
        ..MemoryQuery::default()
    }
}

/// Asserts a row is an error result with `word` and a sentence naming `names`.
fn assert_word(t: &TaskRow, word: &str, names: &str) {
    let text = text_of(t);
    assert!(t.is_error, "{} should be an error: {text}", t.key);
    assert!(text.starts_with(&format!("{word}: ")), "{} wants {word}: {text}", t.key);
    assert!(text.contains(names), "{}: {text:?} should name {names:?}", t.key);
    assert!(!text.contains('\n'), "one line: {text:?}");
}

fn assert_ok(t: &TaskRow, want: &str) {
    let text = text_of(t);
    assert!(!t.is_error, "{} should succeed: {text}", t.key);
    assert_eq!(text, want, "{}", t.key);
}

#[tokio::test]
async fn memory_write_then_read_in_consecutive_rounds() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "wr",
            &[
                json!({"tool_calls": [{"id": "w1", "name": "memory_write",
                    "input": {"path": "workspace/notes/deploy.md", "content": "step one\nstep two\n"}}]}),
                json!({"tool_calls": [{"id": "r1", "name": "memory_read", "input": {"path": "workspace/notes/deploy.md"}}],
                       "expect": {"last_result": {"call_id": "w1", "is_error": false,
                                  "contains": "Created workspace/notes/deploy.md (18 bytes)."}}}),
                json!({"text": "Read it.", "expect": {"last_result": {"call_id": "r1", "is_error": false,
                                  "contains": "step one\nstep two"}}}),
            ],
        );
        let id = w.memory_run("wr", &[]).await;
        w.start_and_drive(id).await;
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed, "on {}", w.dialect);
        let tools: Vec<TaskRow> = w
            .tasks(id)
            .await
            .into_iter()
            .filter(|t| t.kind == TaskKind::Tool)
            .collect();
        assert_ok(&tools[0], "Created workspace/notes/deploy.md (18 bytes).");
        assert_ok(&tools[1], "step one\nstep two\n");
        // The member door sees the model's write, version 1.
        let doc = w
            .kernel
            .memory()
            .memory_read_document(&w.human, w.ws, &doc_at("workspace/notes/deploy.md"))
            .await
            .unwrap();
        assert_eq!(doc.document.content, "step one\nstep two\n");
        assert_eq!(doc.document.lock_version, 1);
    }
}

#[tokio::test]
async fn every_word_of_the_memory_tools() {
    for ts in engines().await {
        let w = world(ts).await;
        w.put(
            &w.human,
            json!({"path": "workspace/skills/style", "content": "Write plainly.\n", "description": "House style."}),
        )
        .await;
        let doc = "alpha\nbeta\ngamma\n";
        let big = format!("HEAD{}", "x".repeat(40_000));
        let a = "workspace/notes/a.md";
        let calls: Vec<(&str, Value)> = vec![
            ("memory_write", json!({"path": a, "content": doc})),
            ("memory_write", json!({"path": a, "content": doc})),
            ("memory_read", json!({"path": a, "offset": 2, "limit": 1})),
            ("memory_read", json!({"path": a, "offset": 3})),
            ("memory_read", json!({"path": "notes"})),
            ("memory_read", json!({"path": "team/x"})),
            ("memory_read", json!({"path": "conversation/x"})),
            ("memory_read", json!({"path": "workspace/../x"})),
            ("memory_read", json!({"path": "workspace/nope"})),
            ("memory_read", json!({})),
            ("memory_read", json!({"path": a, "offset": 0})),
            ("memory_write", json!({"path": "workspace/skills/x", "content": "y"})),
            (
                "memory_edit",
                json!({"path": "workspace/skills/style", "old_text": "W", "new_text": "w"}),
            ),
            ("memory_edit", json!({"path": a, "old_text": "zzz", "new_text": "q"})),
            ("memory_edit", json!({"path": a, "old_text": "a", "new_text": "q"})),
            ("memory_edit", json!({"path": a, "old_text": "", "new_text": "q"})),
            (
                "memory_edit",
                json!({"path": "workspace/none", "old_text": "a", "new_text": "q"}),
            ),
            (
                "memory_edit",
                json!({"path": a, "old_text": "beta", "new_text": "BETA!"}),
            ),
            ("memory_write", json!({"path": "workspace/big", "content": big})),
            (
                "memory_edit",
                json!({"path": "workspace/big", "old_text": "HEAD", "new_text": "y".repeat(30_000)}),
            ),
            ("memory_ls", json!({})),
            ("memory_ls", json!({"path": "workspace/skills/"})),
            ("memory_ls", json!({"path": "user/"})),
            ("memory_ls", json!({"path": "bogus/"})),
            ("memory_grep", json!({"pattern": "BETA"})),
            (
                "memory_grep",
                json!({"pattern": "beta", "ignore_case": true, "path": "workspace/notes"}),
            ),
            (
                "memory_grep",
                json!({"pattern": "a", "limit": 1, "path": "workspace/notes/"}),
            ),
            ("memory_grep", json!({"pattern": "("})),
            ("memory_grep", json!({"pattern": r"\w{1000}\w{1000}"})),
            ("memory_grep", json!({"pattern": "a", "limit": 0})),
            ("memory_grep", json!({"pattern": "a", "limit": 1001})),
            ("memory_grep", json!({"pattern": "nothing-here"})),
            ("memory_read", json!({"path": "workspace/skills/style"})),
            ("memory_delete", json!({"path": "workspace/skills/style"})),
            ("memory_delete", json!({"path": a})),
            ("memory_delete", json!({"path": a})),
            ("memory_write", json!({"path": "user/me.md", "content": "mine"})),
        ];
        let t = w.calls("words", &calls, &[]).await;
        assert_ok(&t[0], "Created workspace/notes/a.md (17 bytes).");
        assert_ok(&t[1], "Replaced workspace/notes/a.md (17 bytes).");
        assert_ok(&t[2], "beta\n(1 more lines remain; continue with offset=3)");
        assert_ok(&t[3], "gamma\n");
        assert_word(&t[4], "memory_path_invalid", "\"notes\"");
        assert_word(&t[5], "memory_path_invalid", "\"team\"");
        assert_word(&t[6], "memory_path_invalid", "conversation/x");
        assert_word(&t[7], "memory_path_invalid", "\"..\"");
        assert_word(&t[8], "memory_not_found", "workspace/nope");
        assert_word(&t[9], "parameter_invalid", "`path`");
        let offset = text_of(&t[10]);
        // Either the schema refuses it at birth or the handler does; here the handler answers.
        assert!(
            offset.starts_with("parameter_invalid: ") && offset.contains("`offset`"),
            "{offset}"
        );
        assert_word(&t[11], "memory_reserved_prefix", "workspace/skills/x");
        assert_word(&t[12], "memory_reserved_prefix", "workspace/skills/style");
        assert_word(&t[13], "memory_edit_no_match", "zzz");
        assert_word(&t[14], "memory_edit_ambiguous", "\"a\"");
        assert_word(&t[15], "parameter_invalid", "old_text");
        assert_word(&t[16], "memory_not_found", "workspace/none");
        assert_ok(&t[17], "Edited workspace/notes/a.md (18 bytes).");
        assert_ok(&t[18], "Created workspace/big (40004 bytes).");
        assert_word(&t[19], "memory_document_too_large", "workspace/big");
        assert_ok(
            &t[20],
            "workspace/big\t40004\nworkspace/notes/a.md\t18\nworkspace/skills/style\t15\tHouse style.",
        );
        assert_ok(&t[21], "workspace/skills/style\t15\tHouse style.");
        assert_ok(&t[22], "No documents under user/.");
        assert_word(&t[23], "memory_path_invalid", "bogus/");
        assert_ok(&t[24], "workspace/notes/a.md:2: BETA!");
        assert_ok(&t[25], "workspace/notes/a.md:2: BETA!");
        let limited = text_of(&t[26]);
        assert!(limited.starts_with("workspace/notes/a.md:1: alpha\n("), "{limited}");
        assert!(limited.contains("(1 more matching lines not shown"), "{limited}");
        assert_word(&t[27], "memory_pattern_invalid", "\"(\"");
        assert_word(&t[28], "memory_pattern_invalid", r"\\w{1000}");
        for i in [29, 30] {
            let text = text_of(&t[i]);
            assert!(
                t[i].is_error && text.starts_with("parameter_invalid: ") && text.contains("`limit`"),
                "{text}"
            );
        }
        assert_ok(&t[31], "No lines match \"nothing-here\".");
        assert_ok(&t[32], "Write plainly.\n");
        assert_word(&t[33], "memory_reserved_prefix", "workspace/skills/style");
        assert_ok(&t[34], "Deleted workspace/notes/a.md (18 bytes).");
        assert_word(&t[35], "memory_not_found", "workspace/notes/a.md");
        assert_ok(&t[36], "Created user/me.md (4 bytes).");
        // user/ is the controlling human of the answering agent: the human sees it.
        let mine = w
            .kernel
            .memory()
            .memory_read_document(&w.human, w.ws, &doc_at("user/me.md"))
            .await
            .unwrap();
        assert_eq!(mine.document.content, "mine", "on {}", w.dialect);
    }
}

#[tokio::test]
async fn scope_bounds_refuse_with_memory_full_and_ls_leaves_lines_out() {
    for ts in engines().await {
        let w = world(ts).await;
        for i in 0..64 {
            w.put(&w.human, json!({"path": format!("user/n{i:02}"), "content": "x"}))
                .await;
        }
        for i in 0..1024 {
            w.put(&w.agent, json!({"path": format!("workspace/d{i:04}"), "content": "x"}))
                .await;
        }
        let calls: Vec<(&str, Value)> = vec![
            ("memory_write", json!({"path": "user/one-more", "content": "x"})),
            ("memory_write", json!({"path": "user/n00", "content": "replaced"})),
            ("memory_write", json!({"path": "workspace/one-more", "content": "x"})),
            (
                "memory_write",
                json!({"path": "workspace/d0000", "content": "replaced"}),
            ),
            ("memory_ls", json!({"path": "workspace"})),
        ];
        let t = w.calls("full", &calls, &[]).await;
        assert_word(&t[0], "memory_full", "64");
        assert_ok(&t[1], "Replaced user/n00 (8 bytes).");
        assert_word(&t[2], "memory_full", "1024");
        assert_ok(&t[3], "Replaced workspace/d0000 (8 bytes).");
        let ls = text_of(&t[4]);
        let lines: Vec<&str> = ls.lines().collect();
        assert_eq!(lines.len(), 501, "on {}", w.dialect);
        assert_eq!(lines[0], "workspace/d0000\t8");
        assert_eq!(lines[499], "workspace/d0499\t1");
        assert!(
            lines[500].starts_with("(524 more documents not shown"),
            "{}",
            lines[500]
        );
        // The door refuses the 65th person document with 422 memory_full too.
        let err = w
            .kernel
            .memory()
            .memory_put_document(
                &w.agent,
                w.ws,
                PutDocumentRequest::parse(&json!({"path": "user/extra", "content": "x"})),
            )
            .await
            .unwrap_err();
        assert_eq!(err.reason.as_deref(), Some("memory_full"));
    }
}

#[tokio::test]
async fn skill_documents_reach_the_catalog_the_skills_block_and_skill() {
    for ts in engines().await {
        let w = world(ts).await;
        w.put(
            &w.human,
            json!({"path": "workspace/skills/style-guide", "content": "# Style\nWrite plainly.\n",
                   "description": "House writing rules."}),
        )
        .await;
        w.put(
            &w.agent,
            json!({"path": "user/skills/notes", "content": "Mine.", "description": "My notes."}),
        )
        .await;
        // Shadowed by the workspace document of the same name.
        w.put(
            &w.agent,
            json!({"path": "user/skills/style-guide", "content": "Not this.", "description": "Shadowed."}),
        )
        .await;

        // The assembly preview (the account's default workspace).
        let preview = w
            .kernel
            .admin()
            .assembly_preview(
                &w.agent,
                AssemblyPreview::parse(&json!({"default_runner_executor_public_id": null,
                        "configuration": {"kernel_tools": ["nexus.skill.load"]}})),
            )
            .await
            .unwrap();
        let preview = serde_json::to_value(preview).unwrap();
        assert_eq!(
            preview["skills"],
            json!([
                {"callable": "skill", "name": "style-guide", "description": "House writing rules.", "source": "workspace"},
                {"callable": "skill", "name": "notes", "description": "My notes.", "source": "user"},
            ]),
            "on {}",
            w.dialect
        );

        w.script(
            "skills",
            &[
                json!({"tool_calls": [{"id": "k1", "name": "skill", "input": {"name": "style-guide"}}],
                       "expect": {"system_contains": "- skill / style-guide: House writing rules."}}),
                json!({"tool_calls": [{"id": "k2", "name": "skill", "input": {"name": "notes"}}],
                       "expect": {"last_result": {"call_id": "k1", "contains": "Write plainly."}}}),
                json!({"tool_calls": [{"id": "k3", "name": "skill", "input": {"name": "nope"}}]}),
                json!({"text": "Loaded."}),
            ],
        );
        let id = w.memory_run("skills", &["nexus.skill.load"]).await;
        // A document removed after acceptance is skill_unknown at load.
        w.kernel
            .memory()
            .memory_delete_document(&w.agent, w.ws, &doc_at("user/skills/notes"))
            .await
            .unwrap();
        w.start_and_drive(id).await;
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed, "on {}", w.dialect);
        let tasks = w.tasks(id).await;
        let model = tasks.iter().find(|t| t.key == "s1-model-1").unwrap();
        let frozen: Value = serde_json::from_str(model.frozen_context.as_deref().unwrap()).unwrap();
        assert_eq!(frozen["memory"]["workspace_public_id"], json!(w.ws));
        assert_eq!(frozen["memory"]["user_public_id"], json!(w.human.member.public_id));
        assert_eq!(frozen["memory"]["conversation_public_id"], Value::Null);
        let tools: Vec<&TaskRow> = tasks.iter().filter(|t| t.kind == TaskKind::Tool).collect();
        assert_ok(tools[0], "# Style\nWrite plainly.\n");
        assert_word(tools[1], "skill_unknown", "\"notes\"");
        assert_word(tools[2], "skill_unknown", "\"nope\"");
    }
}
