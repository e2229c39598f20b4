//! Row decoding shared by both engines. Each engine says how to read one column ([`Columns`]);
//! the mapping from columns to row types is written once here.

use uuid::Uuid;

use crate::frozen::Pending;
use crate::model::*;
use crate::{Result, StoreError};

/// Column access for one engine's rows. Public ids are TEXT in SQLite and `uuid` in PostgreSQL.
pub(crate) trait Columns {
    fn public_id(&self, column: &str) -> Result<Uuid>;
    fn opt_public_id(&self, column: &str) -> Result<Option<Uuid>>;
    fn int(&self, column: &str) -> Result<i64>;
    fn opt_int(&self, column: &str) -> Result<Option<i64>>;
    /// REAL in SQLite, `double precision` in PostgreSQL.
    fn float(&self, column: &str) -> Result<f64>;
    fn text(&self, column: &str) -> Result<String>;
    fn opt_text(&self, column: &str) -> Result<Option<String>>;
    /// INTEGER 0/1 in SQLite, `boolean` in PostgreSQL.
    fn boolean(&self, column: &str) -> Result<bool>;
    /// BLOB in SQLite, `bytea` in PostgreSQL.
    fn bytes(&self, column: &str) -> Result<Vec<u8>>;
}

/// The columns of a joined row whose names carry `prefix` (`c_id`, `c_plane`, … for `c.id AS
/// c_id`), read with the one decoder of their table.
pub(crate) struct Prefixed<'a, C>(pub &'a C, pub &'static str);

impl<C: Columns> Prefixed<'_, C> {
    /// Reads `column` under its prefixed name, spelled in a stack buffer (a joined row reads
    /// some twenty columns this way per statement; a heap string each was measurable).
    fn read<T>(&self, column: &str, f: impl FnOnce(&C, &str) -> Result<T>) -> Result<T> {
        let (prefix, name) = (self.1.as_bytes(), column.as_bytes());
        let mut buf = [0_u8; 64];
        let len = prefix.len() + name.len();
        if len > buf.len() {
            return f(self.0, &format!("{}{column}", self.1));
        }
        buf[..prefix.len()].copy_from_slice(prefix);
        buf[prefix.len()..len].copy_from_slice(name);
        // Two UTF-8 strings joined are UTF-8.
        let joined = std::str::from_utf8(&buf[..len]).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        f(self.0, joined)
    }
}

impl<C: Columns> Columns for Prefixed<'_, C> {
    fn public_id(&self, column: &str) -> Result<Uuid> {
        self.read(column, |r, c| r.public_id(c))
    }
    fn opt_public_id(&self, column: &str) -> Result<Option<Uuid>> {
        self.read(column, |r, c| r.opt_public_id(c))
    }
    fn int(&self, column: &str) -> Result<i64> {
        self.read(column, |r, c| r.int(c))
    }
    fn opt_int(&self, column: &str) -> Result<Option<i64>> {
        self.read(column, |r, c| r.opt_int(c))
    }
    fn float(&self, column: &str) -> Result<f64> {
        self.read(column, |r, c| r.float(c))
    }
    fn text(&self, column: &str) -> Result<String> {
        self.read(column, |r, c| r.text(c))
    }
    fn opt_text(&self, column: &str) -> Result<Option<String>> {
        self.read(column, |r, c| r.opt_text(c))
    }
    fn boolean(&self, column: &str) -> Result<bool> {
        self.read(column, |r, c| r.boolean(c))
    }
    fn bytes(&self, column: &str) -> Result<Vec<u8>> {
        self.read(column, |r, c| r.bytes(c))
    }
}

/// A credential and, when it belongs to one, its executor, from one joined row
/// ([`crate::sql::CREDENTIAL_WITH_EXECUTOR`]), with the `principal_version` they were read at.
pub(crate) fn credential_with_executor(r: &impl Columns) -> Result<(Option<i64>, crate::principals::Principal)> {
    let executor = match r.opt_int("id")? {
        Some(_) => Some(executor(r)?),
        None => None,
    };
    let version = r.opt_int("principal_version")?;
    let credential = credential(&Prefixed(r, "c_"))?;
    Ok((version, (credential, executor)))
}

