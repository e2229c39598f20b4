//! Tasks, their edges, sealed requests and round facts (migrations 0002, 0005, 0006), the
//! sweep's and the approval queue's selections and the inbox page, written once for both
//! engines.

use crate::model::*;
use crate::ops::all::*;
use crate::ops::db::{Db, query, query_scalar};
use crate::ops::on_conn;
use crate::row;
use crate::sql;
use crate::{Result, Store, check_text, write_error};

/// The key slots of one [`crate::sql::USED_TASK_KEYS`] probe for `chunk` (at most
/// [`crate::sql::KEY_PROBE_SLOTS`] keys): the keys the text guard accepts (one it refuses is
/// in use nowhere), the spare slots repeating the first; `None` when no key is left to probe.
pub(crate) fn key_probe_slots(chunk: &[String]) -> Option<Vec<&str>> {
    let probe: Vec<&str> = chunk
        .iter()
        .map(String::as_str)
        .filter(|k| crate::check_text(k).is_ok())
        .collect();
    let first = *probe.first()?;
    Some(
        (0..crate::sql::KEY_PROBE_SLOTS)
            .map(|i| probe.get(i).copied().unwrap_or(first))
            .collect(),
    )
}

// ---- tasks ----

/// The frozen context's body goes to `frozen_contexts` once per digest (a body already
/// stored is left as it is; PostgreSQL stores it in the task insert's statement) and the
/// row keeps the digest (migration 0014); the row returned carries the caller's bytes.
pub(crate) async fn insert_task<C: Db>(c: &mut C, new: &NewTask) -> Result<TaskRow> {
    row::check_new_task_text(new)?;
    let digest = new.frozen_context.as_deref().map(row::frozen_digest);
    let with_body = C::INSERT_TASK_WITH_BODY;
    if let (Some(digest), Some(body)) = (&digest, &new.frozen_context) {
        if with_body.is_none() {
            query(sql::INSERT_FROZEN_CONTEXT)
                .bind(digest)
                .bind(body)
                .execute(&mut *c)
                .await
                .map_err(write_error)?;
        }
        // Kept before the unit commits: the digest names these bytes whether or not
        // this row is ever stored.
        crate::frozen::keep(digest, body);
    }
    let q = query(with_body.unwrap_or(sql::INSERT_TASK))
        .bind(new.run_id)
        .bind(&new.key)
        .bind(new.kind)
        .bind(new.origin.as_str())
        .bind(&digest)
        .bind(new.created_at);
    let mut q = row::bind_task_mutable!(q, new);
    if with_body.is_some() {
        q = q.bind(&new.frozen_context);
    }
    let r = q.fetch_one(&mut *c).await.map_err(write_error)?;
    // The insert returns no digest: the caller's bytes are the row's.
    let mut task = row::task(&r)?.without_frozen();
    task.frozen_context = new.frozen_context.clone();
    Ok(task)
}

/// Fills the frozen context of a decoded row from the process's cache, or else from
/// `frozen_contexts`, and keeps it (`crate::frozen`).
pub(crate) async fn resolve_frozen<C: Db, T: crate::frozen::HoldsTask>(
    c: &mut C,
    pending: crate::frozen::Pending<T>,
) -> Result<T> {
    let crate::frozen::Pending { mut value, digest } = pending;
    let Some(digest) = digest else { return Ok(value) };
    let body = match crate::frozen::get(&digest) {
        Some(kept) => Some(kept.to_string()),
        None => {
            let body: Option<String> = query_scalar(sql::FROZEN_BODY)
                .bind(&digest)
                .fetch_optional(&mut *c)
                .await?;
            // The task insert stores the body with the row that names it; a digest
            // without a body (none is written so) reads as no frozen context, as the
            // join read it before.
            if let Some(body) = &body {
                crate::frozen::keep(&digest, body);
            }
            body
        }
    };
    if let Some(slot) = value.frozen_slot() {
        *slot = body;
    }
    Ok(value)
}

