//! The seal (providers.md §4): the job's entry point, the request built and encoded, and one
//! transaction that stores the sealed record and body bytes and moves the round to `running`.

use nexus_providers::{EncodedRequest, Provider};
use nexus_store::{
    Engine, JobRow, NewSealedRequest, RunRow, RunStatus, SealedBase, SealedRequestRow, StoreError, TaskKind, TaskRow,
    TaskStatus, Tx,
};
use serde_json::Value;

use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::columns::SealedRecord;
use crate::runs::round::chain::PrevRecord;
use crate::runs::round::history;
use crate::runs::sealed::SealedAnchor;
use crate::runs::settle::SettleError;
use crate::runs::{AfterCommit, FrozenContext, KernelToolJob, RequestSurface, graph_error};

impl Kernel {
    /// The turn a round's run hosts, for a round whose frozen memory names a conversation.
    async fn hosted_turn_of(&self, task: &TaskRow) -> KernelResult<Option<nexus_store::TurnRow>> {
        let hosted = FrozenContext::of(task)
            .memory
            .get("conversation_public_id")
            .is_some_and(Value::is_string);
        if !hosted {
            return Ok(None);
        }
        Ok(self.store.turn_of_run(task.run_id).await?)
    }

    /// Runs one `model_call` job: seal (or, for a recovered lease, reuse the seal), call,
    /// apply. Returns the kernel tool jobs the reply made, for the worker to evaluate at once.
    pub(crate) async fn run_model_call(&self, job: &JobRow) -> KernelResult<Vec<KernelToolJob>> {
        let Some(task_id) = job.task_id else {
            self.store.delete_job(job.id).await?;
            return Ok(Vec::new());
        };
        // The round with its predecessor and the predecessor's fan: what a seal reads.
        let neighbourhood = self.store.task_neighbourhood(job.run_id, task_id).await?;
        let task = neighbourhood.iter().find(|t| t.id == task_id).cloned();
        let Some(task) = task.filter(|t| t.generation == job.generation && t.kind == TaskKind::Model) else {
            self.store.delete_job(job.id).await?;
            return Ok(Vec::new());
        };
        let surface = RequestSurface::of(&task);
        let (provider, model) = match self.providers.resolve(&surface.model) {
            Ok(p) => p,
            Err(e) => {
                let detail = format!("{} does not resolve: {}", surface.model, e.as_str());
                self.fail_round(
                    job,
                    &task,
                    nexus_providers::provider::keys::PROVIDER_ERROR,
                    Some(detail),
                    None,
                )
                .await?;
                return Ok(Vec::new());
            }
        };
        let (enc, attempts, prev) = match task.status {
            TaskStatus::Waiting => {
                let sealed = self.seal(job, &task, neighbourhood, provider.as_ref(), &model).await?;
                match sealed {
                    Some((enc, prev)) => (enc, Vec::new(), prev),
                    None => return Ok(Vec::new()),
                }
            }
            TaskStatus::Running if job.attempts > 1 => {
                // A lease recovered from a dead process: send the sealed bytes again.
                let Some(sealed) = self.store.sealed_request(task.id, task.generation).await? else {
                    self.store.delete_job(job.id).await?;
                    return Ok(Vec::new());
                };
                let options = SealedRecord::read(&sealed.record).unwrap_or_default().request_options;
                let attempts: Vec<Value> = serde_json::from_str(&sealed.attempts).unwrap_or_default();
                (
                    EncodedRequest::new(options.url, options.headers, sealed.body),
                    attempts,
                    None,
                )
            }
            _ => {
                self.store.delete_job(job.id).await?;
                return Ok(Vec::new());
            }
        };
        self.call_and_apply(job, &task, provider, enc, attempts, prev).await
    }