/// Parses a stored enum word, or reports the row as corrupt.
pub(crate) fn word<T>(column: &str, value: &str, parse: fn(&str) -> Option<T>) -> Result<T> {
    parse(value).ok_or_else(|| StoreError::Corrupt(format!("{column} holds unknown word {value:?}")))
}

/// [`word`] of a nullable column: null reads as `None`, any other word must parse.
pub(crate) fn opt_word<T>(column: &str, value: Option<String>, parse: fn(&str) -> Option<T>) -> Result<Option<T>> {
    value.map(|v| word(column, &v, parse)).transpose()
}

pub(crate) fn parse_public_id(column: &str, value: &str) -> Result<Uuid> {
    Uuid::parse_str(value).map_err(|_| StoreError::Corrupt(format!("{column} holds a malformed uuid {value:?}")))
}

/// A sweep candidate: `(run_id, id)` of a task row.
pub(crate) fn run_and_task_ids(r: &impl Columns) -> Result<(i64, i64)> {
    Ok((r.int("run_id")?, r.int("id")?))
}

pub(crate) fn account(r: &impl Columns) -> Result<AccountRow> {
    Ok(AccountRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        handle: r.text("handle")?,
        created_at: r.int("created_at")?,
    })
}

pub(crate) fn workspace(r: &impl Columns) -> Result<WorkspaceRow> {
    Ok(WorkspaceRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        account_id: r.int("account_id")?,
        handle: r.text("handle")?,
        created_at: r.int("created_at")?,
    })
}

pub(crate) fn member(r: &impl Columns) -> Result<MemberRow> {
    Ok(MemberRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        account_id: r.int("account_id")?,
        kind: word("members.kind", &r.text("kind")?, MemberKind::parse)?,
        handle: r.text("handle")?,
        display_name: r.text("display_name")?,
        role: word("members.role", &r.text("role")?, MemberRole::parse)?,
        steward_id: r.opt_int("steward_id")?,
        configuration: r.opt_text("configuration")?,
        created_at: r.int("created_at")?,
        updated_at: r.int("updated_at")?,
    })
}

pub(crate) fn executor(r: &impl Columns) -> Result<ExecutorRow> {
    Ok(ExecutorRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        account_id: r.int("account_id")?,
        kind: word("executors.kind", &r.text("kind")?, ExecutorKind::parse)?,
        status: word("executors.status", &r.text("status")?, ExecutorStatus::parse)?,
        display_name: r.text("display_name")?,
        credential_epoch: r.int("credential_epoch")?,
        assignment_scope: word(
            "executors.assignment_scope",
            &r.text("assignment_scope")?,
            AssignmentScope::parse,
        )?,
        manager_id: r.opt_int("manager_id")?,
        agent_id: r.opt_int("agent_id")?,
        served_tools: r.text("served_tools")?,
        environment: r.text("environment")?,
        served_documents: r.text("served_documents")?,
        last_seen_at: r.opt_int("last_seen_at")?,
        created_at: r.int("created_at")?,
    })
}

pub(crate) fn credential(r: &impl Columns) -> Result<CredentialRow> {
    Ok(CredentialRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        plane: word("credentials.plane", &r.text("plane")?, Plane::parse)?,
        member_id: r.opt_int("member_id")?,
        executor_id: r.opt_int("executor_id")?,
        epoch: r.int("epoch")?,
        secret_sha256: r.text("secret_sha256")?,
        expires_at: r.opt_int("expires_at")?,
        revoked_at: r.opt_int("revoked_at")?,
        created_at: r.int("created_at")?,
    })
}

pub(crate) fn standing(value: &str) -> Result<Standing> {
    word("workspace_members.standing", value, Standing::parse)
}

/// A member row with its `standing` column (`sql::WORKSPACE_MEMBERS`).
pub(crate) fn member_with_standing(r: &impl Columns) -> Result<(MemberRow, Standing)> {
    Ok((member(r)?, standing(&r.text("standing")?)?))
}

/// Checks a new member and derives the agent_application executor it needs, if any:
/// `(public id, display name, manager)`.
pub(crate) fn agent_executor_of(new: &NewMember) -> Result<Option<(Uuid, &str, Option<i64>)>> {
    match (new.kind, new.agent_executor_public_id) {
        (MemberKind::Agent, Some(public_id)) => Ok(Some((public_id, new.display_name.as_str(), new.steward_id))),
        (MemberKind::Agent, None) => Err(StoreError::Config(
            "an agent member needs agent_executor_public_id for its agent_application executor".into(),
        )),
        (MemberKind::Human, Some(_)) => Err(StoreError::Config(
            "a human member has no agent_application executor (agent_executor_public_id given)".into(),
        )),
        (MemberKind::Human, None) => Ok(None),
    }
}