/// [`resolve_frozen`] of each row, in order.
pub(crate) async fn resolve_frozen_all<C: Db, T: crate::frozen::HoldsTask>(
    c: &mut C,
    pending: Vec<crate::frozen::Pending<T>>,
) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(pending.len());
    for p in pending {
        out.push(resolve_frozen(&mut *c, p).await?);
    }
    Ok(out)
}

/// The conditional update of every mutable column (`sql::UPDATE_TASK`).
pub(crate) async fn update_task_every_column<C: Db>(
    c: &mut C,
    task: &TaskRow,
    expect_generation: i64,
    expect_statuses: &[TaskStatus],
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

pub(crate) async fn task_by_id<C: Db>(c: &mut C, id: i64) -> Result<Option<TaskRow>> {
    let found = query(sql::TASK_BY_ID)
        .bind(id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::task(&r))
        .transpose()?;
    resolve_frozen_opt(c, found).await
}

/// [`resolve_frozen`] of a row that may be absent.
pub(crate) async fn resolve_frozen_opt<C: Db, T: crate::frozen::HoldsTask>(
    c: &mut C,
    found: Option<crate::frozen::Pending<T>>,
) -> Result<Option<T>> {
    match found {
        Some(p) => Ok(Some(resolve_frozen(c, p).await?)),
        None => Ok(None),
    }
}

pub(crate) async fn task_frozen_head<C: Db>(c: &mut C, id: i64) -> Result<Option<FrozenHead>> {
    query(C::TASK_FROZEN_HEAD)
        .bind(id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::frozen_head(&r))
        .transpose()
}

pub(crate) async fn task_frozen_context<C: Db>(c: &mut C, id: i64) -> Result<Option<String>> {
    let r = query(sql::TASK_FROZEN_CONTEXT).bind(id).fetch_optional(&mut *c).await?;
    match r {
        Some(r) => row::frozen_context(&r),
        None => Ok(None),
    }
}

pub(crate) async fn task_by_key<C: Db>(c: &mut C, run_id: i64, key: &str) -> Result<Option<TaskRow>> {
    if check_text(key).is_err() {
        return Ok(None);
    }
    let found = query(sql::TASK_BY_KEY)
        .bind(run_id)
        .bind(key)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::task(&r))
        .transpose()?;
    resolve_frozen_opt(c, found).await
}

pub(crate) async fn tasks_of_run<C: Db>(c: &mut C, run_id: i64) -> Result<Vec<TaskRow>> {
    let rows = query(sql::TASKS_OF_RUN).bind(run_id).fetch_all(&mut *c).await?;
    let pending = rows.iter().map(row::task).collect::<Result<Vec<_>>>()?;
    resolve_frozen_all(c, pending).await
}

pub(crate) async fn tasks_declared_by<C: Db>(c: &mut C, run_id: i64, declaring_id: i64) -> Result<Vec<TaskRow>> {
    let rows = query(sql::TASKS_DECLARED_BY)
        .bind(run_id)
        .bind(declaring_id)
        .fetch_all(&mut *c)
        .await?;
    let pending = rows.iter().map(row::task).collect::<Result<Vec<_>>>()?;
    resolve_frozen_all(c, pending).await
}

pub(crate) async fn tasks_if_quiescent<C: Db>(c: &mut C, run_id: i64) -> Result<Option<Vec<TaskEndRow>>> {
    let rows = query(sql::TASKS_OF_QUIESCENT_RUN)
        .bind(run_id)
        .fetch_all_as(&mut *c, |r| row::task_end(r))
        .await?;
    Ok(row::quiescent(rows))
}

pub(crate) async fn edges_into_unless_awaiting<C: Db>(
    c: &mut C,
    run_id: i64,
    depends_on_id: i64,
) -> Result<Option<Vec<EdgeRow>>> {
    let rows = query(sql::EDGES_INTO_UNLESS_AWAITING)
        .bind(run_id)
        .bind(depends_on_id)
        .fetch_all_as(&mut *c, |r| row::edge_or_awaiting(r))
        .await?;
    Ok(row::edges_unless_awaiting(rows))
}

