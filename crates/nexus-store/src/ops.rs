//! The run-table operations (migration 0002), written once for both engines.
//!
//! [`engine_ops!`] expands, inside each engine's `ops` module, to free functions over that
//! engine's connection type `Conn` (a pooled connection or an open transaction both deref to
//! it). The invoking module supplies `Conn`, `uid` (how the engine binds a public id: TEXT in
//! SQLite, `uuid` in PostgreSQL) and the two dialect-specific statements (the run lock and the
//! job dequeue). [`engine_methods!`] expands to the [`crate::Engine`] methods over a pool.

/// The statements whose text differs by dialect, chosen by the engine's connection type (so
/// [`engine_ops!`] keeps one definition of each operation).
pub(crate) trait Dialect {
    /// Appends an event at the run's next sequence and moves `runs.last_event_sequence` to it,
    /// in one statement: `$1` run, `$2` type, `$3` at, `$4` task key, `$5` data; returns the
    /// sequence (no row: no such run).
    const APPEND_EVENT: &'static str;
    /// The append at a sequence the unit of work already knows (`$2`), when the dialect has
    /// one: `$1` run, `$3` type, `$4` at, `$5` task key, `$6` data; the run's sequence moves
    /// with it. `None`: every append reads the sequence ([`Dialect::APPEND_EVENT`]).
    const APPEND_EVENT_AT: Option<&'static str>;
    /// A task's id, kind, declaring row and frozen digest by id (`$1`), read from the covering
    /// index `tasks_frozen_head` so no frozen bytes are touched.
    const TASK_FROZEN_HEAD: &'static str;
}

impl Dialect for rusqlite::Connection {
    const APPEND_EVENT: &'static str = crate::sql::APPEND_EVENT_SQLITE;
    const APPEND_EVENT_AT: Option<&'static str> = Some(crate::sql::APPEND_EVENT_AT_SQLITE);
    const TASK_FROZEN_HEAD: &'static str = crate::sql::TASK_FROZEN_HEAD_SQLITE;
}

impl Dialect for sqlx::PgConnection {
    const APPEND_EVENT: &'static str = crate::sql::APPEND_EVENT_PG;
    const APPEND_EVENT_AT: Option<&'static str> = None;
    const TASK_FROZEN_HEAD: &'static str = crate::sql::TASK_FROZEN_HEAD_PG;
}