/// The text guard over every string of a new member.
pub(crate) fn check_member_text(new: &NewMember) -> Result<()> {
    crate::check_text(&new.handle)?;
    crate::check_text(&new.display_name)
}

pub(crate) fn check_announcement_text(a: &Announcement) -> Result<()> {
    crate::check_text(&a.served_tools)?;
    crate::check_text(&a.environment)?;
    crate::check_text(&a.served_documents)
}

// ---- runs (migration 0002) ----

pub(crate) fn run(r: &impl Columns) -> Result<RunRow> {
    Ok(RunRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        workspace_id: r.int("workspace_id")?,
        created_by_id: r.int("created_by_id")?,
        answering_member_id: r.int("answering_member_id")?,
        declaring_agent_id: r.opt_int("declaring_agent_id")?,
        status: word("runs.status", &r.text("status")?, RunStatus::parse)?,
        hosting: word("runs.hosting", &r.text("hosting")?, Hosting::parse)?,
        approval_mode: word("runs.approval_mode", &r.text("approval_mode")?, ApprovalMode::from_word)?,
        approval_rules: r.opt_text("approval_rules")?.map(|t| approval_rules(&t)).transpose()?,
        default_runner_id: r.opt_int("default_runner_id")?,
        deliverable_task_id: r.opt_int("deliverable_task_id")?,
        revision: r.int("revision")?,
        attention: r.opt_text("attention")?,
        last_event_sequence: r.int("last_event_sequence")?,
        created_at: r.int("created_at")?,
        started_at: r.opt_int("started_at")?,
        ended_at: r.opt_int("ended_at")?,
    })
}

/// A run's stored approval rules, parsed; a list that does not parse is a corrupt row (the
/// gate never reads it as no rules).
fn approval_rules(text: &str) -> Result<ApprovalRules> {
    ApprovalRules::parse(text).map_err(|e| StoreError::Corrupt(format!("runs.approval_rules does not parse: {e}")))
}

/// The stored digest of a frozen context: the SHA-256 of its bytes, lowercase hex, the key of
/// its body in `frozen_contexts` (migration 0014). Computed here, by the task insert
/// ([`crate::sql::INSERT_TASK`], [`crate::sql::INSERT_FROZEN_CONTEXT`]), and by the SQLite
/// migrator for rows written before migration 0006.
pub(crate) fn frozen_digest(frozen: &str) -> String {
    sha256_hex(frozen.as_bytes())
}

/// The SHA-256 of `bytes`, lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in d {
        hex.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    hex
}

pub(crate) fn frozen_head(r: &impl Columns) -> Result<FrozenHead> {
    Ok(FrozenHead {
        id: r.int("id")?,
        kind: word("tasks.kind", &r.text("kind")?, TaskKind::parse)?,
        declaring_task_id: r.opt_int("declaring_task_id")?,
        frozen_digest: r.opt_text("frozen_digest")?,
    })
}

/// The answer of [`crate::sql::TASKS_OF_QUIESCENT_RUN`]: its rows by id, or `None` when it
/// answered none (a run with a row in an open status; a run with no rows has nothing to end).
pub(crate) fn quiescent(mut rows: Vec<TaskEndRow>) -> Option<Vec<TaskEndRow>> {
    rows.sort_unstable_by_key(|r| r.id);
    (!rows.is_empty()).then_some(rows)
}

pub(crate) fn frozen_context(r: &impl Columns) -> Result<Option<String>> {
    r.opt_text("frozen_context")
}

pub(crate) fn task_end(r: &impl Columns) -> Result<TaskEndRow> {
    Ok(TaskEndRow {
        id: r.int("id")?,
        key: r.text("key")?,
        status: word("tasks.status", &r.text("status")?, TaskStatus::parse)?,
        on_failure: word("tasks.on_failure", &r.text("on_failure")?, OnFailure::parse)?,
        failure_resolution: opt_word(
            "tasks.failure_resolution",
            r.opt_text("failure_resolution")?,
            FailureResolution::parse,
        )?,
    })
}

