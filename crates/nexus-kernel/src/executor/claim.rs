//! Claim, claim status and extend (executor.md §7, §8).
//!
//! A claim takes the run lock, re-reads the row inside the transaction and checks the nine
//! preconditions of §7 in the spec's order; the first failure answers. A grant writes a new
//! random claim token (UUIDv4), snapshots the claimant, and re-arms the park's one clock
//! (`await_started_at = now`, `deadline_at = now + timeout_ms`). The token is compared in
//! constant time everywhere ([`token_matches`]); exclusivity comes from the run lock and the
//! conditional update, so concurrent claims from one address compete and one wins.
//!
//! A claim may carry an `Idempotency-Key` (docs/decisions/108-claim-idempotency-key.md).
//! Its token is then derived from the key ([`keyed_token`]), so the same claimant repeating
//! the same claim while it stands gets the same grant back, with no change and no event: a
//! claim committed by a node that died before answering, or whose answer the network lost, is
//! not orphaned until its deadline. Any other claim of a claimed row is still `already_claimed`.

use nexus_api::inbox::{ClaimState, ClaimStatusReply};
use nexus_core::codes::Code;
use nexus_store::prelude::*;
use nexus_store::{
    ExecutorKind, ExecutorRow, ExecutorStatus, RunInAccount, RunRow, RunStatus, Standing, TaskKind, TaskRow,
    TaskStatus, Tx,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::inbox::{ClaimGrant, ClaimReply, row_kind};
use crate::auth::ExecutorPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::names::Names;
use crate::runs::AfterCommit;
use crate::runs::gate::{served_entry, serves};
use crate::runs::unit::Unit;
use crate::{Executor, Kernel, time};

/// The body of `POST X/inbox/{run}/{task}/extend`, read by [`Extend::parse`]. Reading never
/// refuses: the spec checks the row and the claimant before the body's `timeout_ms`
/// (executor.md §8), so a bad member is kept as absent and refused in that order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extend {
    /// The presented token (`""` when absent or not a string).
    pub claim_token: String,
    /// The extension asked for, when it is a positive integer.
    pub timeout_ms: Option<i64>,
}

impl Extend {
    /// Reads `{claim_token, timeout_ms}`.
    pub fn parse(body: &Value) -> Extend {
        let timeout = body.get("timeout_ms");
        Extend {
            claim_token: body
                .get("claim_token")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            timeout_ms: timeout
                .filter(|v| v.is_i64() || v.is_u64())
                .and_then(Value::as_i64)
                .filter(|ms| *ms > 0),
        }
    }
}

/// The longest extension (executor.md §8): one hour, or the announced `timeout_ms` if shorter.
pub const EXTENSION_MAX_MS: i64 = 3_600_000;

fn refuse(code: Code, message: impl Into<String>) -> KernelError {
    KernelError::new(code, message)
}

/// Whether `presented` is the row's current claim token (constant-time; false when the row
/// holds none). The one comparison every claim-scoped door uses (commit, extend, claim
/// status, progress, attachment reads).
pub fn token_matches(task: &TaskRow, presented: &str) -> bool {
    match task.claim_token.as_deref() {
        Some(stored) if !presented.is_empty() => {
            stored.len() == presented.len() && bool::from(stored.as_bytes().ct_eq(presented.as_bytes()))
        }
        _ => false,
    }
}

/// Whether `executor` is the row's claimant presenting its current token.
pub fn is_claimant(task: &TaskRow, executor: &ExecutorRow, presented: &str) -> bool {
    // Evaluate the token first and always, so both failures cost the same.
    let token = token_matches(task, presented);
    token && task.claimant_id == Some(executor.id)
}

/// The claim token of a claim made with the key `key` by `executor` on `task` in the run
/// `run`: a UUIDv4 built from SHA-256 over a domain word, the executor, the run, the row's id
/// and generation, and the key. The key is the claimant's secret (the SDK draws a random one
/// per claim), so the token is as unguessable as a drawn one, and the claimant that repeats
/// the key recomputes it; a retried generation or another row gets another token.
pub(crate) fn keyed_token(executor: Uuid, run: Uuid, task: &TaskRow, key: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(b"nexus-claim-token-v1\0");
    hash.update(executor.as_bytes());
    hash.update(run.as_bytes());
    hash.update(task.id.to_be_bytes());
    hash.update(task.generation.to_be_bytes());
    hash.update(key.as_bytes());
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid().to_string()
}

