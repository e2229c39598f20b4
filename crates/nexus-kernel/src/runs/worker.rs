//! The kernel's job worker (storage-and-scale.md §5, §7).
//!
//! - `model_call` jobs hold a 15-minute lease, renewed while the call is in flight; a job whose
//!   node died is dequeued again when its lease lapses (or at once, when the same node
//!   restarts: [`Runs::recover_leases`]) and re-sends the sealed bytes.
//! - `kernel_tool` jobs are at-most-once: the job row is deleted before the evaluation starts,
//!   so a lost evaluation is settled by the sweep at the row's deadline (`tool_timeout`).
//! - The sweep is a timer, not a job.

use std::future::Future;
use std::time::Duration;

use nexus_store::prelude::*;
use nexus_store::{Dequeued, JobKind, JobRow};
use tokio::task::JoinHandle;

use super::{AfterCommit, KernelToolJob};
use crate::error::{KernelError, KernelResult};
use crate::{Kernel, Runs};

/// How many jobs one dequeue leases.
const BATCH: i64 = 16;

/// How many times a unit of work that met a transient store failure runs again at once: a
/// kernel tool's evaluation, and the units that apply a model call's outcome (its reply, or
/// its failure) with the outcome in hand. The known cause is a PostgreSQL deadlock between
/// two units that lock rows in opposite orders (a child's reply completing the parent's
/// await while the parent's `cancel` stops the child; a held row lock an outside session
/// takes); PostgreSQL aborts one of them, which rolled back whole and only has to run again.
const TRANSIENT_RETRIES: u32 = 2;

/// The pause before such a rerun.
const TRANSIENT_PAUSE: Duration = Duration::from_millis(50);

/// A failure that rolled its unit of work back whole and may pass on a rerun: the store was
/// unavailable (a deadlock victim, a dropped connection, SQLite's busy timeout).
fn is_transient(e: &KernelError) -> bool {
    e.code == nexus_core::codes::Code::Unavailable
}

/// Runs `unit` (one unit of work, and what it publishes) again after [`TRANSIENT_PAUSE`], at
/// most [`TRANSIENT_RETRIES`] times, while it fails transiently ([`is_transient`]). Only for
/// units whose every write is conditional on what they re-read under their lock, so a rerun
/// after a commit whose answer was lost changes nothing. `what` and `task` name it in the log.
pub(crate) async fn rerun_transient<T, F, Fut>(what: &'static str, task: i64, mut unit: F) -> KernelResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = KernelResult<T>>,
{
    let mut attempt = 0;
    loop {
        match unit().await {
            Err(e) if is_transient(&e) && attempt < TRANSIENT_RETRIES => {
                attempt += 1;
                tracing::info!(error = %e, what, task, attempt, "transient store failure; running the unit again");
                tokio::time::sleep(TRANSIENT_PAUSE).await;
            }
            result => return result,
        }
    }
}

impl Runs<'_> {
    /// Startup recovery: releases every job lease held under this node's id by an earlier
    /// process, so its in-flight model calls resume at once.
    pub async fn recover_leases(&self) -> KernelResult<u64> {
        Ok(self.store.release_node_leases(&self.settings.node_id).await?)
    }

    /// Leases up to [`BATCH`] jobs. A leased job whose row does not read (its kind is no
    /// [`JobKind`]) is not run: its run is held in `needs_attention` and the job removed
    /// ([`Kernel::hold_unreadable`]), so it is not dequeued again and again, and the jobs that
    /// read run as usual.
    async fn dequeue(&self) -> KernelResult<Dequeued> {
        let leased = self
            .store
            .dequeue_jobs(
                &self.settings.node_id,
                self.now_ms(),
                self.settings.model_lease_ms,
                BATCH,
            )
            .await?;
        for job in &leased.unreadable {
            tracing::error!(job = job.id, run_id = job.run_id, reason = %job.reason, "corrupt stored row");
            self.hold_unreadable(job.run_id, Some(job.id)).await;
        }
        Ok(leased)
    }
}