/// A task row with its `frozen_digest`: the reads select the digest, not the body, which
/// `resolve_frozen` fills in (`crate::frozen`).
pub(crate) fn task(r: &impl Columns) -> Result<Pending<TaskRow>> {
    let digest = r.opt_text("frozen_digest")?;
    let value = TaskRow {
        id: r.int("id")?,
        run_id: r.int("run_id")?,
        key: r.text("key")?,
        kind: word("tasks.kind", &r.text("kind")?, TaskKind::parse)?,
        origin: word("tasks.origin", &r.text("origin")?, Origin::from_word)?,
        frozen_context: None,
        created_at: r.int("created_at")?,
        status: word("tasks.status", &r.text("status")?, TaskStatus::parse)?,
        generation: r.int("generation")?,
        on_failure: word("tasks.on_failure", &r.text("on_failure")?, OnFailure::parse)?,
        failure_resolution: opt_word(
            "tasks.failure_resolution",
            r.opt_text("failure_resolution")?,
            FailureResolution::parse,
        )?,
        visibility: word("tasks.visibility", &r.text("visibility")?, Visibility::parse)?,
        mainline: r.boolean("mainline")?,
        branch_of: r.opt_text("branch_of")?,
        pairs_with: r.opt_text("pairs_with")?,
        declaring_task_id: r.opt_int("declaring_task_id")?,
        tool_name: r.opt_text("tool_name")?,
        tool_alias: r.opt_text("tool_alias")?,
        tool_input: r.opt_text("tool_input")?,
        tool_call_id: r.opt_text("tool_call_id")?,
        target_executor_id: r.opt_int("target_executor_id")?,
        addressed_executor_id: r.opt_int("addressed_executor_id")?,
        addressed_role: opt_word(
            "tasks.addressed_role",
            r.opt_text("addressed_role")?,
            ExecutorKind::parse,
        )?,
        effect_profile: r.opt_text("effect_profile")?,
        timeout_ms: r.opt_int("timeout_ms")?,
        await_started_at: r.opt_int("await_started_at")?,
        deadline_at: r.opt_int("deadline_at")?,
        claim_token: r.opt_text("claim_token")?,
        claimed_at: r.opt_int("claimed_at")?,
        claimant_id: r.opt_int("claimant_id")?,
        content: r.opt_text("content")?,
        structured_present: r.boolean("structured_present")?,
        structured_content: r.opt_text("structured_content")?,
        is_error: r.boolean("is_error")?,
        title: r.opt_text("title")?,
        metadata: r.opt_text("metadata")?,
        error_key: r.opt_text("error_key")?,
        error_detail: r.opt_text("error_detail")?,
        approval: r.opt_text("approval")?,
        request_surface: r.opt_text("request_surface")?,
        usage: r.opt_text("usage")?,
        reply: r.opt_text("reply")?,
        resolution_token_sha256: r.opt_text("resolution_token_sha256")?,
        started_at: r.opt_int("started_at")?,
        settled_at: r.opt_int("settled_at")?,
    };
    Ok(Pending { value, digest })
}

pub(crate) fn edge(r: &impl Columns) -> Result<EdgeRow> {
    Ok(EdgeRow {
        task_id: r.int("task_id")?,
        depends_on_id: r.int("depends_on_id")?,
        kind: word("task_edges.kind", &r.text("kind")?, EdgeKind::parse)?,
    })
}

/// One row of `sql::EDGES_INTO_UNLESS_AWAITING`: whether the run holds a kernel-held await, and
/// the edge the row carries (none on the one row of NULLs).
pub(crate) fn edge_or_awaiting(r: &impl Columns) -> Result<(bool, Option<EdgeRow>)> {
    let awaiting = r.int("awaiting")? != 0;
    let edge = match r.opt_int("task_id")? {
        Some(task_id) => Some(EdgeRow {
            task_id,
            depends_on_id: r.int("depends_on_id")?,
            kind: word("task_edges.kind", &r.text("kind")?, EdgeKind::parse)?,
        }),
        None => None,
    };
    Ok((awaiting, edge))
}

