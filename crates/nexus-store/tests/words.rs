//! The stored words of [`RunStatus`], [`TaskStatus`], [`TaskKind`] and the other fixed sets
//! (approval mode, origin, failure policy, visibility, edge kind, executor status) against the
//! tables, on every available engine: the CHECK constraints accept exactly the enums' words and
//! refuse any other, and a row that holds another word anyway (written with the constraints
//! off) reads back as a corrupt row, never a panic. So does a rule list that does not parse.
//! A job whose kind does not read is answered apart by the dequeue, not as its failure.

use nexus_store::testing::{self, TestStore};
use nexus_store::*;
use sqlx::{Connection, PgConnection};

const NOW: i64 = 1_700_000_000_000;

/// A connection to the test store's database beside the store's own.
enum Raw {
    Sqlite(rusqlite::Connection),
    Postgres(PgConnection),
}

impl Raw {
    async fn open(ts: &TestStore) -> Raw {
        match &ts.base_url {
            None => Raw::Sqlite(rusqlite::Connection::open(ts.sqlite_path().unwrap()).unwrap()),
            Some(base) => {
                let mut c = PgConnection::connect(base).await.unwrap();
                let schema = ts.schema.as_deref().unwrap();
                sqlx::query(sqlx::AssertSqlSafe(format!("SET search_path TO \"{schema}\"")))
                    .execute(&mut c)
                    .await
                    .unwrap();
                Raw::Postgres(c)
            }
        }
    }

    /// Sets `column` of row `id` of `table` to `word`; false when the database refuses.
    async fn set(&mut self, table: &str, column: &str, id: i64, word: &str) -> bool {
        self.set_where(table, column, "id", id, word).await
    }

    /// Sets `column` of the rows of `table` where `key` is `id` to `word`; false when the
    /// database refuses.
    async fn set_where(&mut self, table: &str, column: &str, key: &str, id: i64, word: &str) -> bool {
        let sql = format!("UPDATE {table} SET {column} = '{word}' WHERE {key} = {id}");
        match self {
            Raw::Sqlite(c) => c.execute(&sql, []).is_ok(),
            Raw::Postgres(c) => sqlx::query(sqlx::AssertSqlSafe(sql)).execute(c).await.is_ok(),
        }
    }

    /// Switches the CHECK constraints of `runs`, `tasks`, `task_edges`, `executors` and `turns` off
    /// (PostgreSQL: drops them; the schema is the test's own).
    async fn checks_off(&mut self) {
        match self {
            Raw::Sqlite(c) => c.execute_batch("PRAGMA ignore_check_constraints = ON").unwrap(),
            Raw::Postgres(c) => {
                let checks: Vec<(String, String)> = sqlx::query_as(
                    "SELECT t.relname::text, k.conname::text FROM pg_constraint k \
                     JOIN pg_class t ON t.oid = k.conrelid \
                     WHERE k.contype = 'c' AND t.relname IN ('runs', 'tasks', 'task_edges', 'executors', 'turns') \
                     AND t.relnamespace = current_schema()::regnamespace",
                )
                .fetch_all(&mut *c)
                .await
                .unwrap();
                assert!(!checks.is_empty());
                for (table, name) in checks {
                    let sql = format!("ALTER TABLE {table} DROP CONSTRAINT \"{name}\"");
                    sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *c).await.unwrap();
                }
            }
        }
    }
}

/// A run and one task row in it.
async fn run_and_task(s: &Store) -> (RunRow, TaskRow) {
    let (_, ws, member) = testing::seed_member(s, NOW).await;
    let mut tx = s.begin().await.unwrap();
    let run = tx
        .insert_run(testing::new_run(ws.id, member.id, RunStatus::Running, NOW))
        .await
        .unwrap();
    let task = tx
        .insert_task(NewTask {
            run_id: run.id,
            key: "t".into(),
            kind: TaskKind::Tool,
            status: TaskStatus::Waiting,
            generation: 1,
            origin: Origin::Author,
            on_failure: OnFailure::Propagate,
            visibility: Visibility::Collapsed,
            tool_name: Some("read_file".into()),
            tool_input: Some("{}".into()),
            created_at: NOW,
            ..Default::default()
        })
        .await
        .unwrap();
    tx.commit().await.unwrap();
    (run, task)
}