macro_rules! engine_ops {
    (lock_run = $lock_run:expr, dequeue = $dequeue:expr, update_task = $update_task:ident $(,)?) => {
        #[allow(unused_imports)]
        use $crate::model::*;
        use $crate::row;
        use $crate::sql;
        use $crate::{Result, StoreError, check_text, write_error};

        // ---- runs ----

        pub(crate) async fn insert_run(c: &mut Conn, new: &NewRun) -> Result<RunRow> {
            row::check_new_run_text(new)?;
            let r = query(sql::INSERT_RUN)
                .bind(uid(new.public_id))
                .bind(new.workspace_id)
                .bind(new.created_by_id)
                .bind(new.answering_member_id)
                .bind(new.declaring_agent_id)
                .bind(&new.status)
                .bind(&new.hosting)
                .bind(&new.approval_mode)
                .bind(&new.approval_rules)
                .bind(new.default_runner_id)
                .bind(new.revision)
                .bind(new.created_at)
                .bind(new.started_at)
                .fetch_one(&mut *c)
                .await
                .map_err(write_error)?;
            row::run(&r)
        }

        /// `sequence`: also move `last_event_sequence` to it (SQLite's unit of work writes the
        /// sequences of its appends with the run's own update, [`crate::Tx::update_run`]).
        pub(crate) async fn update_run(c: &mut Conn, run: &RunRow, sequence: Option<i64>) -> Result<()> {
            row::check_run_row_text(run)?;
            let text = match sequence {
                Some(_) => sql::UPDATE_RUN_AND_SEQUENCE,
                None => sql::UPDATE_RUN,
            };
            let mut q = query(text)
                .bind(run.id)
                .bind(&run.status)
                .bind(run.deliverable_task_id)
                .bind(run.revision)
                .bind(&run.attention)
                .bind(run.started_at)
                .bind(run.ended_at)
                .bind(run.default_runner_id);
            if let Some(sequence) = sequence {
                q = q.bind(sequence);
            }
            let done = q.execute(&mut *c).await.map_err(write_error)?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(format!("run {}", run.id)));
            }
            Ok(())
        }

        pub(crate) async fn run_by_id(c: &mut Conn, id: i64) -> Result<Option<RunRow>> {
            query(sql::RUN_BY_ID)
                .bind(id)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::run(&r))
                .transpose()
        }

        pub(crate) async fn lock_run(c: &mut Conn, id: i64) -> Result<RunRow> {
            let r = query($lock_run).bind(id).fetch_optional(&mut *c).await?;
            match r {
                Some(r) => row::run(&r),
                None => Err(StoreError::NotFound(format!("run {id}"))),
            }
        }

        /// The credential with its executor's row, and the `principal_version` they were read
        /// at (`None` when the version row is missing: nothing may then be kept).
        pub(crate) async fn credential_with_executor(
            c: &mut Conn,
            public_id: uuid::Uuid,
        ) -> Result<Option<(Option<i64>, $crate::principals::Principal)>> {
            query(sql::CREDENTIAL_WITH_EXECUTOR)
                .bind(uid(public_id))
                .fetch_optional_as(&mut *c, |r| row::credential_with_executor(r))
                .await
        }

        pub(crate) async fn principal_version(c: &mut Conn) -> Result<Option<i64>> {
            Ok(query_scalar(sql::PRINCIPAL_VERSION)
                .fetch_optional(&mut *c)
                .await?)
        }

        pub(crate) async fn member_by_id(c: &mut Conn, id: i64) -> Result<Option<MemberRow>> {
            query(sql::MEMBER_BY_ID)
                .bind(id)
                .fetch_optional_as(&mut *c, |r| row::member(r))
                .await
        }

        pub(crate) async fn run_in_account(
            c: &mut Conn,
            public_id: uuid::Uuid,
            account_id: i64,
        ) -> Result<Option<RunInAccount>> {
            run_in_account_by(c, sql::RUN_IN_ACCOUNT, public_id, account_id).await
        }

        /// [`run_in_account`] through `statement`, a `run_in_account_select!` text.
        pub(crate) async fn run_in_account_by(
            c: &mut Conn,
            statement: &'static str,
            public_id: uuid::Uuid,
            account_id: i64,
        ) -> Result<Option<RunInAccount>> {
            use $crate::row::Columns;
            let Some(r) = query(statement)
                .bind(uid(public_id))
                .bind(account_id)
                .fetch_optional(&mut *c)
                .await?
            else {
                return Ok(None);
            };
            let Some(workspace_public_id) = r.opt_public_id("workspace_public_id")? else {
                return Ok(None);
            };
            Ok(Some(RunInAccount {
                run: row::run(&r)?,
                workspace_public_id,
                creator_standing: r
                    .opt_text("creator_standing")?
                    .map(|s| row::standing(&s))
                    .transpose()?,
            }))
        }

        pub(crate) async fn run_by_public_id(c: &mut Conn, public_id: uuid::Uuid) -> Result<Option<RunRow>> {
            query(sql::RUN_BY_PUBLIC_ID)
                .bind(uid(public_id))
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::run(&r))
                .transpose()
        }

        pub(crate) async fn runs_of_workspace(
            c: &mut Conn,
            workspace_id: i64,
            status: Option<&str>,
            after_id: i64,
            limit: i64,
        ) -> Result<Vec<RunRow>> {
            let rows = match status {
                Some(status) => {
                    if check_text(status).is_err() {
                        return Ok(Vec::new());
                    }
                    query(sql::RUNS_OF_WORKSPACE_STATUS)
                        .bind(workspace_id)
                        .bind(after_id)
                        .bind(limit)
                        .bind(status)
                        .fetch_all(&mut *c)
                        .await?
                }
                None => {
                    query(sql::RUNS_OF_WORKSPACE)
                        .bind(workspace_id)
                        .bind(after_id)
                        .bind(limit)
                        .fetch_all(&mut *c)
                        .await?
                }
            };
            rows.iter().map(row::run).collect()
        }

        // ---- events ----

        /// `known`: the run's `last_event_sequence` as this unit of work last saw it, when it
        /// did (used where the dialect has [`crate::ops::Dialect::APPEND_EVENT_AT`]).
        pub(crate) async fn append_event(
            c: &mut Conn,
            run_id: i64,
            known: Option<i64>,
            kind: &str,
            task_key: Option<&str>,
            data: &serde_json::Value,
            at: i64,
        ) -> Result<EventRow> {
            check_text(kind)?;
            if let Some(k) = task_key {
                check_text(k)?;
            }
            $crate::check_json(data)?;
            let data = serde_json::to_string(data)
                .map_err(|e| StoreError::Corrupt(format!("event data does not serialize: {e}")))?;
            check_text(&data)?;
            // One statement: the run's sequence moves and the event takes it.
            let sequence: Option<i64> = match (known, <Conn as $crate::ops::Dialect>::APPEND_EVENT_AT) {
                (Some(last), Some(text)) => {
                    query(text)
                        .bind(run_id)
                        .bind(last + 1)
                        .bind(kind)
                        .bind(at)
                        .bind(task_key)
                        .bind(&data)
                        .execute(&mut *c)
                        .await
                        .map_err(write_error)?;
                    Some(last + 1)
                }
                _ => query_scalar(<Conn as $crate::ops::Dialect>::APPEND_EVENT)
                    .bind(run_id)
                    .bind(kind)
                    .bind(at)
                    .bind(task_key)
                    .bind(&data)
                    .fetch_optional(&mut *c)
                    .await
                    .map_err(write_error)?,
            };
            let sequence = sequence.ok_or_else(|| StoreError::NotFound(format!("run {run_id}")))?;
            Ok(EventRow {
                run_id,
                sequence,
                kind: kind.to_string(),
                at,
                task_key: task_key.map(str::to_string),
                data,
            })
        }

        /// Moves `runs.last_event_sequence` to the sequence of the unit's last append to the
        /// run (SQLite, before the unit commits: [`crate::Tx::commit`]).
        pub(crate) async fn store_event_sequence(c: &mut Conn, run_id: i64, sequence: i64) -> Result<()> {
            let done = query(sql::STORE_EVENT_SEQUENCE)
                .bind(run_id)
                .bind(sequence)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(format!("run {run_id}")));
            }
            Ok(())
        }

        pub(crate) async fn latest_event_sequence(c: &mut Conn, run_id: i64) -> Result<i64> {
            let s: Option<i64> = query_scalar(sql::LATEST_EVENT_SEQUENCE)
                .bind(run_id)
                .fetch_optional(&mut *c)
                .await?;
            s.ok_or_else(|| StoreError::NotFound(format!("run {run_id}")))
        }

        pub(crate) async fn events_after(c: &mut Conn, run_id: i64, after: i64, limit: i64) -> Result<Vec<EventRow>> {
            let rows = query(sql::EVENTS_AFTER)
                .bind(run_id)
                .bind(after)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?;
            rows.iter().map(row::event).collect()
        }

        // ---- tasks ----

        pub(crate) async fn insert_task(c: &mut Conn, new: &NewTask) -> Result<TaskRow> {
            row::check_new_task_text(new)?;
            let q = query(sql::INSERT_TASK)
                .bind(new.run_id)
                .bind(&new.key)
                .bind(&new.kind)
                .bind(&new.origin)
                .bind(&new.frozen_context)
                .bind(new.created_at);
            let r = row::bind_task_mutable!(q, new)
                .bind(new.frozen_context.as_deref().map(row::frozen_digest))
                .fetch_one(&mut *c)
                .await
                .map_err(write_error)?;
            row::task(&r)
        }

        /// The conditional update of every mutable column (`sql::UPDATE_TASK`).
        pub(crate) async fn $update_task(
            c: &mut Conn,
            task: &TaskRow,
            expect_generation: i64,
            expect_statuses: &[&str],
            expect_claim_token: Option<&str>,
        ) -> Result<bool> {
            row::check_task_row_text(task)?;
            let slots = row::status_slots(expect_statuses)?;
            let mut q = query(sql::UPDATE_TASK).bind(task.id).bind(expect_generation);
            for s in slots {
                q = q.bind(s);
            }
            let q = q.bind(expect_claim_token);
            let done = row::bind_task_mutable!(q, task)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(done.rows_affected() > 0)
        }

        pub(crate) async fn task_by_id(c: &mut Conn, id: i64) -> Result<Option<TaskRow>> {
            query(sql::TASK_BY_ID)
                .bind(id)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::task(&r))
                .transpose()
        }

        pub(crate) async fn task_frozen_head(c: &mut Conn, id: i64) -> Result<Option<FrozenHead>> {
            query(<Conn as $crate::ops::Dialect>::TASK_FROZEN_HEAD)
                .bind(id)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::frozen_head(&r))
                .transpose()
        }

        pub(crate) async fn task_frozen_context(c: &mut Conn, id: i64) -> Result<Option<String>> {
            let r = query(sql::TASK_FROZEN_CONTEXT)
                .bind(id)
                .fetch_optional(&mut *c)
                .await?;
            match r {
                Some(r) => row::frozen_context(&r),
                None => Ok(None),
            }
        }

        pub(crate) async fn task_by_key(c: &mut Conn, run_id: i64, key: &str) -> Result<Option<TaskRow>> {
            if check_text(key).is_err() {
                return Ok(None);
            }
            query(sql::TASK_BY_KEY)
                .bind(run_id)
                .bind(key)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::task(&r))
                .transpose()
        }

        pub(crate) async fn tasks_of_run(c: &mut Conn, run_id: i64) -> Result<Vec<TaskRow>> {
            let rows = query(sql::TASKS_OF_RUN).bind(run_id).fetch_all(&mut *c).await?;
            rows.iter().map(row::task).collect()
        }

        pub(crate) async fn tasks_declared_by(c: &mut Conn, run_id: i64, declaring_id: i64) -> Result<Vec<TaskRow>> {
            let rows = query(sql::TASKS_DECLARED_BY)
                .bind(run_id)
                .bind(declaring_id)
                .fetch_all(&mut *c)
                .await?;
            rows.iter().map(row::task).collect()
        }

        pub(crate) async fn tasks_if_quiescent(c: &mut Conn, run_id: i64) -> Result<Option<Vec<TaskEndRow>>> {
            let mut rows = query(sql::TASKS_OF_QUIESCENT_RUN)
                .bind(run_id)
                .fetch_all_as(&mut *c, |r| row::task_end(r))
                .await?;
            rows.sort_unstable_by_key(|r| r.id);
            // No rows: a run with rows in an open status (a run with no rows has nothing to end).
            Ok((!rows.is_empty()).then_some(rows))
        }

        pub(crate) async fn any_running_await(c: &mut Conn, run_id: i64) -> Result<bool> {
            Ok(query(sql::ANY_RUNNING_AWAIT)
                .bind(run_id)
                .fetch_optional(&mut *c)
                .await?
                .is_some())
        }

        pub(crate) async fn tasks_of_run_page(
            c: &mut Conn,
            run_id: i64,
            after_id: i64,
            limit: i64,
        ) -> Result<Vec<TaskRow>> {
            let rows = query(sql::TASKS_OF_RUN_PAGE)
                .bind(run_id)
                .bind(after_id)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?;
            rows.iter().map(row::task).collect()
        }

        pub(crate) async fn expired_parks(
            c: &mut Conn,
            now: i64,
            after_task_id: i64,
            limit: i64,
        ) -> Result<Vec<(i64, i64)>> {
            let rows = query(sql::EXPIRED_PARKS)
                .bind(now)
                .bind(after_task_id)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?;
            rows.iter().map(row::run_and_task_ids).collect()
        }

        pub(crate) async fn revoked_parks(c: &mut Conn, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>> {
            let rows = query(sql::REVOKED_PARKS)
                .bind(after_task_id)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?;
            rows.iter().map(row::run_and_task_ids).collect()
        }

        pub(crate) async fn held_approvals(
            c: &mut Conn,
            workspace_id: i64,
            after_task_id: i64,
            limit: i64,
        ) -> Result<Vec<TaskRow>> {
            let rows = query(sql::HELD_APPROVALS)
                .bind(workspace_id)
                .bind(after_task_id)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?;
            rows.iter().map(row::task).collect()
        }

        pub(crate) async fn inbox_page(
            c: &mut Conn,
            executor_id: i64,
            after_task_id: i64,
            limit: i64,
        ) -> Result<Vec<(TaskRow, RunRow)>> {
            let rows = query(sql::INBOX_PAGE)
                .bind(executor_id)
                .bind(after_task_id)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?;
            rows.iter()
                .map(|r| Ok((row::task(r)?, row::run(&row::Prefixed(r, "r_"))?)))
                .collect()
        }

        // ---- edges ----

        pub(crate) async fn insert_edge(c: &mut Conn, task_id: i64, depends_on_id: i64, kind: &str) -> Result<bool> {
            check_text(kind)?;
            let done = query(sql::INSERT_EDGE)
                .bind(task_id)
                .bind(depends_on_id)
                .bind(kind)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(done.rows_affected() > 0)
        }

        pub(crate) async fn edges_of_run(c: &mut Conn, run_id: i64) -> Result<Vec<EdgeRow>> {
            let rows = query(sql::EDGES_OF_RUN).bind(run_id).fetch_all(&mut *c).await?;
            rows.iter().map(row::edge).collect()
        }

        pub(crate) async fn edges_into(c: &mut Conn, depends_on_id: i64) -> Result<Vec<EdgeRow>> {
            let mut edges = query(sql::EDGES_INTO)
                .bind(depends_on_id)
                .fetch_all_as(&mut *c, |r| row::edge(r))
                .await?;
            edges.sort_unstable();
            Ok(edges)
        }

        pub(crate) async fn edges_from(c: &mut Conn, task_id: i64) -> Result<Vec<EdgeRow>> {
            query(sql::EDGES_FROM)
                .bind(task_id)
                .fetch_all_as(&mut *c, |r| row::edge(r))
                .await
        }

        // ---- jobs ----

        pub(crate) async fn insert_job(c: &mut Conn, new: &NewJob) -> Result<i64> {
            check_text(&new.kind)?;
            let id: i64 = query_scalar(sql::INSERT_JOB)
                .bind(&new.kind)
                .bind(new.run_id)
                .bind(new.task_id)
                .bind(new.generation)
                .bind(new.available_at)
                .fetch_one(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(id)
        }

        pub(crate) async fn delete_job(c: &mut Conn, job_id: i64) -> Result<bool> {
            let done = query(sql::DELETE_JOB)
                .bind(job_id)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(done.rows_affected() > 0)
        }

        pub(crate) async fn job_by_id(c: &mut Conn, job_id: i64) -> Result<Option<JobRow>> {
            query(sql::JOB_BY_ID)
                .bind(job_id)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::job(&r))
                .transpose()
        }

        pub(crate) async fn dequeue_jobs(
            c: &mut Conn,
            node_id: &str,
            now: i64,
            lease_ms: i64,
            limit: i64,
        ) -> Result<Vec<JobRow>> {
            check_text(node_id)?;
            let rows = query($dequeue)
                .bind(node_id)
                .bind(now.saturating_add(lease_ms))
                .bind(now)
                .bind(limit)
                .fetch_all(&mut *c)
                .await
                .map_err(write_error)?;
            let mut jobs = rows.iter().map(row::job).collect::<Result<Vec<_>>>()?;
            jobs.sort_by_key(|j| j.id);
            Ok(jobs)
        }

        pub(crate) async fn renew_job_lease(
            c: &mut Conn,
            job_id: i64,
            node_id: &str,
            now: i64,
            lease_ms: i64,
        ) -> Result<bool> {
            check_text(node_id)?;
            let done = query(sql::RENEW_JOB_LEASE)
                .bind(job_id)
                .bind(node_id)
                .bind(now.saturating_add(lease_ms))
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(done.rows_affected() > 0)
        }

        pub(crate) async fn release_node_leases(c: &mut Conn, node_id: &str) -> Result<u64> {
            check_text(node_id)?;
            let done = query(sql::RELEASE_NODE_LEASES)
                .bind(node_id)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(done.rows_affected())
        }

        pub(crate) async fn requeue_job(c: &mut Conn, job_id: i64, available_at: i64) -> Result<bool> {
            let done = query(sql::REQUEUE_JOB)
                .bind(job_id)
                .bind(available_at)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(done.rows_affected() > 0)
        }

        // ---- sealed requests ----

        pub(crate) async fn insert_sealed_request(c: &mut Conn, new: &NewSealedRequest) -> Result<SealedRequestRow> {
            check_text(&new.record)?;
            check_text(&new.body_sha256)?;
            check_text(&new.attempts)?;
            let r = query(sql::INSERT_SEALED_REQUEST)
                .bind(new.task_id)
                .bind(new.generation)
                .bind(&new.record)
                .bind(&new.body_sha256)
                .bind(new.request_bytes)
                .bind(&new.body)
                .bind(&new.attempts)
                .bind(new.created_at)
                .fetch_one(&mut *c)
                .await
                .map_err(write_error)?;
            row::sealed_request(&r)
        }

        pub(crate) async fn sealed_request(
            c: &mut Conn,
            task_id: i64,
            generation: i64,
        ) -> Result<Option<SealedRequestRow>> {
            query(sql::SEALED_REQUEST)
                .bind(task_id)
                .bind(generation)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::sealed_request(&r))
                .transpose()
        }

        pub(crate) async fn set_sealed_attempts(
            c: &mut Conn,
            task_id: i64,
            generation: i64,
            attempts: &str,
        ) -> Result<bool> {
            check_text(attempts)?;
            let done = query(sql::SET_SEALED_ATTEMPTS)
                .bind(task_id)
                .bind(generation)
                .bind(attempts)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(done.rows_affected() > 0)
        }

        // ---- round facts and key probes (migration 0005) ----

        pub(crate) async fn round_facts(c: &mut Conn, task_id: i64) -> Result<Option<RoundFactsRow>> {
            query(sql::ROUND_FACTS)
                .bind(task_id)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::round_facts(&r))
                .transpose()
        }

        pub(crate) async fn put_round_facts(c: &mut Conn, facts: &RoundFactsRow) -> Result<()> {
            check_text(&facts.history)?;
            query(sql::PUT_ROUND_FACTS)
                .bind(facts.task_id)
                .bind(facts.chain_rounds)
                .bind(facts.key_floor)
                .bind(&facts.history)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(())
        }

        pub(crate) async fn round_for_reply(c: &mut Conn, id: i64) -> Result<Option<RoundForReply>> {
            query(sql::ROUND_FOR_REPLY)
                .bind(id)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::round_for_reply(&r))
                .transpose()
        }

        pub(crate) async fn task_neighbourhood(c: &mut Conn, run_id: i64, id: i64) -> Result<Vec<TaskRow>> {
            let rows = query(sql::TASK_NEIGHBOURHOOD)
                .bind(id)
                .bind(run_id)
                .fetch_all(&mut *c)
                .await?;
            rows.iter().map(row::task).collect()
        }

        pub(crate) async fn task_and_deps(c: &mut Conn, id: i64) -> Result<Vec<TaskRow>> {
            query(sql::TASK_AND_DEPS)
                .bind(id)
                .fetch_all_as(&mut *c, |r| row::task(r))
                .await
        }

        pub(crate) async fn task_keys_of_run(c: &mut Conn, run_id: i64) -> Result<Vec<String>> {
            Ok(query_scalar(sql::TASK_KEYS_OF_RUN)
                .bind(run_id)
                .fetch_all(&mut *c)
                .await?)
        }

        pub(crate) async fn used_task_keys(c: &mut Conn, run_id: i64, keys: &[String]) -> Result<Vec<String>> {
            let mut used = Vec::new();
            for chunk in keys.chunks(sql::KEY_PROBE_SLOTS) {
                // A key the text guard refuses is in use nowhere.
                let probe: Vec<&str> = chunk
                    .iter()
                    .map(String::as_str)
                    .filter(|k| check_text(k).is_ok())
                    .collect();
                let Some(first) = probe.first().copied() else {
                    continue;
                };
                let mut q = query_scalar(sql::USED_TASK_KEYS).bind(run_id);
                for i in 0..sql::KEY_PROBE_SLOTS {
                    q = q.bind(probe.get(i).copied().unwrap_or(first));
                }
                let keys: Vec<String> = q.fetch_all(&mut *c).await?;
                used.extend(keys);
            }
            used.sort();
            used.dedup();
            Ok(used)
        }

        // ---- idempotency receipts ----

        pub(crate) async fn idempotency_get(c: &mut Conn, scope_hash: &str, now: i64) -> Result<Option<ReceiptRow>> {
            if check_text(scope_hash).is_err() {
                return Ok(None);
            }
            query(sql::RECEIPT_GET)
                .bind(scope_hash)
                .bind(now)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| row::receipt(&r))
                .transpose()
        }

        pub(crate) async fn idempotency_put(c: &mut Conn, new: &NewReceipt) -> Result<ReceiptRow> {
            check_text(&new.scope_hash)?;
            check_text(&new.envelope_sha256)?;
            check_text(&new.body)?;
            // An expired receipt frees its scope.
            query(sql::RECEIPT_DROP_EXPIRED_SCOPE)
                .bind(&new.scope_hash)
                .bind(new.created_at)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            let r = query(sql::RECEIPT_PUT)
                .bind(&new.scope_hash)
                .bind(&new.envelope_sha256)
                .bind(new.status)
                .bind(&new.body)
                .bind(new.expires_at)
                .bind(new.created_at)
                .fetch_optional(&mut *c)
                .await
                .map_err(write_error)?;
            match r {
                Some(r) => row::receipt(&r),
                None => Err(StoreError::Conflict(format!(
                    "{} {}",
                    $crate::RECEIPT_TAKEN,
                    new.scope_hash
                ))),
            }
        }

        pub(crate) async fn purge_idempotency_receipts(c: &mut Conn, now: i64) -> Result<u64> {
            let done = query(sql::RECEIPTS_PURGE)
                .bind(now)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(done.rows_affected())
        }
    };
}
pub(crate) use engine_ops;