impl Kernel {
    /// Runs one job to its end, with the kernel tools its units handed off (below). Errors
    /// are logged: the job's lease lapses and it runs again (a model call is not rerun here:
    /// after its seal a rerun of the same dequeued job would find the round running and take
    /// it for settled; the lapsed lease's dequeue counts the attempt and re-sends the sealed
    /// bytes). The unit that applies a call's outcome is rerun in place instead, with the
    /// outcome in hand ([`rerun_transient`]).
    pub(crate) async fn run_job(&self, job: JobRow) {
        let result = match job.kind {
            JobKind::ModelCall => self.run_model_call(&job).await,
            JobKind::KernelTool => match job.task_id {
                Some(task_id) => Ok(vec![KernelToolJob {
                    job_id: job.id,
                    run_id: job.run_id,
                    task_id,
                    generation: job.generation,
                }]),
                None => self
                    .store
                    .delete_job(job.id)
                    .await
                    .map(|_| Vec::new())
                    .map_err(Into::into),
            },
        };
        match result {
            Ok(handed_off) => self.run_kernel_tools(handed_off).await,
            Err(e) if e.is_corrupt_row() => self.hold_unreadable(job.run_id, Some(job.id)).await,
            Err(e) => {
                tracing::warn!(error = %e, job = job.id, kind = %job.kind, "job failed; it runs again when its lease lapses")
            }
        }
    }

    /// A run whose row (or a row its unit read) does not read stops in `needs_attention`
    /// (`attention.reason = corrupt_row`) instead of running its job again and again, and the
    /// job is dropped: nothing passes a call under words it cannot read. A person repairs the
    /// row, then resolves the run's attention.
    pub(crate) async fn hold_unreadable(&self, run_id: i64, job: Option<i64>) {
        let held = async {
            let mut tx = self.store.begin().await?;
            let held = tx.hold_unreadable_run(run_id, "corrupt_row", self.now_ms()).await?;
            tx.commit().await?;
            if let Some(job) = job {
                self.store.delete_job(job).await?;
            }
            Ok::<bool, nexus_store::StoreError>(held)
        };
        match held.await {
            Ok(held) => {
                tracing::error!(run_id, held, "a run's stored rows do not read; the run needs attention");
                self.publish(vec![AfterCommit::RunEvents(run_id)]).await;
            }
            Err(e) => tracing::warn!(run_id, error = %e, "holding an unreadable run failed"),
        }
    }

    /// Publishes a worker's unit's effects, except the kernel tool jobs the unit inserted,
    /// which are returned: the worker evaluates them at once ([`Kernel::run_kernel_tools`])
    /// instead of waking the queue for them. Their rows stay in the queue until then, so a
    /// node that dies first leaves them to any other node's dequeue.
    pub(crate) async fn publish_handing_off(&self, mut effects: Vec<AfterCommit>) -> Vec<KernelToolJob> {
        let mut handed_off = Vec::new();
        effects.retain(|e| match e {
            AfterCommit::KernelTool(job) => {
                handed_off.push(*job);
                false
            }
            _ => true,
        });
        self.publish(effects).await;
        handed_off
    }

    /// Evaluates kernel tool jobs, and those their evaluations hand off in turn, one after
    /// another. Errors are logged.
    async fn run_kernel_tools(&self, jobs: Vec<KernelToolJob>) {
        let mut queue: std::collections::VecDeque<KernelToolJob> = jobs.into();
        while let Some(job) = queue.pop_front() {
            match self.run_kernel_tool_job(job).await {
                Ok(more) => queue.extend(more),
                Err(e) if e.is_corrupt_row() => self.hold_unreadable(job.run_id, Some(job.job_id)).await,
                Err(e) => tracing::warn!(error = %e, job = job.job_id, "kernel tool job failed"),
            }
        }
    }

    /// A `kernel_tool` job: the row is claimed first (at-most-once: its delete is committed
    /// before the evaluation starts, on PostgreSQL in the evaluation's first round trip; a row
    /// another worker deleted first is its to evaluate), then evaluated; an evaluation that met
    /// a transient store failure rolled back whole, so it is evaluated again, without a second
    /// claim (the row's status under the run lock stops a second evaluation; a lost one is
    /// otherwise settled only by the sweep, at the row's deadline). Returns the kernel tool
    /// jobs the evaluation handed off.
    async fn run_kernel_tool_job(&self, job: KernelToolJob) -> KernelResult<Vec<KernelToolJob>> {
        let mut claim = Some(job.job_id);
        rerun_transient("kernel tool evaluation", job.task_id, || {
            self.evaluate_kernel_tool(job.run_id, job.task_id, job.generation, claim.take())
        })
        .await
    }
}