#[tokio::test]
async fn the_tables_take_exactly_the_enums_words() {
    for ts in testing::engines().await {
        let s = &ts.store;
        let (run, task) = run_and_task(s).await;
        let mut raw = Raw::open(&ts).await;
        let d = ts.dialect;
        for &status in TaskStatus::ALL {
            assert!(
                raw.set("tasks", "status", task.id, status.as_str()).await,
                "{status} on {d}"
            );
            assert_eq!(s.task_by_id(task.id).await.unwrap().unwrap().status, status, "{d}");
        }
        for &kind in TaskKind::ALL {
            assert!(raw.set("tasks", "kind", task.id, kind.as_str()).await, "{kind} on {d}");
            assert_eq!(s.task_by_id(task.id).await.unwrap().unwrap().kind, kind, "{d}");
        }
        for &status in RunStatus::ALL {
            assert!(
                raw.set("runs", "status", run.id, status.as_str()).await,
                "{status} on {d}"
            );
            assert_eq!(s.run_by_id(run.id).await.unwrap().unwrap().status, status, "{d}");
        }
        for (table, column, id) in [
            ("tasks", "status", task.id),
            ("tasks", "kind", task.id),
            ("runs", "status", run.id),
        ] {
            for word in ["bogus", "", "Waiting", "model"] {
                assert!(
                    !raw.set(table, column, id, word).await,
                    "{table}.{column} {word:?} is refused on {d}"
                );
            }
        }
    }
}

#[tokio::test]
async fn an_unknown_stored_word_reads_back_as_a_corrupt_row() {
    for ts in testing::engines().await {
        let s = &ts.store;
        let d = ts.dialect;
        let (run, task) = run_and_task(s).await;
        let mut raw = Raw::open(&ts).await;
        raw.checks_off().await;
        let corrupt = |r: Result<Option<TaskRow>>, column: &str| match r {
            Err(StoreError::Corrupt(m)) => assert!(m.contains(column) && m.contains("bogus"), "{m} on {d}"),
            other => panic!("{column} on {d}: {other:?}"),
        };

        assert!(raw.set("tasks", "status", task.id, "bogus").await, "{d}");
        corrupt(s.task_by_id(task.id).await, "tasks.status");
        assert!(raw.set("tasks", "status", task.id, "waiting").await, "{d}");
        assert!(s.task_by_id(task.id).await.unwrap().is_some());

        assert!(raw.set("tasks", "kind", task.id, "bogus").await, "{d}");
        corrupt(s.task_by_id(task.id).await, "tasks.kind");
        assert!(matches!(
            s.begin().await.unwrap().task_frozen_head(task.id).await,
            Err(StoreError::Corrupt(_))
        ));
        assert!(raw.set("tasks", "kind", task.id, "tool_task").await, "{d}");

        assert!(raw.set("runs", "status", run.id, "bogus").await, "{d}");
        match s.run_by_id(run.id).await {
            Err(StoreError::Corrupt(m)) => assert!(m.contains("runs.status"), "{m} on {d}"),
            other => panic!("runs.status on {d}: {other:?}"),
        }
    }
}

/// Asserts `read` failed as a corrupt row naming `column`.
fn assert_corrupt<T: std::fmt::Debug>(read: Result<T>, column: &str, d: impl std::fmt::Display) {
    match read {
        Err(StoreError::Corrupt(m)) => assert!(m.contains(column), "{m} on {d}"),
        other => panic!("{column} on {d}: {other:?}"),
    }
}