/// The run-table [`crate::Engine`] methods of one engine, over its pool. The invoking module
/// has `ops` (from [`engine_ops!`]), `self.pool`, and `self.write_conn()` (a connection for one
/// write statement, behind the SQLite writer gate).
macro_rules! engine_methods {
    () => {
        async fn run_by_id(&self, id: i64) -> Result<Option<RunRow>> {
            ops::run_by_id(&mut *self.pool.acquire().await?, id).await
        }
        async fn run_by_public_id(&self, public_id: Uuid) -> Result<Option<RunRow>> {
            ops::run_by_public_id(&mut *self.pool.acquire().await?, public_id).await
        }
        /// Served from the engine's [`crate::principals::Principals`] while the version read
        /// now is the one the kept pair was read at; otherwise read (and kept) afresh.
        async fn credential_with_executor(
            &self,
            public_id: Uuid,
        ) -> Result<Option<(CredentialRow, Option<ExecutorRow>)>> {
            let mut c = self.pool.acquire().await?;
            if self.principals.keeps(public_id)
                && let Some(version) = ops::principal_version(&mut *c).await?
                && let Some(pair) = self.principals.get(public_id, version)
            {
                return Ok(Some(pair));
            }
            let found = ops::credential_with_executor(&mut *c, public_id).await?;
            Ok(found.map(|(version, pair)| {
                if let Some(version) = version {
                    self.principals.keep(public_id, version, &pair);
                }
                pair
            }))
        }
        async fn run_in_account(&self, public_id: Uuid, account_id: i64) -> Result<Option<RunInAccount>> {
            ops::run_in_account(&mut *self.pool.acquire().await?, public_id, account_id).await
        }
        async fn member_by_id(&self, id: i64) -> Result<Option<MemberRow>> {
            ops::member_by_id(&mut *self.pool.acquire().await?, id).await
        }
        async fn runs_of_workspace(
            &self,
            workspace_id: i64,
            status: Option<&str>,
            after_id: i64,
            limit: i64,
        ) -> Result<Vec<RunRow>> {
            ops::runs_of_workspace(
                &mut *self.pool.acquire().await?,
                workspace_id,
                status,
                after_id,
                limit,
            )
            .await
        }
        async fn tasks_of_run(&self, run_id: i64, after_id: i64, limit: i64) -> Result<Vec<TaskRow>> {
            ops::tasks_of_run_page(&mut *self.pool.acquire().await?, run_id, after_id, limit).await
        }
        async fn task_by_key(&self, run_id: i64, key: &str) -> Result<Option<TaskRow>> {
            ops::task_by_key(&mut *self.pool.acquire().await?, run_id, key).await
        }
        async fn task_by_id(&self, id: i64) -> Result<Option<TaskRow>> {
            ops::task_by_id(&mut *self.pool.acquire().await?, id).await
        }
        async fn tasks_declared_by(&self, run_id: i64, declaring_id: i64) -> Result<Vec<TaskRow>> {
            ops::tasks_declared_by(&mut *self.pool.acquire().await?, run_id, declaring_id).await
        }
        async fn task_neighbourhood(&self, run_id: i64, id: i64) -> Result<Vec<TaskRow>> {
            ops::task_neighbourhood(&mut *self.pool.acquire().await?, run_id, id).await
        }

        async fn task_and_deps(&self, id: i64) -> Result<Vec<TaskRow>> {
            ops::task_and_deps(&mut *self.pool.acquire().await?, id).await
        }
        async fn edges_of_run(&self, run_id: i64) -> Result<Vec<EdgeRow>> {
            ops::edges_of_run(&mut *self.pool.acquire().await?, run_id).await
        }
        async fn edges_from(&self, task_id: i64) -> Result<Vec<EdgeRow>> {
            ops::edges_from(&mut *self.pool.acquire().await?, task_id).await
        }
        async fn events_after(&self, run_id: i64, after_sequence: i64, limit: i64) -> Result<Vec<EventRow>> {
            ops::events_after(&mut *self.pool.acquire().await?, run_id, after_sequence, limit).await
        }
        async fn latest_event_sequence(&self, run_id: i64) -> Result<i64> {
            ops::latest_event_sequence(&mut *self.pool.acquire().await?, run_id).await
        }
        async fn sealed_request(&self, task_id: i64, generation: i64) -> Result<Option<SealedRequestRow>> {
            ops::sealed_request(&mut *self.pool.acquire().await?, task_id, generation).await
        }
        async fn job_by_id(&self, job_id: i64) -> Result<Option<JobRow>> {
            ops::job_by_id(&mut *self.pool.acquire().await?, job_id).await
        }
        async fn dequeue_jobs(&self, node_id: &str, now: i64, lease_ms: i64, limit: i64) -> Result<Vec<JobRow>> {
            // One statement, atomic on its own (and, on SQLite, behind the writer gate like
            // every write of this process): no explicit transaction around it.
            ops::dequeue_jobs(&mut *self.write_conn().await?, node_id, now, lease_ms, limit).await
        }
        async fn renew_job_lease(&self, job_id: i64, node_id: &str, now: i64, lease_ms: i64) -> Result<bool> {
            ops::renew_job_lease(&mut *self.write_conn().await?, job_id, node_id, now, lease_ms).await
        }
        async fn release_node_leases(&self, node_id: &str) -> Result<u64> {
            ops::release_node_leases(&mut *self.write_conn().await?, node_id).await
        }
        async fn requeue_job(&self, job_id: i64, available_at: i64) -> Result<bool> {
            ops::requeue_job(&mut *self.write_conn().await?, job_id, available_at).await
        }
        async fn delete_job(&self, job_id: i64) -> Result<bool> {
            ops::delete_job(&mut *self.write_conn().await?, job_id).await
        }
        async fn expired_parks(&self, now: i64, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>> {
            ops::expired_parks(&mut *self.pool.acquire().await?, now, after_task_id, limit).await
        }
        async fn revoked_parks(&self, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>> {
            ops::revoked_parks(&mut *self.pool.acquire().await?, after_task_id, limit).await
        }
        async fn held_approvals(&self, workspace_id: i64, after_task_id: i64, limit: i64) -> Result<Vec<TaskRow>> {
            ops::held_approvals(
                &mut *self.pool.acquire().await?,
                workspace_id,
                after_task_id,
                limit,
            )
            .await
        }
        async fn inbox_page(&self, executor_id: i64, after_task_id: i64, limit: i64) -> Result<Vec<(TaskRow, RunRow)>> {
            ops::inbox_page(
                &mut *self.pool.acquire().await?,
                executor_id,
                after_task_id,
                limit,
            )
            .await
        }
        async fn idempotency_get(&self, scope_hash: &str, now: i64) -> Result<Option<ReceiptRow>> {
            ops::idempotency_get(&mut *self.pool.acquire().await?, scope_hash, now).await
        }
        async fn purge_idempotency_receipts(&self, now: i64) -> Result<u64> {
            ops::purge_idempotency_receipts(&mut *self.write_conn().await?, now).await
        }
    };
}
pub(crate) use engine_methods;