    /// The seal transaction. `None` when the round is no longer sealable (the job is settled
    /// here). With the encoded request comes the predecessor's record, when the request was
    /// built from the predecessor and its fan alone.
    pub(crate) async fn seal(
        &self,
        job: &JobRow,
        task: &TaskRow,
        neighbourhood: Vec<TaskRow>,
        provider: &dyn Provider,
        model: &str,
    ) -> KernelResult<Option<(EncodedRequest, Option<PrevRecord>)>> {
        let capabilities = provider.capabilities(model);
        let turn = self.hosted_turn_of(task).await?;
        // A continuation of a hosted turn takes the steers bound to it (runs.md §12).
        let steers = match &turn {
            Some(turn) if task.declaring_task_id.is_some() && task.mainline => {
                self.store.steers_of_turn(turn.id).await?
            }
            _ => Vec::new(),
        };
        let steer_texts: Vec<String> = steers.iter().filter_map(|s| s.content.clone()).collect();
        let built = self
            .build_request(task, neighbourhood, &capabilities, &steer_texts)
            .await?;
        let (mut request, prev, mut anchor) = (built.request, built.prev, built.anchor);
        let blobs = self.media_bytes(&request.entries).await?;
        let mut encoded = provider.encode_continuing(&request, &blobs, built.prior);
        // A turn's seed round past its history budget drops whole oldest turns (runs.md §12).
        if let (Some(turn), Ok(enc)) = (&turn, &encoded)
            && task.declaring_task_id.is_none()
        {
            let budget = history::budget_bytes(&capabilities, &RequestSurface::of(task));
            if enc.body.len() > budget {
                let judge = self.media_judge(task.run_id, Some(&capabilities)).await?;
                self.trim_history(turn, &mut request, budget, &judge).await?;
                encoded = provider.encode_continuing(&request, &blobs, None);
                anchor = None;
            }
        }
        let enc = match encoded {
            Ok(enc) => enc,
            Err(e) => {
                self.fail_round(job, task, e.key, e.detail, None).await?;
                return Ok(None);
            }
        };
        let surface = RequestSurface::of(task);
        // Stored against the round this one continues: only what is new is written, except at
        // the snapshot depth, where the whole bytes go out (the store would otherwise rebuild
        // them from the chain behind the base).
        let whole_record = anchor.as_ref().is_some_and(|(a, _)| at_snapshot(a.record_depth));
        let whole_body = anchor.as_ref().is_some_and(|(a, _)| at_snapshot(a.body_depth));
        let (record, record_prefix) = SealedRecord::text_after(
            &request,
            &surface,
            &enc,
            anchor
                .as_ref()
                .filter(|_| !whole_record)
                .map(|(a, shared)| (*shared, a.record_prefix)),
        );
        let body_keep = anchor
            .as_ref()
            .filter(|_| !whole_body)
            .map(|(a, _)| common_prefix(&a.body, &enc.body));
        let body_sha256 = enc.body_sha256_hex();
        let now = self.now_ms();
        let new_sealed = NewSealedRequest {
            task_id: task.id,
            generation: task.generation,
            record,
            body_sha256: body_sha256.clone(),
            request_bytes: enc.body.len() as i64,
            tools_sha256: enc.tools_sha256_hex(),
            body: enc.body[body_keep.unwrap_or(0)..].to_vec(),
            attempts: "[]".into(),
            created_at: now,
            record_base: anchor.as_ref().filter(|_| !whole_record).map(|(a, _)| SealedBase {
                id: Some(a.sealed_id),
                sha256: None,
                keep: a.record_prefix as i64,
                depth: a.record_depth,
            }),
            body_base: anchor.as_ref().zip(body_keep).map(|((a, _), keep)| SealedBase {
                id: None,
                sha256: Some(a.body_sha256.clone()),
                keep: keep as i64,
                depth: a.body_depth,
            }),
        };
        let (mut tx, mut run, current, sealed) = self.begin_seal(task, &new_sealed).await?;
        let Some(mut current) = current else {
            tx.delete_job_with_unit(job.id).await?;
            tx.commit().await?;
            return Ok(None);
        };
        if current.generation != task.generation || current.status != TaskStatus::Waiting {
            tx.delete_job_with_unit(job.id).await?;
            tx.commit().await?;
            return Ok(None);
        }
        if run.status != RunStatus::Running {
            let mut effects = Vec::new();
            if (run.status == RunStatus::Canceling || run.status.is_terminal())
                && self
                    .settle_with_error(
                        &mut tx,
                        &mut run,
                        &mut current,
                        TaskStatus::Canceled,
                        SettleError::new(graph_error::RUN_CANCELED, None),
                        now,
                    )
                    .await?
            {
                effects = self.after_settle(&mut tx, &mut run, &current, now).await?;
            }
            tx.delete_job_with_unit(job.id).await?;
            tx.commit().await?;
            self.publish(effects).await;
            return Ok(None);
        }
        if let Some(turn) = &turn {
            for steer in &steers {
                tx.consume_input(steer.id, turn.id).await?;
            }
            if task.declaring_task_id.is_none() {
                // The seed round: how much history preceded its prompt.
                tx.set_replay_from(run.id, request.entries.len() as i64 - 1).await?;
            }
        }
        let sealed = match sealed {
            Some(sealed) => sealed,
            None => tx.insert_sealed_request(new_sealed).await?,
        };
        self.transition(&mut tx, &mut run, &mut current, TaskStatus::Running, now)
            .await?;
        tx.commit().await?;
        // The continuation's request starts from these entries.
        let next_anchor = SealedAnchor {
            sealed_id: sealed.id,
            record_prefix,
            body_sha256,
            body: std::sync::Arc::new(enc.body.clone()),
            record_depth: sealed.record_depth,
            body_depth: sealed.body_depth,
        };
        self.remember_sealed(task, request.entries, enc.chain, next_anchor);
        self.publish(vec![AfterCommit::RunEvents(run.id)]).await;
        Ok(Some((enc, prev)))
    }
}

