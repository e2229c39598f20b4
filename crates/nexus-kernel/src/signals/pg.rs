//! Signals across nodes on one PostgreSQL database (storage-and-scale.md §6): every signal is
//! delivered on this node exactly as in process ([`InProcessSignals`]) and also sent to the
//! other nodes as a notice (`NOTIFY`) naming what changed; a node receiving one reads the
//! facts from the database, as its own commits would have made it.
//!
//! - Sending never waits on the database: a notice is queued to one sender task, which sends
//!   whatever is queued in one statement (so a burst of commits is one round trip). The queue
//!   is filled after the commit (the seam's publish), so no notice names a change that rolled
//!   back; the one exception, a stop's abort, is checked by its receiver (below).
//! - Each node holds one dedicated `LISTEN` connection (its listener task). A notice this node
//!   sent is recognized by its node tag and skipped (it was delivered here already).
//! - A lost listening connection is opened again; then every live feed here catches up from
//!   the database from the last sequence it sent, and the job workers wake. Executor pushes
//!   are level-triggered (a runner also polls its inbox), so one missed is a delay, not a
//!   loss; progress frames are ephemeral.
//! - An abort names a task; the receiving node aborts its in-flight call only once the
//!   database shows the round no longer running (the stop's commit), so a stop that rolled
//!   back aborts nothing elsewhere.
//!
//! The payloads (one channel per database and schema, `nexus_store::Store::notice_channel`),
//! each `<kind>|<node>|…`:
//!
//! | kind | rest | on the receiving node |
//! | --- | --- | --- |
//! | `e` | `<run id>|<first sequence or ->` | the run's live feed catches up |
//! | `c` | `<conversation id>` | the conversation's live feed catches up |
//! | `j` | | the job workers wake |
//! | `w` | `<executor public id>|<frame JSON>` | the frame goes to that executor's channels here |
//! | `p` | `<run id>|<kind>|<frame JSON>` | the ephemeral frame goes to the run's feeds here |
//! | `a` | `<task id>` | that model call, if in flight here, is aborted |
//!
//! A frame whose payload would pass `NOTICE_PAYLOAD_MAX` is delivered on this node only.

use std::sync::Arc;
use std::time::Duration;

use nexus_store::prelude::*;
use nexus_store::{NOTICE_PAYLOAD_MAX, Store, TaskStatus};
use tokio::sync::{mpsc, watch};
use uuid::Uuid;

use super::{Ephemeral, InProcessSignals};
use crate::executor::frames::PushFrame;

/// The most notices one statement sends.
const SEND_BATCH: usize = 512;

/// How long a failed send or listen waits before trying again, at first and at most.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// How often, and how many times, a received abort checks that its stop committed.
const ABORT_CHECK_EVERY: Duration = Duration::from_millis(100);
const ABORT_CHECKS: u32 = 100;

/// The PostgreSQL implementation of [`super::Signals`].
pub struct PgSignals {
    /// Delivery on this node.
    local: Arc<InProcessSignals>,
    /// Notices for the sender task.
    outbox: mpsc::UnboundedSender<String>,
    /// This process's tag in every notice it sends.
    node: Arc<str>,
    /// Dropped with these signals: the sender and listener tasks end.
    _stop: watch::Sender<()>,
}

impl PgSignals {
    /// Signals over `store` (PostgreSQL), starting the sender and listener tasks on the current
    /// tokio runtime.
    pub(super) fn new(store: Store) -> Self {
        let local = Arc::new(InProcessSignals::new(store.clone()));
        // The random tail of a UUIDv7 (its head is the time).
        let node: Arc<str> = Arc::from(&Uuid::now_v7().simple().to_string()[16..]);
        let (outbox, queued) = mpsc::unbounded_channel();
        let (stop, stopped) = watch::channel(());
        tokio::spawn(send_notices(store.clone(), queued, stopped.clone()));
        tokio::spawn(listen(store, local.clone(), node.clone(), stopped));
        Self {
            local,
            outbox,
            node,
            _stop: stop,
        }
    }

    /// Delivery on this node (the subscriptions and the in-flight map).
    pub(super) fn local(&self) -> &InProcessSignals {
        &self.local
    }

    /// Queues a notice `<kind>|<node>|<rest>` (dropped when too long to send: this node had it).
    fn notice(&self, kind: char, rest: std::fmt::Arguments<'_>) {
        let payload = format!("{kind}|{}|{rest}", self.node);
        if payload.len() <= NOTICE_PAYLOAD_MAX {
            let _ = self.outbox.send(payload);
        }
    }

    pub(super) async fn run_events(&self, run_id: i64, first_known: Option<i64>) {
        match first_known {
            Some(first) => self.notice('e', format_args!("{run_id}|{first}")),
            None => self.notice('e', format_args!("{run_id}|-")),
        }
        self.local.run_events(run_id, first_known).await;
    }

    pub(super) async fn conversation_events(&self, conversation_id: i64) {
        self.notice('c', format_args!("{conversation_id}"));
        self.local.conversation_events(conversation_id).await;
    }

    pub(super) fn wake_jobs(&self) {
        self.notice('j', format_args!(""));
        self.local.wake_jobs();
    }