/// The edges those rows carry, sorted, or `None` when the run holds an await.
pub(crate) fn edges_unless_awaiting(rows: Vec<(bool, Option<EdgeRow>)>) -> Option<Vec<EdgeRow>> {
    let mut edges = Vec::with_capacity(rows.len());
    for (awaiting, edge) in rows {
        if awaiting {
            return None;
        }
        edges.extend(edge);
    }
    edges.sort_unstable();
    Some(edges)
}

pub(crate) fn event(r: &impl Columns) -> Result<EventRow> {
    Ok(EventRow {
        run_id: r.int("run_id")?,
        sequence: r.int("sequence")?,
        kind: word("events.type", &r.text("type")?, EventKind::parse)?,
        at: r.int("at")?,
        task_key: r.opt_text("task_key")?,
        data: r.text("data")?,
    })
}

pub(crate) fn job(r: &impl Columns) -> Result<JobRow> {
    Ok(JobRow {
        id: r.int("id")?,
        kind: word("jobs.kind", &r.text("kind")?, JobKind::parse)?,
        run_id: r.int("run_id")?,
        task_id: r.opt_int("task_id")?,
        generation: r.int("generation")?,
        available_at: r.int("available_at")?,
        locked_by: r.opt_text("locked_by")?,
        locked_until: r.opt_int("locked_until")?,
        attempts: r.int("attempts")?,
    })
}

/// The rows of a dequeue: a row whose words do not read is answered as unreadable (its id and
/// run), not as a failure of the whole dequeue.
pub(crate) fn dequeued<C: Columns>(rows: &[C]) -> Result<Dequeued> {
    let mut out = Dequeued::default();
    for r in rows {
        match job(r) {
            Ok(job) => out.jobs.push(job),
            Err(StoreError::Corrupt(reason)) => out.unreadable.push(UnreadableJob {
                id: r.int("id")?,
                run_id: r.int("run_id")?,
                reason,
            }),
            Err(e) => return Err(e),
        }
    }
    out.jobs.sort_by_key(|j| j.id);
    out.unreadable.sort_by_key(|j| j.id);
    Ok(out)
}

pub(crate) fn sealed_request(r: &impl Columns) -> Result<SealedRequestRow> {
    Ok(SealedRequestRow {
        id: r.int("id")?,
        task_id: r.int("task_id")?,
        generation: r.int("generation")?,
        record: r.text("record")?,
        body_sha256: r.text("body_sha256")?,
        request_bytes: r.int("request_bytes")?,
        tools_sha256: r.opt_text("tools_sha256")?,
        body: r.bytes("body")?,
        attempts: r.text("attempts")?,
        created_at: r.int("created_at")?,
        record_depth: None,
        body_depth: None,
    })
}

/// A row of [`crate::sql::ROUND_CACHE_FACTS`].
pub(crate) fn round_cache_facts(r: &impl Columns) -> Result<RoundCacheFacts> {
    Ok(RoundCacheFacts {
        key: r.text("key")?,
        status: word("tasks.status", &r.text("status")?, TaskStatus::parse)?,
        usage: r.opt_text("usage")?,
        tools_sha256: r.opt_text("tools_sha256")?,
        sealed: r.opt_int("sealed_id")?.is_some(),
    })
}

/// A row of [`crate::sql::ROUND_FOR_REPLY`].
pub(crate) fn round_for_reply(r: &impl Columns) -> Result<Pending<RoundForReply>> {
    let facts = match r.opt_int("facts_task_id")? {
        None => None,
        Some(task_id) => Some(RoundFactsRow {
            task_id,
            chain_rounds: r.int("facts_chain_rounds")?,
            key_floor: r.int("facts_key_floor")?,
            history: r.text("facts_history")?,
        }),
    };
    let (has_dependents, running_awaits) = (r.boolean("has_dependents")?, r.boolean("running_awaits")?);
    Ok(task(r)?.map(|task| RoundForReply {
        task,
        facts,
        has_dependents,
        running_awaits,
    }))
}

pub(crate) fn round_facts(r: &impl Columns) -> Result<RoundFactsRow> {
    Ok(RoundFactsRow {
        task_id: r.int("task_id")?,
        chain_rounds: r.int("chain_rounds")?,
        key_floor: r.int("key_floor")?,
        history: r.text("history")?,
    })
}

pub(crate) fn receipt(r: &impl Columns) -> Result<ReceiptRow> {
    Ok(ReceiptRow {
        id: r.int("id")?,
        scope_hash: r.text("scope_hash")?,
        envelope_sha256: r.text("envelope_sha256")?,
        status: r.int("status")?,
        body: r.text("body")?,
        expires_at: r.int("expires_at")?,
        created_at: r.int("created_at")?,
    })
}

