//! The signals seam: everything that must reach another part of the system when state changes,
//! behind one interface ([`Signals`]).
//!
//! - after a commit: a run's live feed catches up ([`Signals::run_events`]), so does a
//!   conversation's ([`Signals::conversation_events`]), the job workers wake
//!   ([`Signals::wake_jobs`]), an executor's push channel gets a frame
//!   ([`Signals::push_to_executor`]: `work_available`, `work_canceled`);
//! - ephemeral, never stored: a run's `executor_progress` and `model_delta` frames
//!   ([`Signals::relay_ephemeral`], [`Ephemeral`]);
//! - an in-flight model call is registered while it runs, so a stop can abort it
//!   ([`Signals::model_call_started`], [`Signals::model_call_ended`],
//!   [`Signals::abort_model_call`]);
//! - the listening ends: a run's feed, a conversation's feed, an executor's channel, a run's
//!   progress ([`Subscription`]), and the workers' wake-up ([`Signals::jobs_woken`]).
//!
//! Two implementations: in process ([`InProcessSignals`]: broadcast channels and a notifier in
//! this process's memory, so a signal reaches this node only), which SQLite's one node uses;
//! and across nodes on one PostgreSQL database ([`PgSignals`]: the same delivery here, plus a
//! `NOTIFY` to the other nodes, which read the facts from the database). Each is a variant of
//! [`Signals`], written here and nowhere else. Executor presence
//! ([`Signals::executor_connected`]) stays per node: it answers for this node's channels.
//!
//! Architecture Invariant: no code outside `signals/` touches a channel, a notifier or the
//! in-flight map; it goes through [`Signals`].
//! Architecture Invariant: nothing is published before its transaction commits (no event on
//! a feed, no wake-up, no push frame for a change that rolled back). The run engine collects
//! its effects (`runs::AfterCommit`) inside the transaction and hands them to this seam only
//! after the commit (`Kernel::publish`); losing a signal loses no state (a reader recovers by
//! polling, or by resuming at a sequence). The one signal given inside a transaction is a
//! stop's [`Signals::abort_model_call`], which no reader sees.

mod handles;
mod in_process;
mod pg;

use nexus_store::{ConversationEventRow, EventRow, Store};
use uuid::Uuid;

use crate::executor::frames::PushFrame;

pub use handles::{Abort, Ephemeral, RecvError, Subscription, TryRecvError};
pub use in_process::InProcessSignals;
pub use pg::PgSignals;

/// How the kernel signals (see the module docs). An enum, not a trait object: dispatch is a
/// match the compiler sees through, on paths (a commit's publish, a worker's wake-up) that the
/// benchmarks watch.
// One value per kernel, held in its state: the size difference costs nothing, and boxing the
// in-process variant would add an indirection to SQLite's publish path.
#[allow(clippy::large_enum_variant)]
pub enum Signals {
    /// This process only (SQLite: one node).
    InProcess(InProcessSignals),
    /// Several nodes on one PostgreSQL database: delivered here as in process and sent to the
    /// other nodes as notices (`LISTEN` / `NOTIFY`, [`PgSignals`]).
    Postgres(PgSignals),
}

impl Signals {
    /// In-process signals; `store` is what a run's live feed catches up from.
    pub fn in_process(store: Store) -> Self {
        Signals::InProcess(InProcessSignals::new(store))
    }

    /// The signals a kernel over `store` uses: across nodes on PostgreSQL ([`PgSignals`], whose
    /// sender and listener tasks start on the current tokio runtime), in process on SQLite —
    /// and on PostgreSQL outside a runtime (a kernel built there serves this process only).
    pub fn for_store(store: Store) -> Self {
        if store.is_shared() && tokio::runtime::Handle::try_current().is_ok() {
            Signals::Postgres(PgSignals::new(store))
        } else {
            Signals::in_process(store)
        }
    }

    /// After a commit that wrote events of run `run_id` (internal id): the run's live feed
    /// catches up, in sequence order and without gaps. `first_known`: the lowest sequence the
    /// transaction is known to have written (`None`: not known; the feed reads from where it
    /// stands).
    pub async fn run_events(&self, run_id: i64, first_known: Option<i64>) {
        match self {
            Signals::InProcess(s) => s.run_events(run_id, first_known).await,
            Signals::Postgres(s) => s.run_events(run_id, first_known).await,
        }
    }

    /// After a commit that wrote events of conversation `conversation_id` (internal id): the
    /// conversation's live feed catches up, in sequence order and without gaps.
    pub async fn conversation_events(&self, conversation_id: i64) {
        match self {
            Signals::InProcess(s) => s.conversation_events(conversation_id).await,
            Signals::Postgres(s) => s.conversation_events(conversation_id).await,
        }
    }