/// What the claim preconditions allow.
#[derive(Debug, PartialEq, Eq)]
enum Claimable {
    /// A new claim.
    Grant,
    /// The claimant repeating its keyed claim, which stands: the same grant again.
    Repeat,
}

/// A parked row's live deadline has passed.
pub(crate) fn deadline_passed(task: &TaskRow, now: i64) -> bool {
    task.deadline_at.is_some_and(|d| d <= now)
}

/// Door facts that belong to the executor and the run's principals, not to the row: whether
/// the executor is eligible for the run (executor.md §1) and whether the run's creator keeps
/// write standing. The claim door reads them inside its unit of work, beside the row:
/// on SQLite the writer's page cache serves them warm, where a reader connection starts cold
/// after every commit (docs/decisions/111-sqlite-readers-and-door-reads.md).
pub(crate) struct DoorFacts {
    pub eligible: bool,
    pub creator_standing: bool,
}

/// What a claim-scoped door opened: its unit of work, the run as the executor's account
/// finds it (with the workspace's public id and the creator's standing), and the run and row
/// read under the run lock.
pub(crate) struct Opened {
    pub tx: Tx,
    pub found: RunInAccount,
    pub run: RunRow,
    pub task: TaskRow,
}

/// The run's creator keeps write standing (errors-and-auth.md §2); the doors answer 409
/// `not_authorized` ([`no_standing`]) when it does not.
pub(crate) fn creator_has_standing(found: &RunInAccount) -> bool {
    found.creator_standing.is_some_and(|s| s >= Standing::Write)
}

pub(crate) fn no_standing() -> KernelError {
    refuse(
        Code::NotAuthorized,
        "the run's creator no longer holds write standing in its workspace",
    )
}

impl Kernel {
    /// The run `run` in the executor's account, with its workspace's public id and its
    /// creator's standing (one read), or 404 `not_found`.
    pub(crate) async fn executor_run(&self, p: &ExecutorPrincipal, run: Uuid) -> KernelResult<RunInAccount> {
        self.store
            .run_in_account(run, p.executor.account_id)
            .await?
            .ok_or_else(|| refuse(Code::NotFound, "no such task in this executor's account"))
    }

    /// Opens a claim-scoped door's unit of work: the run `run` in the executor's account (404
    /// `not_found`), then the run lock and the row re-read under it (404 for no such row). An
    /// error rolls the unit back.
    pub(crate) async fn open_door(&self, p: &ExecutorPrincipal, run: Uuid, key: &str) -> KernelResult<Opened> {
        self.open_door_for(p, run, key, false).await
    }

    /// [`Kernel::open_door`] for a claim, whose eligibility check reads the run's answering
    /// member next: on PostgreSQL it comes with the door's first round trip
    /// (`Tx::open_claim_door`).
    async fn open_claim_door(&self, p: &ExecutorPrincipal, run: Uuid, key: &str) -> KernelResult<Opened> {
        self.open_door_for(p, run, key, true).await
    }

    async fn open_door_for(&self, p: &ExecutorPrincipal, run: Uuid, key: &str, claim: bool) -> KernelResult<Opened> {
        let mut tx = self.store.begin().await?;
        match Self::open_in(&mut tx, p, run, key, claim).await {
            Ok((found, run, task)) => Ok(Opened { tx, found, run, task }),
            Err(e) => {
                tx.rollback().await?;
                Err(e)
            }
        }
    }

    async fn open_in(
        tx: &mut Tx,
        p: &ExecutorPrincipal,
        run: Uuid,
        key: &str,
        claim: bool,
    ) -> KernelResult<(RunInAccount, RunRow, TaskRow)> {
        let not_found = || refuse(Code::NotFound, "no such task in this executor's account");
        let account_id = p.executor.account_id;
        let opened = if claim {
            tx.open_claim_door(run, account_id, key).await?
        } else {
            tx.open_door(run, account_id, key).await?
        };
        let (found, task) = opened.ok_or_else(not_found)?;
        let task = task.ok_or_else(not_found)?;
        let run = found.run.clone();
        Ok((found, run, task))
    }

    /// Whether the authenticated executor may take this run's work (executor.md §1): a runner
    /// eligible for the run's answering principal, or the declaring agent's own active
    /// address. The credential the request authenticated with is the runner's proof of a
    /// current transport credential.
    pub(crate) async fn executor_eligible(
        &self,
        tx: &mut Tx,
        run: &RunRow,
        p: &ExecutorPrincipal,
    ) -> KernelResult<bool> {
        let executor = &p.executor;
        match executor.kind {
            ExecutorKind::Runner => match tx.member_by_id(run.answering_member_id).await? {
                Some(m) => {
                    self.runner_eligible_with(executor, &m, Some(&p.credential), self.now_ms())
                        .await
                }
                None => Ok(false),
            },
            ExecutorKind::AgentApplication => Ok(executor.status == ExecutorStatus::Active
                && executor.agent_id.is_some()
                && executor.agent_id == run.declaring_agent_id),
        }
    }