    pub(super) fn push_to_executor(&self, executor: Uuid, frame: PushFrame) {
        self.notice('w', format_args!("{executor}|{}", frame.to_text()));
        self.local.push_to_executor(executor, frame);
    }

    pub(super) fn relay_ephemeral(&self, run_id: i64, frame: Ephemeral) {
        self.notice('p', format_args!("{run_id}|{}|{}", frame.kind, frame.data));
        self.local.relay_ephemeral(run_id, frame);
    }

    pub(super) fn abort_model_call(&self, task_id: i64) {
        self.notice('a', format_args!("{task_id}"));
        self.local.abort_model_call(task_id);
    }
}

/// The sender task: sends what is queued, in order, a batch per statement, until the signals
/// are dropped and the queue is drained. A failed send is tried again (a notice lost for good
/// only delays a remote reader, which also catches up on its next notice or poll).
async fn send_notices(store: Store, mut queued: mpsc::UnboundedReceiver<String>, mut stopped: watch::Receiver<()>) {
    let mut batch = Vec::new();
    loop {
        batch.clear();
        let first = tokio::select! {
            p = queued.recv() => p,
            _ = stopped.changed() => None,
        };
        let Some(first) = first else { return };
        batch.push(first);
        while batch.len() < SEND_BATCH {
            match queued.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        let mut wait = RETRY_FIRST;
        for attempt in 0..3 {
            match store.notify_all(&batch).await {
                Ok(()) => break,
                Err(e) => {
                    tracing::warn!(error = %e, attempt, notices = batch.len(), "sending notices failed");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(RETRY_MAX);
                }
            }
        }
    }
}

/// The listener task: holds the `LISTEN` connection, opening it again when lost (then
/// catching up), and delivers other nodes' notices here, until the signals are dropped.
async fn listen(store: Store, local: Arc<InProcessSignals>, node: Arc<str>, mut stopped: watch::Receiver<()>) {
    let mut wait = RETRY_FIRST;
    let mut first = true;
    loop {
        let opened = tokio::select! {
            l = store.listen() => l,
            _ = stopped.changed() => return,
        };
        let mut listener = match opened {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "opening the notice listener failed; trying again");
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stopped.changed() => return,
                }
                wait = (wait * 2).min(RETRY_MAX);
                continue;
            }
        };
        wait = RETRY_FIRST;
        if !first {
            tracing::info!("notice listener connected again; catching up");
            local.resync().await;
        }
        first = false;
        loop {
            let received = tokio::select! {
                r = listener.recv() => r,
                _ = stopped.changed() => return,
            };
            match received {
                Ok(Some(notice)) => deliver(&store, &local, &node, &notice.payload).await,
                Ok(None) => {
                    tracing::info!("notice listener reconnected; catching up");
                    local.resync().await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "notice listener lost; opening it again");
                    break;
                }
            }
        }
    }
}

/// Delivers one notice from another node here (a malformed one is ignored).
async fn deliver(store: &Store, local: &Arc<InProcessSignals>, node: &str, payload: &str) {
    let mut parts = payload.splitn(3, '|');
    let (Some(kind), Some(from)) = (parts.next(), parts.next()) else {
        return;
    };
    if from == node {
        return;
    }
    let rest = parts.next().unwrap_or("");
    match kind {
        "e" => {
            let Some((run, first)) = rest.split_once('|') else {
                return;
            };
            let Ok(run_id) = run.parse::<i64>() else { return };
            local.run_events(run_id, first.parse().ok()).await;
        }
        "c" => {
            if let Ok(id) = rest.parse() {
                local.conversation_events(id).await;
            }
        }
        "j" => local.wake_jobs(),
        "w" => {
            let Some((executor, frame)) = rest.split_once('|') else {
                return;
            };
            if let (Ok(executor), Some(frame)) = (executor.parse(), PushFrame::from_text(frame)) {
                local.push_to_executor(executor, frame);
            }
        }
        "p" => {
            let mut p = rest.splitn(3, '|');
            let (Some(run), Some(kind), Some(data)) = (p.next(), p.next(), p.next()) else {
                return;
            };
            if let (Ok(run_id), Some(kind), Ok(data)) =
                (run.parse(), Ephemeral::kind_named(kind), serde_json::from_str(data))
            {
                local.relay_ephemeral(run_id, Ephemeral { kind, data });
            }
        }
        "a" => {
            if let Ok(task_id) = rest.parse::<i64>()
                && local.has_model_call(task_id)
            {
                tokio::spawn(abort_when_committed(store.clone(), local.clone(), task_id));
            }
        }
        _ => {}
    }
}

/// Aborts the call of `task_id` here once the database shows its round no longer running (the
/// stop that sent the abort committed); gives up, aborting nothing, if it stays running.
async fn abort_when_committed(store: Store, local: Arc<InProcessSignals>, task_id: i64) {
    for _ in 0..ABORT_CHECKS {
        match store.task_by_id(task_id).await {
            Ok(Some(t)) if t.status == TaskStatus::Running => {}
            Ok(_) => {
                local.abort_model_call(task_id);
                return;
            }
            Err(e) => tracing::warn!(error = %e, task_id, "checking a remote abort failed"),
        }
        tokio::time::sleep(ABORT_CHECK_EVERY).await;
    }
}
