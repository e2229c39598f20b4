//! The provider call (providers.md §8): the sealed bytes sent outside any transaction, retried
//! with backoff, each attempt recorded; a round that cannot be called fails here.
//!
//! Retry policy: at most the instance's `max_attempts` (else the kernel's default) in total;
//! only retryable errors (`provider_overloaded` without `x-should-retry: false`) are retried;
//! the wait before attempt k+1 is the upstream's `retry-after-ms` / `retry-after` when given
//! (capped at 60 s by the adapter), else a full-jitter draw from `[0, backoff_k]`. While a
//! streaming reply arrives, its text goes out as `model_delta` frames on the run's live feed
//! (never stored).

use std::sync::Arc;
use std::time::Duration;

use nexus_providers::{DeltaSink, EncodedRequest, ModelReply, Provider, ProviderError};
use nexus_store::prelude::*;
use nexus_store::{JobRow, LockReads, Locked, RunLock, TaskRow, TaskStatus};
use rand::Rng;
use serde_json::{Value, json};

use crate::error::KernelResult;
use crate::runs::KernelToolJob;
use crate::runs::round::chain::PrevRecord;
use crate::runs::settle::SettleError;
use crate::runs::worker::rerun_transient;
use crate::signals::{Ephemeral, Signals};
use crate::{Kernel, time};

/// The SSE event name of a streamed text delta (runs.md §11).
pub const MODEL_DELTA: &str = Ephemeral::MODEL_DELTA;

/// Relays a streaming reply's text to the run's live feed as `model_delta` frames
/// `{task_key, delta}`.
struct DeltaRelay<'a> {
    signals: &'a Signals,
    run_id: i64,
    task_key: &'a str,
}

impl DeltaSink for DeltaRelay<'_> {
    fn text(&self, delta: &str) {
        self.signals.relay_ephemeral(
            self.run_id,
            Ephemeral {
                kind: MODEL_DELTA,
                data: json!({"task_key": self.task_key, "delta": delta}),
            },
        );
    }
}

impl Kernel {
    /// Sends the sealed bytes (with retries) and applies the outcome. Returns the kernel tool
    /// jobs the reply's expansion made, for the worker to evaluate at once.
    pub(crate) async fn call_and_apply(
        &self,
        job: &JobRow,
        task: &TaskRow,
        provider: Arc<dyn Provider>,
        enc: EncodedRequest,
        mut attempts: Vec<Value>,
        prev: Option<PrevRecord>,
    ) -> KernelResult<Vec<KernelToolJob>> {
        let abort = self.state.signals.model_call_started(task.id);
        let outcome = self
            .send_with_retries(job, task, provider.as_ref(), &enc, &mut attempts, &abort)
            .await;
        self.state.signals.model_call_ended(task.id);
        // The last attempt is recorded by the transaction that applies its outcome.
        let pending = serde_json::to_string(&attempts).expect("attempts serialize");
        match outcome? {
            None => {
                // Stopped: the stop already canceled the round.
                self.store.delete_job(job.id).await?;
                Ok(Vec::new())
            }
            Some(Ok(reply)) => self.apply_reply(job, task, &reply, prev, &pending).await,
            Some(Err(e)) => {
                rerun_transient("model call failure", task.id, || {
                    self.fail_round(job, task, e.key, e.detail.clone(), Some(&pending))
                })
                .await?;
                Ok(Vec::new())
            }
        }
    }

    /// Sends until an attempt succeeds, fails for good, or the round is stopped (`None`). Each
    /// attempt is pushed onto `attempts`; an attempt that is retried is stored before its
    /// backoff, and the last one is left for the caller's transaction.
    pub(crate) async fn send_with_retries(
        &self,
        job: &JobRow,
        task: &TaskRow,
        provider: &dyn Provider,
        enc: &EncodedRequest,
        attempts: &mut Vec<Value>,
        abort: &crate::signals::Abort,
    ) -> KernelResult<Option<Result<ModelReply, ProviderError>>> {
        let max = provider
            .max_attempts()
            .unwrap_or(self.settings.provider_max_attempts)
            .max(1) as usize;
        let deltas = DeltaRelay {
            signals: &self.state.signals,
            run_id: task.run_id,
            task_key: &task.key,
        };
        loop {
            let renew = async {
                loop {
                    tokio::time::sleep(Duration::from_millis(self.settings.lease_renew_ms)).await;
                    let _ = self
                        .store
                        .renew_job_lease(
                            job.id,
                            &self.settings.node_id,
                            self.now_ms(),
                            self.settings.model_lease_ms,
                        )
                        .await;
                }
            };
            let result = tokio::select! {
                r = provider.send(enc, &deltas) => r,
                _ = abort.notified() => return Ok(None),
                _ = renew => unreachable!("the renewal loop never ends"),
            };
            let mut attempt = json!({"at": time::iso(self.now_ms())});
            match &result {
                Ok(_) => {}
                Err(e) => {
                    if let Some(s) = e.http_status {
                        attempt["http_status"] = json!(s);
                    }
                    attempt["error_key"] = json!(e.key);
                }
            }
            attempts.push(attempt);
            match result {
                Err(e) if e.is_retryable() && attempts.len() < max => {
                    let mut tx = self.store.begin().await?;
                    tx.put_sealed_attempts(
                        task.id,
                        task.generation,
                        &serde_json::to_string(&attempts).expect("attempts serialize"),
                    )
                    .await?;
                    tx.commit().await?;
                    let backoff = self.backoff_ms(&e, attempts.len() - 1);
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(backoff)) => {}
                        _ = abort.notified() => return Ok(None),
                    }
                }
                other => return Ok(Some(other)),
            }
        }
    }

    /// The wait before the attempt after failed attempt `k` (0-based): the upstream's
    /// `retry-after`, else a full-jitter draw from `[0, provider_backoff_ms[k]]`.
    fn backoff_ms(&self, e: &ProviderError, k: usize) -> u64 {
        if let Some(ms) = e.retry_after_ms {
            return ms;
        }
        let base = &self.settings.provider_backoff_ms;
        let ceiling = base.get(k).or(base.last()).copied().unwrap_or(0);
        if ceiling == 0 {
            0
        } else {
            rand::rng().random_range(0..=ceiling)
        }
    }

    /// Fails a round (`waiting` or `running`) with a model error key. `attempts`: the sealed
    /// record's attempts to store in the same transaction.
    pub(crate) async fn fail_round(
        &self,
        job: &JobRow,
        task: &TaskRow,
        key: &str,
        detail: Option<String>,
        attempts: Option<&str>,
    ) -> KernelResult<()> {
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        let lock = RunLock {
            run_id: task.run_id,
            with: LockReads::Task(task.id),
        };
        let Locked {
            mut run, task: current, ..
        } = tx.lock(lock).await?;
        if let Some(attempts) = attempts {
            tx.put_sealed_attempts(task.id, task.generation, attempts).await?;
        }
        let mut effects = Vec::new();
        if let Some(mut current) = current
            && current.generation == task.generation
            && matches!(current.status, TaskStatus::Waiting | TaskStatus::Running)
            && self
                .settle_with_error(
                    &mut tx,
                    &mut run,
                    &mut current,
                    TaskStatus::Failed,
                    SettleError::new(key, detail),
                    now,
                )
                .await?
        {
            effects = self.after_settle(&mut tx, &mut run, &current, now).await?;
        }
        tx.delete_job(job.id).await?;
        tx.commit().await?;
        self.publish(effects).await;
        Ok(())
    }
}