    /// The door facts of the authenticated executor on the run it found, read inside the unit.
    pub(crate) async fn door_facts(
        &self,
        tx: &mut Tx,
        found: &RunInAccount,
        p: &ExecutorPrincipal,
    ) -> KernelResult<DoorFacts> {
        Ok(DoorFacts {
            eligible: self.executor_eligible(tx, &found.run, p).await?,
            creator_standing: creator_has_standing(found),
        })
    }

    /// The claim preconditions 2–9 of executor.md §7, in order, on the row read under the
    /// run lock. `keyed`: the token a keyed claim would write ([`keyed_token`]).
    fn check_claimable(
        run: &RunRow,
        task: &TaskRow,
        executor: &ExecutorRow,
        facts: &DoorFacts,
        keyed: Option<&str>,
        now: i64,
    ) -> KernelResult<Claimable> {
        // 2. Addressed here (kernel rows have no addressee).
        if task.addressed_executor_id != Some(executor.id) {
            return Err(refuse(
                Code::NotAddressedHere,
                "the row is not addressed to this executor",
            ));
        }
        // 3. Asks and approvals are committed or decided, never claimed.
        let kind = row_kind(task);
        if kind != "tool_call" {
            return Err(refuse(
                Code::NotClaimableKind,
                format!("an {kind} row cannot be claimed"),
            ));
        }
        // 4. A runner target that is another executor.
        if task.target_executor_id.is_some_and(|t| t != executor.id) {
            return Err(refuse(Code::NotAddressedHere, "the row is routed to another runner"));
        }
        // 5. Eligibility for the run's answering principal.
        if !facts.eligible {
            return Err(refuse(Code::NotEligible, "this executor is not eligible for the run"));
        }
        // 6. Still serves the tool (the current announcement).
        let name = task.tool_name.as_deref().unwrap_or("");
        if !serves(executor, name) {
            return Err(refuse(
                Code::ToolNotServed,
                format!("this executor no longer serves `{name}`"),
            ));
        }
        // 7. The run's creator keeps write standing.
        if !facts.creator_standing {
            return Err(no_standing());
        }
        // 8. A dispatched park on a live run. A park whose deadline passed is the sweep's.
        let live_run = matches!(run.status, RunStatus::Running | RunStatus::Canceling);
        if task.status != TaskStatus::Dispatched || !live_run {
            return Err(refuse(
                Code::TaskNotClaimable,
                format!("the row is {} on a {} run", task.status, run.status),
            ));
        }
        // 9. Claimed once per generation: an expired claim is never granted again. The
        // claimant repeating its keyed claim while it stands is answered the same grant.
        let standing = !deadline_passed(task, now);
        let repeat = task.claimed_at.is_some();
        if repeat && !(standing && keyed.is_some_and(|token| is_claimant(task, executor, token))) {
            return Err(refuse(Code::AlreadyClaimed, "the row was already claimed"));
        }
        if !standing {
            return Err(refuse(Code::TaskNotClaimable, "the row's deadline has passed"));
        }
        Ok(if repeat { Claimable::Repeat } else { Claimable::Grant })
    }
}