pub(crate) async fn tasks_of_run_page<C: Db>(
    c: &mut C,
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
    let pending = rows.iter().map(row::task).collect::<Result<Vec<_>>>()?;
    resolve_frozen_all(c, pending).await
}

pub(crate) async fn expired_parks<C: Db>(
    c: &mut C,
    now: i64,
    after_task_id: i64,
    limit: i64,
) -> Result<Vec<(i64, i64)>> {
    let rows = query(C::EXPIRED_PARKS)
        .bind(now)
        .bind(after_task_id)
        .bind(limit)
        .fetch_all(&mut *c)
        .await?;
    rows.iter().map(row::run_and_task_ids).collect()
}

pub(crate) async fn revoked_parks<C: Db>(c: &mut C, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>> {
    let rows = query(sql::REVOKED_PARKS)
        .bind(after_task_id)
        .bind(limit)
        .fetch_all(&mut *c)
        .await?;
    rows.iter().map(row::run_and_task_ids).collect()
}

pub(crate) async fn held_approvals<C: Db>(
    c: &mut C,
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
    let pending = rows.iter().map(row::task).collect::<Result<Vec<_>>>()?;
    resolve_frozen_all(c, pending).await
}

pub(crate) async fn inbox_page<C: Db>(
    c: &mut C,
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
    let pending = rows
        .iter()
        .map(|r| {
            let run = row::run(&row::Prefixed(r, "r_"))?;
            Ok(row::task(r)?.map(|task| (task, run)))
        })
        .collect::<Result<Vec<_>>>()?;
    resolve_frozen_all(c, pending).await
}

// ---- edges ----

pub(crate) async fn insert_edge<C: Db>(c: &mut C, task_id: i64, depends_on_id: i64, kind: EdgeKind) -> Result<bool> {
    let done = query(sql::INSERT_EDGE)
        .bind(task_id)
        .bind(depends_on_id)
        .bind(kind)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn edges_of_run<C: Db>(c: &mut C, run_id: i64) -> Result<Vec<EdgeRow>> {
    let rows = query(sql::EDGES_OF_RUN).bind(run_id).fetch_all(&mut *c).await?;
    rows.iter().map(row::edge).collect()
}

pub(crate) async fn edges_into<C: Db>(c: &mut C, depends_on_id: i64) -> Result<Vec<EdgeRow>> {
    let mut edges = query(sql::EDGES_INTO)
        .bind(depends_on_id)
        .fetch_all_as(&mut *c, |r| row::edge(r))
        .await?;
    edges.sort_unstable();
    Ok(edges)
}

pub(crate) async fn edges_from<C: Db>(c: &mut C, task_id: i64) -> Result<Vec<EdgeRow>> {
    query(sql::EDGES_FROM)
        .bind(task_id)
        .fetch_all_as(&mut *c, |r| row::edge(r))
        .await
}
pub(crate) async fn round_cache_facts<C: Db>(c: &mut C, run_id: i64) -> Result<Vec<RoundCacheFacts>> {
    query(sql::ROUND_CACHE_FACTS)
        .bind(run_id)
        .fetch_all_as(&mut *c, |r| row::round_cache_facts(r))
        .await
}

pub(crate) async fn set_sealed_attempts<C: Db>(
    c: &mut C,
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

pub(crate) async fn round_facts<C: Db>(c: &mut C, task_id: i64) -> Result<Option<RoundFactsRow>> {
    query(sql::ROUND_FACTS)
        .bind(task_id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::round_facts(&r))
        .transpose()
}

pub(crate) async fn put_round_facts<C: Db>(c: &mut C, facts: &RoundFactsRow) -> Result<()> {
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

pub(crate) async fn round_for_reply<C: Db>(c: &mut C, id: i64) -> Result<Option<RoundForReply>> {
    let found = query(sql::ROUND_FOR_REPLY)
        .bind(id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| row::round_for_reply(&r))
        .transpose()?;
    resolve_frozen_opt(c, found).await
}

pub(crate) async fn task_neighbourhood<C: Db>(c: &mut C, run_id: i64, id: i64) -> Result<Vec<TaskRow>> {
    let rows = query(sql::TASK_NEIGHBOURHOOD)
        .bind(id)
        .bind(run_id)
        .fetch_all(&mut *c)
        .await?;
    let pending = rows.iter().map(row::task).collect::<Result<Vec<_>>>()?;
    resolve_frozen_all(c, pending).await
}

pub(crate) async fn task_and_deps<C: Db>(c: &mut C, id: i64) -> Result<Vec<TaskRow>> {
    let pending = query(sql::TASK_AND_DEPS)
        .bind(id)
        .fetch_all_as(&mut *c, |r| row::task(r))
        .await?;
    resolve_frozen_all(c, pending).await
}

pub(crate) async fn task_keys_of_run<C: Db>(c: &mut C, run_id: i64) -> Result<Vec<String>> {
    Ok(query_scalar(sql::TASK_KEYS_OF_RUN)
        .bind(run_id)
        .fetch_all(&mut *c)
        .await?)
}

pub(crate) async fn used_task_keys<C: Db>(c: &mut C, run_id: i64, keys: &[String]) -> Result<Vec<String>> {
    let mut used = Vec::new();
    for chunk in keys.chunks(sql::KEY_PROBE_SLOTS) {
        let Some(slots) = crate::ops::tasks::key_probe_slots(chunk) else {
            continue;
        };
        let mut q = query_scalar(sql::USED_TASK_KEYS).bind(run_id);
        for key in slots {
            q = q.bind(key);
        }
        let keys: Vec<String> = q.fetch_all(&mut *c).await?;
        used.extend(keys);
    }
    used.sort();
    used.dedup();
    Ok(used)
}

/// The tasks operations on the store (see `crate::ops`).
#[allow(async_fn_in_trait)]
pub trait TaskStore {
    /// The run's tasks with `id > after_id`, by id, at most `limit`.
    async fn tasks_of_run(&self, run_id: i64, after_id: i64, limit: i64) -> Result<Vec<TaskRow>>;
    async fn task_by_key(&self, run_id: i64, key: &str) -> Result<Option<TaskRow>>;
    async fn task_by_id(&self, id: i64) -> Result<Option<TaskRow>>;
    /// The run's rows whose `declaring_task_id` is `declaring_id`, by id.
    async fn tasks_declared_by(&self, run_id: i64, declaring_id: i64) -> Result<Vec<TaskRow>>;
    /// The task `id`, its declaring row (whatever their runs), and the rows of run `run_id`
    /// that the declaring row declared, by id: a continuation round with its predecessor and
    /// the predecessor's fan, in one read.
    async fn task_neighbourhood(&self, run_id: i64, id: i64) -> Result<Vec<TaskRow>>;
    /// The task `id` and the rows it depends on, by id (one task's read, without its run).
    async fn task_and_deps(&self, id: i64) -> Result<Vec<TaskRow>>;
    /// Every edge among the run's tasks, by (task_id, depends_on_id, kind).
    async fn edges_of_run(&self, run_id: i64) -> Result<Vec<EdgeRow>>;
    /// The edges out of task `task_id` (what it depends on), by (depends_on_id, kind).
    async fn edges_from(&self, task_id: i64) -> Result<Vec<EdgeRow>>;
    async fn sealed_request(&self, task_id: i64, generation: i64) -> Result<Option<SealedRequestRow>>;
    /// The run's model rounds in creation order, with what the cache report reads.
    async fn round_cache_facts(&self, run_id: i64) -> Result<Vec<RoundCacheFacts>>;
    /// `(run_id, task_id)` of parked tasks (`needs_approval | running | dispatched |
    /// awaiting_input`) with `deadline_at <= now` and `id > after_task_id` on runs that are not
    /// `completed | canceled`, by task id, at most `limit` (the sweep uses 500).
    async fn expired_parks(&self, now: i64, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>>;
    /// `(run_id, task_id)` of parks addressed to a `revoked` executor on runs that are not
    /// `completed | canceled`: unclaimed `dispatched` tool rows and tool rows at
    /// `needs_approval`, with `id > after_task_id`, by task id, at most `limit`.
    async fn revoked_parks(&self, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>>;
    /// Tasks at `needs_approval` on the workspace's runs with `id > after_task_id`, oldest
    /// (lowest id) first, at most `limit`.
    async fn held_approvals(&self, workspace_id: i64, after_task_id: i64, limit: i64) -> Result<Vec<TaskRow>>;
    /// The inbox page: tasks addressed to `executor_id` in one of [`INBOX_STATUSES`] with
    /// `id > after_task_id`, on runs `running | canceling`, by id, at most `limit`; each with
    /// its run's row (one read for the page, which reads no more rows than it returns but for
    /// rows of runs that are no longer live).
    async fn inbox_page(&self, executor_id: i64, after_task_id: i64, limit: i64) -> Result<Vec<(TaskRow, RunRow)>>;
}

impl TaskStore for Store {
    async fn tasks_of_run(&self, run_id: i64, after_id: i64, limit: i64) -> Result<Vec<TaskRow>> {
        on_conn!(self, read, |c| tasks_of_run_page(c, run_id, after_id, limit))
    }
    async fn task_by_key(&self, run_id: i64, key: &str) -> Result<Option<TaskRow>> {
        on_conn!(self, read, |c| task_by_key(c, run_id, key))
    }
    async fn task_by_id(&self, id: i64) -> Result<Option<TaskRow>> {
        on_conn!(self, read, |c| task_by_id(c, id))
    }
    async fn tasks_declared_by(&self, run_id: i64, declaring_id: i64) -> Result<Vec<TaskRow>> {
        on_conn!(self, read, |c| tasks_declared_by(c, run_id, declaring_id))
    }
    async fn task_neighbourhood(&self, run_id: i64, id: i64) -> Result<Vec<TaskRow>> {
        on_conn!(self, read, |c| task_neighbourhood(c, run_id, id))
    }
    async fn task_and_deps(&self, id: i64) -> Result<Vec<TaskRow>> {
        on_conn!(self, read, |c| task_and_deps(c, id))
    }
    async fn edges_of_run(&self, run_id: i64) -> Result<Vec<EdgeRow>> {
        on_conn!(self, read, |c| edges_of_run(c, run_id))
    }
    async fn edges_from(&self, task_id: i64) -> Result<Vec<EdgeRow>> {
        on_conn!(self, read, |c| edges_from(c, task_id))
    }
    async fn sealed_request(&self, task_id: i64, generation: i64) -> Result<Option<SealedRequestRow>> {
        on_conn!(self, read, |c| sealed_request(c, task_id, generation))
    }
    async fn round_cache_facts(&self, run_id: i64) -> Result<Vec<RoundCacheFacts>> {
        on_conn!(self, read, |c| round_cache_facts(c, run_id))
    }
    async fn expired_parks(&self, now: i64, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>> {
        on_conn!(self, read, |c| expired_parks(c, now, after_task_id, limit))
    }
    async fn revoked_parks(&self, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>> {
        on_conn!(self, read, |c| revoked_parks(c, after_task_id, limit))
    }
    async fn held_approvals(&self, workspace_id: i64, after_task_id: i64, limit: i64) -> Result<Vec<TaskRow>> {
        on_conn!(self, read, |c| held_approvals(c, workspace_id, after_task_id, limit,))
    }
    async fn inbox_page(&self, executor_id: i64, after_task_id: i64, limit: i64) -> Result<Vec<(TaskRow, RunRow)>> {
        on_conn!(self, read, |c| inbox_page(c, executor_id, after_task_id, limit,))
    }
}