impl Kernel {
    /// The seal's unit, its run lock and the round as it stands under it, with the sealed
    /// request when the store inserted it with the lock (PostgreSQL: one round trip,
    /// [`nexus_store::Tx::lock_run_with_task_sealing`]). A round that is no longer sealable
    /// gets a unit without the insert: the first is rolled back, and the lock taken again.
    async fn begin_seal(
        &self,
        task: &TaskRow,
        new: &NewSealedRequest,
    ) -> KernelResult<(Tx, RunRow, Option<TaskRow>, Option<SealedRequestRow>)> {
        let mut tx = self.store.begin().await?;
        match tx.lock_run_with_task_sealing(task.run_id, task.id, new).await {
            Ok(lock) => {
                let sealable = lock.run.status == RunStatus::Running
                    && lock
                        .task
                        .as_ref()
                        .is_some_and(|t| t.generation == task.generation && t.status == TaskStatus::Waiting);
                if sealable || lock.sealed.is_none() {
                    return Ok((tx, lock.run, lock.task, lock.sealed));
                }
                tx.rollback().await?;
            }
            // Sealed already, by another unit (`Conflict`), or no row to seal (`NotFound`): the
            // plain lock below reads the round as it stands.
            Err(StoreError::Conflict(_) | StoreError::NotFound(_)) => drop(tx),
            Err(e) => return Err(e.into()),
        }
        let mut tx = self.store.begin().await?;
        let (run, current) = tx.lock_run_with_task(task.run_id, task.id).await?;
        Ok((tx, run, current, None))
    }
}

/// Whether a delta on a base stored at `depth` would be stored whole
/// ([`nexus_store::SNAPSHOT_DEPTH`]); `None`: not known here, the store decides.
fn at_snapshot(depth: Option<i64>) -> bool {
    depth.is_some_and(|d| d + 1 >= nexus_store::SNAPSHOT_DEPTH)
}

/// How many leading bytes two bodies share (compared in blocks: the bodies of one chain share
/// all but their last few hundred bytes).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= n && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}