    /// The conversation's durable events published from now on (its live feed). Async: a
    /// feed opened here first learns where the conversation's record stands.
    pub async fn subscribe_conversation(&self, conversation_id: i64) -> Subscription<ConversationEventRow> {
        match self {
            Signals::InProcess(s) => s.subscribe_conversation(conversation_id).await,
            Signals::Postgres(s) => s.local().subscribe_conversation(conversation_id).await,
        }
    }

    /// After a commit that inserted a job: wakes the job workers.
    pub fn wake_jobs(&self) {
        match self {
            Signals::InProcess(s) => s.wake_jobs(),
            Signals::Postgres(s) => s.wake_jobs(),
        }
    }

    /// Resolves when the job workers are woken ([`Signals::wake_jobs`]). A wake-up given while
    /// no worker waits is kept for the next wait.
    pub async fn jobs_woken(&self) {
        match self {
            Signals::InProcess(s) => s.jobs_woken().await,
            Signals::Postgres(s) => s.local().jobs_woken().await,
        }
    }

    /// After a commit: sends `frame` (`work_available`, `work_canceled`) to every open push
    /// channel of executor `executor` (public id). Best effort: with no channel open it is
    /// dropped, and polling the inbox is always sufficient.
    pub fn push_to_executor(&self, executor: Uuid, frame: PushFrame) {
        match self {
            Signals::InProcess(s) => s.push_to_executor(executor, frame),
            Signals::Postgres(s) => s.push_to_executor(executor, frame),
        }
    }

    /// The frames pushed to `executor` from now on (its push channel).
    pub fn subscribe_executor(&self, executor: Uuid) -> Subscription<PushFrame> {
        match self {
            Signals::InProcess(s) => s.subscribe_executor(executor),
            Signals::Postgres(s) => s.local().subscribe_executor(executor),
        }
    }

    /// Whether `executor` has an open push channel here (presence `online`; display only).
    pub fn executor_connected(&self, executor: Uuid) -> bool {
        match self {
            Signals::InProcess(s) => s.executor_connected(executor),
            Signals::Postgres(s) => s.local().executor_connected(executor),
        }
    }

    /// Relays an ephemeral frame to the subscribers of run `run_id` (none: dropped). Never
    /// stored.
    pub fn relay_ephemeral(&self, run_id: i64, frame: Ephemeral) {
        match self {
            Signals::InProcess(s) => s.relay_ephemeral(run_id, frame),
            Signals::Postgres(s) => s.relay_ephemeral(run_id, frame),
        }
    }

    /// The run's ephemeral frames from now on.
    pub fn subscribe_ephemeral(&self, run_id: i64) -> Subscription<Ephemeral> {
        match self {
            Signals::InProcess(s) => s.subscribe_ephemeral(run_id),
            Signals::Postgres(s) => s.local().subscribe_ephemeral(run_id),
        }
    }

    /// The run's durable events published from now on (its live feed).
    pub fn subscribe_run(&self, run_id: i64) -> Subscription<EventRow> {
        match self {
            Signals::InProcess(s) => s.subscribe_run(run_id),
            Signals::Postgres(s) => s.local().subscribe_run(run_id),
        }
    }

    /// Registers the model call of task `task_id` as in flight: the returned [`Abort`] resolves
    /// once [`Signals::abort_model_call`] names the task (an abort given before the call waits
    /// on it is kept). Pair with [`Signals::model_call_ended`].
    pub fn model_call_started(&self, task_id: i64) -> Abort {
        match self {
            Signals::InProcess(s) => s.model_call_started(task_id),
            Signals::Postgres(s) => s.local().model_call_started(task_id),
        }
    }

    /// The model call of task `task_id` is over (answered, failed or aborted).
    pub fn model_call_ended(&self, task_id: i64) {
        match self {
            Signals::InProcess(s) => s.model_call_ended(task_id),
            Signals::Postgres(s) => s.local().model_call_ended(task_id),
        }
    }

    /// Aborts the in-flight model call of task `task_id`, if one is registered here (a stop
    /// that canceled its running round). The stop gives it inside its transaction, before the
    /// commit: the one signal given so (no reader sees it; the aborted call ends its job).
    pub fn abort_model_call(&self, task_id: i64) {
        match self {
            Signals::InProcess(s) => s.abort_model_call(task_id),
            Signals::Postgres(s) => s.abort_model_call(task_id),
        }
    }
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Signals::InProcess(_) => f.write_str("Signals::InProcess"),
            Signals::Postgres(_) => f.write_str("Signals::Postgres"),
        }
    }
}