impl Runs<'_> {
    /// Dequeues and runs the jobs available to this node now, one after another, then runs one
    /// sweep pass. Returns how many jobs it leased (an unreadable one is held, not run). Tests
    /// drive the engine with it.
    pub async fn work_once(&self) -> KernelResult<usize> {
        let turns = self.conversations().open_due_turns().await?;
        let leased = self.dequeue().await?;
        let n = leased.len();
        for job in leased.jobs {
            self.run_job(job).await;
        }
        self.sweep_pass().await;
        Ok(n + turns)
    }

    /// Dequeues and runs the jobs available to this node now, one after another, without the
    /// sweep pass [`Runs::work_once`] adds (the serve loop sweeps on its own timer). Returns
    /// how many jobs it leased. The round benchmark drives the engine with it.
    pub async fn run_jobs_once(&self) -> KernelResult<usize> {
        let leased = self.dequeue().await?;
        let n = leased.len();
        for job in leased.jobs {
            self.run_job(job).await;
        }
        Ok(n)
    }

    /// [`Runs::work_once`] until a pass runs no job (bounded by `max_passes`).
    pub async fn work_until_idle(&self, max_passes: usize) -> KernelResult<usize> {
        let mut total = 0;
        for _ in 0..max_passes {
            let n = self.work_once().await?;
            total += n;
            if n == 0 {
                break;
            }
        }
        Ok(total)
    }

    /// One sweep pass at the given clock (tests move time forward with it).
    pub async fn sweep_at(&self, now: i64) -> KernelResult<usize> {
        self.sweep_once(now).await
    }

    /// The sweep's timer work. The turn pass is not in it: both callers run one ahead of every
    /// dequeue.
    async fn sweep_pass(&self) {
        if let Err(e) = self.read_clock().await {
            tracing::warn!(error = %e, "reading the database clock failed");
        }
        let now = self.now_ms();
        if let Err(e) = self.sweep_once(now).await {
            tracing::warn!(error = %e, "sweep pass failed");
        }
        if let Err(e) = self.store.purge_idempotency_receipts(now).await {
            tracing::warn!(error = %e, "receipt purge failed");
        }
        // Unbound uploads older than a day (uploads.md §5); at most once an hour per process.
        if let Err(e) = self.uploads().reap_uploads_if_due(now).await {
            tracing::warn!(error = %e, "upload reaper failed");
        }
    }

    /// The worker loop of `nexus serve`: recovers this node's leases, then runs jobs as they
    /// arrive (woken after commits, polling every second) and a sweep pass every
    /// `sweep_interval_ms`, until `shutdown` resolves. Jobs run concurrently.
    pub fn spawn_worker<F>(&self, shutdown: F) -> JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let kernel = Kernel::clone(self);
        tokio::spawn(async move {
            if let Err(e) = kernel.runs().recover_leases().await {
                tracing::warn!(error = %e, "lease recovery failed");
            }
            tokio::pin!(shutdown);
            let sweep_every = Duration::from_millis(kernel.settings.sweep_interval_ms.max(10));
            let mut next_sweep = tokio::time::Instant::now();
            loop {
                if tokio::time::Instant::now() >= next_sweep {
                    kernel.runs().sweep_pass().await;
                    next_sweep = tokio::time::Instant::now() + sweep_every;
                }
                if let Err(e) = kernel.conversations().open_due_turns().await {
                    tracing::warn!(error = %e, "turn pass failed");
                }
                match kernel.runs().dequeue().await {
                    Ok(leased) => {
                        let full = leased.len() as i64 == BATCH;
                        for job in leased.jobs {
                            let k = kernel.clone();
                            tokio::spawn(async move { k.run_job(job).await });
                        }
                        if full {
                            continue;
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "job dequeue failed"),
                }
                let wait =
                    Duration::from_secs(1).min(next_sweep.saturating_duration_since(tokio::time::Instant::now()));
                tokio::select! {
                    _ = &mut shutdown => break,
                    _ = kernel.state.signals.jobs_woken() => {}
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        })
    }
}
