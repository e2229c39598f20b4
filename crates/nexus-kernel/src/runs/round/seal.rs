//! The seal (providers.md §4): the job's entry point, the request built and encoded, and one
//! transaction that stores the sealed record and body bytes and moves the round to `running`.

use nexus_providers::{EncodedRequest, ModelRequest, Provider};
use nexus_store::prelude::*;
use nexus_store::{
    JobRow, LockReads, Locked, NewSealedRequest, RunLock, RunStatus, SealedBase, SealedRequestRow, TaskKind, TaskRow,
    TaskStatus,
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
        let blobs = self.uploads().media_bytes(&request.entries).await?;
        let mut encoded = provider.encode_continuing(&request, &blobs, built.prior);
        // A turn's seed round past its history budget drops whole oldest turns (runs.md §12).
        if let (Some(turn), Ok(enc)) = (&turn, &encoded)
            && task.declaring_task_id.is_none()
        {
            let budget = history::budget_bytes(&capabilities, &RequestSurface::of(task));
            if enc.body.len() > budget {
                let judge = self.uploads().media_judge(task.run_id, Some(&capabilities)).await?;
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
        let (new_sealed, record_prefix) = self.sealed_request(task, &request, &enc, anchor.as_ref());
        let hosted = turn.as_ref().map(|turn| Hosted {
            turn,
            steers: &steers,
            history: request.entries.len() as i64 - 1,
        });
        let Some(sealed) = self.seal_unit(job, task, &new_sealed, hosted).await? else {
            return Ok(None);
        };
        // The continuation's request starts from these entries.
        let next_anchor = SealedAnchor {
            sealed_id: sealed.id,
            record_prefix,
            body_sha256: new_sealed.body_sha256,
            body: std::sync::Arc::new(enc.body.clone()),
            record_depth: sealed.record_depth,
            body_depth: sealed.body_depth,
        };
        self.remember_sealed(task, request.entries, enc.chain, next_anchor);
        self.publish(vec![AfterCommit::RunEvents(task.run_id)]).await;
        Ok(Some((enc, prev)))
    }

    /// The sealed request of `enc`, stored against the round this one continues (`anchor`):
    /// only what is new is written, except at the snapshot depth, where the whole bytes go out
    /// (the store would otherwise rebuild them from the chain behind the base). With it, the
    /// length of the record's prefix the next round may share.
    fn sealed_request(
        &self,
        task: &TaskRow,
        request: &ModelRequest,
        enc: &EncodedRequest,
        anchor: Option<&(SealedAnchor, usize)>,
    ) -> (NewSealedRequest, usize) {
        let surface = RequestSurface::of(task);
        let whole_record = anchor.is_some_and(|(a, _)| at_snapshot(a.record_depth));
        let whole_body = anchor.is_some_and(|(a, _)| at_snapshot(a.body_depth));
        let (record, record_prefix) = SealedRecord::text_after(
            request,
            &surface,
            enc,
            anchor
                .filter(|_| !whole_record)
                .map(|(a, shared)| (*shared, a.record_prefix)),
        );
        let body_keep = anchor
            .filter(|_| !whole_body)
            .map(|(a, _)| common_prefix(&a.body, &enc.body));
        let new = NewSealedRequest {
            task_id: task.id,
            generation: task.generation,
            record,
            body_sha256: enc.body_sha256_hex(),
            request_bytes: enc.body.len() as i64,
            tools_sha256: enc.tools_sha256_hex(),
            body: enc.body[body_keep.unwrap_or(0)..].to_vec(),
            attempts: "[]".into(),
            created_at: self.now_ms(),
            record_base: anchor.filter(|_| !whole_record).map(|(a, _)| SealedBase {
                id: Some(a.sealed_id),
                sha256: None,
                keep: a.record_prefix as i64,
                depth: a.record_depth,
            }),
            body_base: anchor.zip(body_keep).map(|((a, _), keep)| SealedBase {
                id: None,
                sha256: Some(a.body_sha256.clone()),
                keep: keep as i64,
                depth: a.body_depth,
            }),
        };
        (new, record_prefix)
    }

    /// The seal's unit: the run locked, the request stored when the round is sealable
    /// ([`LockReads::Seal`]), the hosted turn's steers consumed, and the round moved to
    /// `running`. `None` when the round is no longer sealable (the job is settled here, and a
    /// round of a stopping run canceled).
    async fn seal_unit(
        &self,
        job: &JobRow,
        task: &TaskRow,
        new: &NewSealedRequest,
        hosted: Option<Hosted<'_>>,
    ) -> KernelResult<Option<SealedRequestRow>> {
        let now = new.created_at;
        let mut tx = self.store.begin().await?;
        let lock = RunLock {
            run_id: task.run_id,
            with: LockReads::Seal(new),
        };
        let Locked {
            mut run,
            task: current,
            sealed,
            ..
        } = tx.lock(lock).await?;
        let Some(mut current) = current.filter(|c| c.generation == task.generation && c.status == TaskStatus::Waiting)
        else {
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            return Ok(None);
        };
        let Some(sealed) = sealed else {
            // The round is sealable but for its run, which is no longer running.
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
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            self.publish(effects).await;
            return Ok(None);
        };
        if let Some(hosted) = hosted {
            for steer in hosted.steers {
                tx.consume_input(steer.id, hosted.turn.id).await?;
            }
            if task.declaring_task_id.is_none() {
                // The seed round: how much history preceded its prompt.
                tx.set_replay_from(run.id, hosted.history).await?;
            }
        }
        self.transition(&mut tx, &mut run, &mut current, TaskStatus::Running, now)
            .await?;
        tx.commit().await?;
        Ok(Some(sealed))
    }
}

/// A hosted turn's part in its round's seal: the turn, the steers the round takes, and how
/// much history preceded the prompt (written for the turn's seed round).
struct Hosted<'a> {
    turn: &'a nexus_store::TurnRow,
    steers: &'a [nexus_store::InputRow],
    history: i64,
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