impl Executor<'_> {
    /// `POST X/inbox/{run}/{task}/claim` at the process clock.
    pub async fn claim(&self, p: &ExecutorPrincipal, run: Uuid, key: &str) -> KernelResult<ClaimReply> {
        self.claim_at(p, run, key, self.now_ms()).await
    }

    /// `POST X/inbox/{run}/{task}/claim` at `now` → `{task: <inbox row>, claim: {claim_token,
    /// deadline_at}}`.
    pub async fn claim_at(&self, p: &ExecutorPrincipal, run: Uuid, key: &str, now: i64) -> KernelResult<ClaimReply> {
        self.claim_keyed_at(p, run, key, None, now).await
    }

    /// `POST X/inbox/{run}/{task}/claim` with an optional `Idempotency-Key`, at the process
    /// clock.
    pub async fn claim_keyed(
        &self,
        p: &ExecutorPrincipal,
        run: Uuid,
        key: &str,
        idempotency_key: Option<&str>,
    ) -> KernelResult<ClaimReply> {
        self.claim_keyed_at(p, run, key, idempotency_key, self.now_ms()).await
    }

    /// [`Executor::claim_at`] with an optional `Idempotency-Key` (1–64 visible ASCII characters,
    /// else 400 `parameter_invalid`): the token is derived from it, and the claimant repeating
    /// it while the claim stands gets the same grant, changing nothing.
    pub async fn claim_keyed_at(
        &self,
        p: &ExecutorPrincipal,
        run: Uuid,
        key: &str,
        idempotency_key: Option<&str>,
        now: i64,
    ) -> KernelResult<ClaimReply> {
        if let Some(k) = idempotency_key {
            crate::runs::create::idempotency::check_idempotency_key(k)?;
        }
        let run_public_id = run;
        let Opened {
            mut tx,
            found,
            mut run,
            task,
        } = self.open_claim_door(p, run, key).await?;
        let ws_public = found.workspace_public_id;
        let facts = match self.door_facts(&mut tx, &found, p).await {
            Ok(facts) => facts,
            Err(e) => {
                tx.rollback().await?;
                return Err(e);
            }
        };
        let keyed = idempotency_key.map(|k| keyed_token(p.executor.public_id, run_public_id, &task, k));
        match Kernel::check_claimable(&run, &task, &p.executor, &facts, keyed.as_deref(), now) {
            Ok(Claimable::Grant) => {}
            Ok(Claimable::Repeat) => {
                // The standing grant, as the first answer gave it; nothing changes.
                tx.rollback().await?;
                let (token, deadline) = (task.claim_token.clone(), task.deadline_at);
                let token = token.expect("a claimed row holds its token");
                let deadline = time::iso(deadline.expect("a claimed park has a deadline"));
                return self.grant_reply(p, &run, ws_public, &task, token, deadline).await;
            }
            Err(e) => {
                tx.rollback().await?;
                return Err(e);
            }
        }
        let token = keyed.unwrap_or_else(|| uuid::Builder::from_random_bytes(rand::random()).into_uuid().to_string());
        let budget = task.timeout_ms.unwrap_or(crate::runs::gate::DEFAULT_TOOL_TIMEOUT_MS);
        let mut next = task.clone();
        next.claim_token = Some(token.clone());
        next.claimed_at = Some(now);
        next.claimant_id = Some(p.executor.id);
        next.await_started_at = Some(now);
        next.deadline_at = Some(now + budget);
        if !tx
            .update_task(nexus_store::TaskUpdate::new(
                &next,
                task.generation,
                &[TaskStatus::Dispatched],
            ))
            .await?
        {
            tx.rollback().await?;
            return Err(refuse(Code::AlreadyClaimed, "the row was already claimed"));
        }
        let deadline = time::iso(now + budget);
        let data = json!({"executor_public_id": p.executor.public_id.to_string(), "deadline_at": deadline});
        let mut effects = Vec::new();
        self.emit(
            &mut Unit::of(&mut tx, &mut run, now, &mut effects),
            nexus_store::EventKind::TaskClaimed,
            Some(&next.key),
            data,
        )
        .await?;
        tx.commit().await?;
        self.publish(effects).await;
        self.grant_reply(p, &run, ws_public, &next, token, deadline).await
    }

    /// `GET X/inbox/{run}/{task}/claim` with `Claim-Token` → `{claim: {active}}`. No side
    /// effects. A missing or blank token is the route's 400 `parameter_missing`.
    pub async fn claim_status(
        &self,
        p: &ExecutorPrincipal,
        run: Uuid,
        key: &str,
        token: &str,
    ) -> KernelResult<ClaimStatusReply> {
        if token.trim().is_empty() {
            return Err(refuse(Code::ParameterMissing, "the Claim-Token header is required"));
        }
        let run = self.executor_run(p, run).await?.run;
        let task = self
            .store
            .task_by_key(run.id, key)
            .await?
            .ok_or_else(|| refuse(Code::NotFound, "no such task in this executor's account"))?;
        if !is_claimant(&task, &p.executor, token) {
            return Err(refuse(Code::NotClaimant, "the caller does not hold this claim"));
        }
        Ok(ClaimStatusReply {
            claim: ClaimState {
                active: task.status == TaskStatus::Dispatched,
            },
        })
    }

    /// `POST X/inbox/{run}/{task}/extend` at the process clock.
    pub async fn extend(&self, p: &ExecutorPrincipal, run: Uuid, key: &str, body: &Extend) -> KernelResult<ClaimReply> {
        self.extend_at(p, run, key, body, self.now_ms()).await
    }

    /// `POST X/inbox/{run}/{task}/extend` at `now`: `{claim_token, timeout_ms}` → the grant's
    /// shape. The new deadline is `now + timeout_ms`, applied by shifting `await_started_at`;
    /// the token and the row's `timeout_ms` are unchanged.
    pub async fn extend_at(
        &self,
        p: &ExecutorPrincipal,
        run: Uuid,
        key: &str,
        body: &Extend,
        now: i64,
    ) -> KernelResult<ClaimReply> {
        let Opened {
            mut tx,
            found,
            mut run,
            task,
        } = self.open_door(p, run, key).await?;
        let ws_public = found.workspace_public_id;
        let checked = self.check_extend(&run, &task, &p.executor, body, now);
        let ms = match checked {
            Ok(ms) => ms,
            Err(e) => {
                tx.rollback().await?;
                return Err(e);
            }
        };
        let token = body.claim_token.clone();
        let budget = task.timeout_ms.unwrap_or(crate::runs::gate::DEFAULT_TOOL_TIMEOUT_MS);
        let mut next = task.clone();
        next.deadline_at = Some(now + ms);
        next.await_started_at = Some(now + ms - budget);
        if !tx
            .update_task(
                nexus_store::TaskUpdate::new(&next, task.generation, &[TaskStatus::Dispatched])
                    .with_claim_token(Some(&token)),
            )
            .await?
        {
            tx.rollback().await?;
            return Err(refuse(Code::NotExtendable, "the claim is no longer extendable"));
        }
        let deadline = time::iso(now + ms);
        // runs.md §11: the new deadline, who extended, and the extension asked for.
        let data = json!({"deadline_at": deadline, "by": p.executor.public_id.to_string(), "timeout_ms": ms});
        let mut effects: Vec<AfterCommit> = Vec::new();
        self.emit(
            &mut Unit::of(&mut tx, &mut run, now, &mut effects),
            nexus_store::EventKind::TaskDeadlineExtended,
            Some(&next.key),
            data,
        )
        .await?;
        tx.commit().await?;
        self.publish(effects).await;
        self.grant_reply(p, &run, ws_public, &next, token, deadline).await
    }

    /// The claim and extend replies: the row as the unit left it, and the grant.
    async fn grant_reply(
        &self,
        p: &ExecutorPrincipal,
        run: &RunRow,
        ws_public: Uuid,
        row: &TaskRow,
        claim_token: String,
        deadline_at: String,
    ) -> KernelResult<ClaimReply> {
        let mut known = Names::knowing(&p.executor, Some((run.workspace_id, ws_public)));
        Ok(ClaimReply {
            task: self.inbox_row(&mut known, run, row).await?,
            claim: ClaimGrant {
                claim_token,
                deadline_at,
            },
        })
    }

    /// The four checks of executor.md §8, in order; the extension in ms.
    fn check_extend(
        &self,
        run: &RunRow,
        task: &TaskRow,
        executor: &ExecutorRow,
        body: &Extend,
        now: i64,
    ) -> KernelResult<i64> {
        // 1. A claimed, dispatched park on a live run, before its deadline.
        let live_run = !run.status.is_terminal();
        if task.kind != TaskKind::Tool
            || task.status != TaskStatus::Dispatched
            || task.claimed_at.is_none()
            || !live_run
            || deadline_passed(task, now)
        {
            return Err(refuse(Code::NotExtendable, "the row is not an active claim"));
        }
        // 2. The claimant with the current token.
        if !is_claimant(task, executor, &body.claim_token) {
            return Err(refuse(Code::NotClaimant, "the caller does not hold this claim"));
        }
        // 3. A positive integer.
        let ms = body
            .timeout_ms
            .ok_or_else(|| refuse(Code::InvalidTimeoutMs, "timeout_ms must be a positive integer"))?;
        // 4. At most min(announced timeout_ms, one hour).
        let announced = served_entry(executor, task.tool_name.as_deref().unwrap_or(""))
            .and_then(|e| e.get("timeout_ms").and_then(Value::as_i64));
        let cap = announced.map_or(EXTENSION_MAX_MS, |a| a.min(EXTENSION_MAX_MS));
        if ms > cap {
            return Err(refuse(
                Code::ExtensionTooLong,
                format!("timeout_ms {ms} exceeds the longest extension, {cap} ms"),
            )
            .with_extra("max_timeout_ms", json!(cap)));
        }
        Ok(ms)
    }
}