/// Every further fixed-set column (and the approval rules): the CHECK constraint takes exactly
/// the enum's words, and a word no variant has, written with the constraints off, reads back as
/// a corrupt row from each read of that row.
#[tokio::test]
async fn every_fixed_set_column_reads_a_bad_word_as_a_corrupt_row() {
    for ts in testing::engines().await {
        let s = &ts.store;
        let d = ts.dialect;
        let (run, task) = run_and_task(s).await;
        let member = s.member_by_id(run.created_by_id).await.unwrap().unwrap();
        let runner = s
            .create_runner(testing::new_runner(member.account_id, member.id, NOW))
            .await
            .unwrap();
        let mut tx = s.begin().await.unwrap();
        tx.lock_run(run.id).await.unwrap();
        let dependent = tx
            .insert_task(NewTask {
                run_id: run.id,
                key: "u".into(),
                created_at: NOW,
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(tx.insert_edge(dependent.id, task.id, EdgeKind::After).await.unwrap());
        tx.commit().await.unwrap();
        let mut raw = Raw::open(&ts).await;

        // The constraints take the words.
        for &mode in &ApprovalMode::ALL {
            assert!(raw.set("runs", "approval_mode", run.id, mode.as_str()).await, "{d}");
            assert_eq!(s.run_by_id(run.id).await.unwrap().unwrap().approval_mode, mode, "{d}");
        }
        for origin in [Origin::Author, Origin::Model, Origin::Kernel] {
            assert!(raw.set("tasks", "origin", task.id, origin.as_str()).await, "{d}");
            assert_eq!(s.task_by_id(task.id).await.unwrap().unwrap().origin, origin, "{d}");
        }
        for &on_failure in OnFailure::ALL {
            assert!(
                raw.set("tasks", "on_failure", task.id, on_failure.as_str()).await,
                "{d}"
            );
            assert_eq!(
                s.task_by_id(task.id).await.unwrap().unwrap().on_failure,
                on_failure,
                "{d}"
            );
        }
        for &visibility in Visibility::ALL {
            assert!(
                raw.set("tasks", "visibility", task.id, visibility.as_str()).await,
                "{d}"
            );
            assert_eq!(
                s.task_by_id(task.id).await.unwrap().unwrap().visibility,
                visibility,
                "{d}"
            );
        }
        for &kind in EdgeKind::ALL {
            assert!(
                raw.set_where("task_edges", "kind", "task_id", dependent.id, kind.as_str())
                    .await,
                "{d}"
            );
            assert_eq!(s.edges_of_run(run.id).await.unwrap()[0].kind, kind, "{d}");
        }
        for &status in ExecutorStatus::ALL {
            assert!(raw.set("executors", "status", runner.id, status.as_str()).await, "{d}");
            assert_eq!(
                s.executor_by_id(runner.id).await.unwrap().unwrap().status,
                status,
                "{d}"
            );
        }
        let columns = [
            ("runs", "approval_mode", "id", run.id, "bypass"),
            ("tasks", "origin", "id", task.id, "author"),
            ("tasks", "on_failure", "id", task.id, "propagate"),
            ("tasks", "visibility", "id", task.id, "visible"),
            ("task_edges", "kind", "task_id", dependent.id, "after"),
            ("executors", "status", "id", runner.id, "active"),
        ];
        for (table, column, key, id, _) in columns {
            assert!(
                !raw.set_where(table, column, key, id, "bogus").await,
                "{table}.{column} on {d}"
            );
        }

        // A bad word reads back as a corrupt row, from every read of the row.
        raw.checks_off().await;
        for (table, column, key, id, good) in columns {
            assert!(raw.set_where(table, column, key, id, "bogus").await, "{d}");
            let name = format!("{table}.{column}");
            match table {
                "runs" => {
                    assert_corrupt(s.run_by_id(run.id).await, &name, d);
                    let mut tx = s.begin().await.unwrap();
                    assert_corrupt(tx.lock_run(run.id).await, &name, d);
                }
                "tasks" => {
                    assert_corrupt(s.task_by_id(task.id).await, &name, d);
                    assert_corrupt(s.tasks_of_run(run.id, 0, 10).await, &name, d);
                }
                "task_edges" => assert_corrupt(s.edges_of_run(run.id).await, &name, d),
                _ => assert_corrupt(s.executor_by_id(runner.id).await, &name, d),
            }
            assert!(raw.set_where(table, column, key, id, good).await, "{d}");
        }
        assert!(s.run_by_id(run.id).await.unwrap().is_some());

        // A rule list that does not parse (no constraint guards the column) is corrupt too:
        // the gate never reads it as no rules.
        for bad in ["not json", "{}", r#"[{"tool":"x","verdict":"maybe"}]"#, "null"] {
            assert!(raw.set("runs", "approval_rules", run.id, bad).await, "{d}");
            assert_corrupt(s.run_by_id(run.id).await, "runs.approval_rules", d);
        }
        let good = r#"[{"tool":"read_*","verdict":"allow"}]"#;
        assert!(raw.set("runs", "approval_rules", run.id, good).await, "{d}");
        let read = s.run_by_id(run.id).await.unwrap().unwrap();
        let rules = read.approval_rules.unwrap();
        assert_eq!((rules.as_str(), rules.rules().len()), (good, 1), "{d}");
    }
}

/// The fixed-set columns no CHECK constraint guards (a task's failure resolution and addressed
/// role, a member's role, a run's hosting, the event types of runs and conversations): each enum's words read
/// back as themselves, and any other word as a corrupt row naming the column, never a default.
#[tokio::test]
async fn every_unguarded_word_column_reads_a_bad_word_as_a_corrupt_row() {
    for ts in testing::engines().await {
        let s = &ts.store;
        let d = ts.dialect;
        let (run, task) = run_and_task(s).await;
        let member = s.member_by_id(run.created_by_id).await.unwrap().unwrap();
        let ws = s.workspace_by_id(run.workspace_id).await.unwrap().unwrap();
        let mut tx = s.begin().await.unwrap();
        tx.lock_run(run.id).await.unwrap();
        tx.append_event(run.id, EventKind::TasksAppended, None, &serde_json::json!({}), NOW)
            .await
            .unwrap();
        let conversation = tx
            .insert_conversation(NewConversation {
                public_id: uuid::Uuid::now_v7(),
                workspace_id: ws.id,
                created_by_id: member.id,
                answering_member_id: member.id,
                default_runner_id: None,
                title: None,
                parent_id: None,
                spawn_task_id: None,
                label: None,
                reply_route: None,
                created_at: NOW,
            })
            .await
            .unwrap();
        tx.append_conversation_event(conversation.id, ConversationEventKind::TurnStarted, NOW, "{}")
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let mut raw = Raw::open(&ts).await;
        let task_word = |read: Result<Option<TaskRow>>| read.unwrap().unwrap();

        // The words read back as themselves.
        for &r in FailureResolution::ALL {
            assert!(raw.set("tasks", "failure_resolution", task.id, r.as_str()).await, "{d}");
            assert_eq!(
                task_word(s.task_by_id(task.id).await).failure_resolution,
                Some(r),
                "{d}"
            );
        }
        for &k in ExecutorKind::ALL {
            assert!(raw.set("tasks", "addressed_role", task.id, k.as_str()).await, "{d}");
            assert_eq!(task_word(s.task_by_id(task.id).await).addressed_role, Some(k), "{d}");
        }
        for &role in MemberRole::ALL {
            assert!(raw.set("members", "role", member.id, role.as_str()).await, "{d}");
            assert_eq!(s.member_by_id(member.id).await.unwrap().unwrap().role, role, "{d}");
        }
        for &kind in EventKind::ALL {
            assert!(
                raw.set_where("events", "type", "run_id", run.id, kind.as_str()).await,
                "{d}"
            );
            assert_eq!(s.events_after(run.id, 0, 10).await.unwrap()[0].kind, kind, "{d}");
        }
        for &kind in ConversationEventKind::ALL {
            let (table, id) = ("conversation_events", conversation.id);
            assert!(
                raw.set_where(table, "type", "conversation_id", id, kind.as_str()).await,
                "{d}"
            );
            assert_eq!(s.conversation_events(id, 0, 10).await.unwrap()[0].kind, kind, "{d}");
        }

        let hosted = Hosting::Conversation {
            conversation_public_id: conversation.public_id,
            turn_public_id: uuid::Uuid::now_v7(),
        };
        assert!(raw.set("runs", "hosting", run.id, &hosted.to_text()).await, "{d}");
        assert_eq!(s.run_by_id(run.id).await.unwrap().unwrap().hosting, hosted, "{d}");

        // Any other word is a corrupt row, from every read of the row (a hosting that does not
        // read is never taken for "standalone").
        let columns = [
            ("tasks", "failure_resolution", "id", task.id, "abandoned"),
            ("tasks", "addressed_role", "id", task.id, "runner"),
            ("members", "role", "id", member.id, "admin"),
            ("runs", "hosting", "id", run.id, r#"{"kind":"standalone"}"#),
            ("events", "type", "run_id", run.id, "tasks_appended"),
            (
                "conversation_events",
                "type",
                "conversation_id",
                conversation.id,
                "turn_started",
            ),
        ];
        for (table, column, key, id, good) in columns {
            assert!(raw.set_where(table, column, key, id, "bogus").await, "{d}");
            let name = format!("{table}.{column}");
            match table {
                "tasks" => {
                    assert_corrupt(s.task_by_id(task.id).await, &name, d);
                    assert_corrupt(s.tasks_of_run(run.id, 0, 10).await, &name, d);
                }
                "members" => assert_corrupt(s.member_by_id(member.id).await, &name, d),
                "runs" => assert_corrupt(s.run_by_id(run.id).await, &name, d),
                "events" => assert_corrupt(s.events_after(run.id, 0, 10).await, &name, d),
                _ => assert_corrupt(s.conversation_events(conversation.id, 0, 10).await, &name, d),
            }
            assert!(raw.set_where(table, column, key, id, good).await, "{d}");
        }
        assert_eq!(
            task_word(s.task_by_id(task.id).await).addressed_role,
            Some(ExecutorKind::Runner),
            "{d}"
        );
    }
}

/// A conversation with one input, a completed user turn, and a job of `run`.
async fn conversation_input_turn_and_job(s: &Store, run: &RunRow) -> (ConversationRow, InputRow, i64) {
    let mut tx = s.begin().await.unwrap();
    let conversation = tx
        .insert_conversation(NewConversation {
            public_id: uuid::Uuid::now_v7(),
            workspace_id: run.workspace_id,
            created_by_id: run.created_by_id,
            answering_member_id: run.created_by_id,
            default_runner_id: None,
            title: None,
            parent_id: None,
            spawn_task_id: None,
            label: None,
            reply_route: None,
            created_at: NOW,
        })
        .await
        .unwrap();
    let input = NewInput {
        public_id: uuid::Uuid::now_v7(),
        conversation_id: conversation.id,
        kind: InputKind::TaskResult,
        delivery_mode: DeliveryMode::Queue,
        content: Some("mail".into()),
        attachments: "[]".into(),
        attachment_upload_ids: vec![],
        model: None,
        tool_names: None,
        approval_mode: Some(ApprovalMode::Rules),
        created_by_id: None,
        deliver_at: None,
        created_at: NOW,
        state: InputState::Pending,
        turn_id: None,
        wake: Some(Wake::Passive),
        mail_key: Some("k".into()),
    };
    let InputInsert::Inserted(input) = tx.insert_input(input, 10).await.unwrap() else {
        panic!("the input is queued");
    };
    tx.insert_turn(NewTurn {
        public_id: uuid::Uuid::now_v7(),
        conversation_id: conversation.id,
        role: TurnRole::User,
        status: TurnStatus::Completed,
        input_id: Some(input.id),
        run_id: None,
        content: Some("hello".into()),
        error_key: None,
        created_at: NOW,
    })
    .await
    .unwrap();
    let job = tx
        .insert_job(NewJob {
            kind: JobKind::ModelCall,
            run_id: run.id,
            task_id: None,
            generation: 1,
            available_at: NOW,
        })
        .await
        .unwrap();
    tx.commit().await.unwrap();
    (conversation, input, job)
}

/// An input's approval mode and wake, a turn's role as the conversation summary reads it, and a
/// job's kind: each enum's words read back as themselves, any other word as a corrupt row naming
/// the column. The dequeue answers a job whose kind does not read apart, with its id and run,
/// and leases the jobs beside it as usual.
#[tokio::test]
async fn input_turn_and_job_words_read_a_bad_word_as_a_corrupt_row() {
    for ts in testing::engines().await {
        let s = &ts.store;
        let d = ts.dialect;
        let (run, _) = run_and_task(s).await;
        let (conversation, input, job) = conversation_input_turn_and_job(s, &run).await;
        let inputs = || s.conversation_inputs(conversation.id, 0, 10);
        let read = inputs().await.unwrap();
        assert_eq!(read, std::slice::from_ref(&input), "{d}");
        assert_eq!(
            (input.approval_mode, input.wake),
            (Some(ApprovalMode::Rules), Some(Wake::Passive))
        );
        let mut raw = Raw::open(&ts).await;

        // The words read back as themselves.
        for mode in ApprovalMode::ALL {
            let table = "conversation_inputs";
            assert!(raw.set(table, "approval_mode", input.id, mode.as_str()).await, "{d}");
            assert_eq!(inputs().await.unwrap()[0].approval_mode, Some(mode), "{d}");
        }
        for &wake in Wake::ALL {
            assert!(
                raw.set("conversation_inputs", "wake", input.id, wake.as_str()).await,
                "{d}"
            );
            assert_eq!(inputs().await.unwrap()[0].wake, Some(wake), "{d}");
        }
        for role in [TurnRole::User, TurnRole::Assistant] {
            let (table, id) = ("turns", conversation.id);
            assert!(
                raw.set_where(table, "role", "conversation_id", id, role.as_str()).await,
                "{d}"
            );
            let summary = s.conversation_summaries(&[id]).await.unwrap();
            assert_eq!(summary[0].last_role, Some(role), "{d}");
        }
        for &kind in JobKind::ALL {
            assert!(raw.set("jobs", "kind", job, kind.as_str()).await, "{d}");
            assert_eq!(s.job_by_id(job).await.unwrap().unwrap().kind, kind, "{d}");
        }
        let key = ("turns", "role", "conversation_id", conversation.id);
        assert!(
            !raw.set_where(key.0, key.1, key.2, key.3, "bogus").await,
            "turns.role is guarded on {d}"
        );

        // Any other word is a corrupt row.
        raw.checks_off().await;
        for (table, column, good) in [
            ("conversation_inputs", "approval_mode", "ask"),
            ("conversation_inputs", "wake", "auto"),
        ] {
            assert!(raw.set(table, column, input.id, "bogus").await, "{d}");
            assert_corrupt(inputs().await, &format!("{table}.{column}"), d);
            assert!(raw.set(table, column, input.id, good).await, "{d}");
        }
        assert!(raw.set_where(key.0, key.1, key.2, key.3, "bogus").await, "{d}");
        assert_corrupt(s.conversation_summaries(&[conversation.id]).await, "turns.role", d);
        assert!(raw.set_where(key.0, key.1, key.2, key.3, "user").await, "{d}");
        assert_eq!(inputs().await.unwrap().len(), 1, "{d}");

        // A job whose kind does not read: its own read is corrupt, and the dequeue leases it
        // apart from the job beside it instead of failing.
        let mut tx = s.begin().await.unwrap();
        let readable = tx
            .insert_job(NewJob {
                kind: JobKind::KernelTool,
                run_id: run.id,
                task_id: None,
                generation: 1,
                available_at: NOW,
            })
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert!(raw.set("jobs", "kind", job, "bogus").await, "{d}");
        assert_corrupt(s.job_by_id(job).await, "jobs.kind", d);
        let leased = s.dequeue_jobs("node", NOW, 1_000, 10).await.unwrap();
        assert_eq!(leased.len(), 2, "{d}");
        assert_eq!(
            leased.jobs.iter().map(|j| (j.id, j.kind)).collect::<Vec<_>>(),
            [(readable, JobKind::KernelTool)],
            "{d}"
        );
        let [bad] = &leased.unreadable[..] else {
            panic!("one unreadable job on {d}: {leased:?}");
        };
        assert_eq!((bad.id, bad.run_id), (job, run.id), "{d}");
        assert!(bad.reason.contains("jobs.kind") && bad.reason.contains("bogus"), "{d}");
    }
}