/// Binds the mutable task columns (`sql::INSERT_TASK` `$7`–`$44`, `sql::UPDATE_TASK`
/// `$16`–`$53`) of a [`TaskRow`] or [`NewTask`], in the statements' order.
macro_rules! bind_task_mutable {
    ($q:expr, $t:expr) => {{
        use $crate::row::bind_each;
        $crate::row::task_mutable_fields!(bind_each, $q, $t)
    }};
}
pub(crate) use bind_task_mutable;

/// Expands `$m!(args… ; field, …)` over a task's mutable columns, in the order of
/// `sql::UPDATE_TASK`'s `$16`–`$53` (each field is named as its column). The one list of them:
/// [`bind_task_mutable!`] and the SQLite engine's narrow update both expand it.
macro_rules! task_mutable_fields {
    ($m:ident $(, $arg:expr)* $(,)?) => {
        $m!($($arg),* ; status, generation, on_failure, failure_resolution, visibility, mainline, branch_of, pairs_with, declaring_task_id, tool_name, tool_alias, tool_input, tool_call_id, target_executor_id, addressed_executor_id, addressed_role, effect_profile, timeout_ms, await_started_at, deadline_at, claim_token, claimed_at, claimant_id, content, structured_present, structured_content, is_error, title, metadata, error_key, error_detail, approval, request_surface, usage, reply, resolution_token_sha256, started_at, settled_at)
    };
}
/// `$q.bind(&$t.f)` for each field (with [`task_mutable_fields!`]).
macro_rules! bind_each {
    ($q:expr, $t:expr ; $($f:ident),*) => {
        $q $(.bind(&$t.$f))*
    };
}
pub(crate) use bind_each;
pub(crate) use task_mutable_fields;

/// The text guard over every string of a task (new or updated).
macro_rules! check_task_text {
    ($t:expr) => {{
        let t = $t;
        for s in [
            &t.branch_of,
            &t.pairs_with,
            &t.tool_name,
            &t.tool_alias,
            &t.tool_input,
            &t.tool_call_id,
            &t.effect_profile,
            &t.claim_token,
            &t.content,
            &t.structured_content,
            &t.title,
            &t.metadata,
            &t.error_key,
            &t.error_detail,
            &t.approval,
            &t.request_surface,
            &t.usage,
            &t.reply,
            &t.resolution_token_sha256,
        ]
        .into_iter()
        .flatten()
        {
            $crate::check_text(s)?;
        }
        Ok::<(), $crate::StoreError>(())
    }};
}

pub(crate) fn check_new_task_text(t: &NewTask) -> Result<()> {
    crate::check_text(&t.key)?;
    if let Some(f) = &t.frozen_context {
        crate::check_text(f)?;
    }
    check_task_text!(t)
}

pub(crate) fn check_task_row_text(t: &TaskRow) -> Result<()> {
    check_task_text!(t)
}

pub(crate) fn check_new_run_text(r: &NewRun) -> Result<()> {
    if let Some(rules) = &r.approval_rules {
        crate::check_text(rules)?;
    }
    Ok(())
}

pub(crate) fn check_run_row_text(r: &RunRow) -> Result<()> {
    match &r.attention {
        Some(a) => crate::check_text(a),
        None => Ok(()),
    }
}

/// The expected statuses as the 12 slots of a conditional statement: the list, padded by
/// repeating its first word. Empty or longer than [`MAX_EXPECTED_STATUSES`] is refused.
pub(crate) fn status_slots(statuses: &[TaskStatus]) -> Result<[TaskStatus; MAX_EXPECTED_STATUSES]> {
    let Some(first) = statuses.first() else {
        return Err(StoreError::Config("expected statuses: name at least one status".into()));
    };
    if statuses.len() > MAX_EXPECTED_STATUSES {
        return Err(StoreError::Config(format!(
            "expected statuses: at most {MAX_EXPECTED_STATUSES}, got {}",
            statuses.len()
        )));
    }
    let mut slots = [*first; MAX_EXPECTED_STATUSES];
    slots[..statuses.len()].copy_from_slice(statuses);
    Ok(slots)
}
