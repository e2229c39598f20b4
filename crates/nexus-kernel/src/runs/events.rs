//! Durable events and the in-process live feed (runs.md §11, storage-and-scale.md §3, §6).
//!
//! Events are appended inside the transaction that makes the change ([`Kernel::emit`]); after
//! the commit, [`Kernel::publish`] wakes the run's subscribers. The feed catches up from the
//! store, so every subscriber receives the run's events in sequence order without gaps, even
//! when a transaction's effects list did not name every event it wrote.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use nexus_store::{Engine, EventRow, RunRow, Tx};
use serde_json::Value;
use tokio::sync::broadcast;

use super::AfterCommit;
use crate::Kernel;
use crate::error::KernelResult;

/// Per-run broadcast channels.
#[derive(Default)]
pub struct Hub {
    runs: Mutex<HashMap<i64, RunFeed>>,
}

#[derive(Clone)]
struct RunFeed {
    sender: broadcast::Sender<EventRow>,
    /// The last sequence sent (`None` until the first publish after the feed opened).
    last_sent: Arc<tokio::sync::Mutex<Option<i64>>>,
}

impl Hub {
    /// A receiver for the run's events published from now on.
    pub fn subscribe(&self, run_id: i64) -> broadcast::Receiver<EventRow> {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.entry(run_id)
            .or_insert_with(|| RunFeed {
                sender: broadcast::channel(1024).0,
                last_sent: Arc::new(tokio::sync::Mutex::new(None)),
            })
            .sender
            .subscribe()
    }

    fn feed(&self, run_id: i64) -> Option<RunFeed> {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        let feed = runs.get(&run_id)?;
        if feed.sender.receiver_count() == 0 {
            runs.remove(&run_id);
            return None;
        }
        Some(feed.clone())
    }
}

impl Kernel {
    /// Appends one event inside `tx` and records the trigger for after the commit.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn emit(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        kind: &str,
        task_key: Option<&str>,
        data: Value,
        at: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let row = tx.append_event(run.id, kind, task_key, &data, at).await?;
        run.last_event_sequence = row.sequence;
        effects.push(AfterCommit::Event(row));
        Ok(())
    }

    /// Publishes a committed transaction's effects: wakes the workers, and lets each touched
    /// run's live feed catch up. Call only after the commit.
    pub(crate) async fn publish(&self, effects: Vec<AfterCommit>) {
        let mut runs: BTreeSet<i64> = BTreeSet::new();
        let mut known: HashMap<i64, i64> = HashMap::new();
        for effect in effects {
            match effect {
                AfterCommit::Event(row) => {
                    runs.insert(row.run_id);
                    let min = known.entry(row.run_id).or_insert(row.sequence);
                    *min = (*min).min(row.sequence);
                }
                AfterCommit::RunEvents(run_id) => {
                    runs.insert(run_id);
                }
                AfterCommit::WakeJobs => self.runtime.jobs.notify_one(),
                AfterCommit::WorkAvailable {
                    executor_public_id,
                    kind,
                    run,
                    task_key,
                } => self.push_work(executor_public_id, kind, run, &task_key),
                AfterCommit::WorkCanceled {
                    executor_public_id,
                    run,
                    task_key,
                } => self.push_cancel(executor_public_id, run, &task_key),
            }
        }
        for run_id in runs {
            self.catch_up(run_id, known.get(&run_id).copied()).await;
        }
    }

    async fn catch_up(&self, run_id: i64, first_known: Option<i64>) {
        let Some(feed) = self.runtime.hub.feed(run_id) else {
            return;
        };
        let mut last = feed.last_sent.lock().await;
        let after = match (*last, first_known) {
            (Some(l), _) => l,
            (None, Some(first)) => first - 1,
            (None, None) => match self.store.latest_event_sequence(run_id).await {
                Ok(s) => {
                    *last = Some(s);
                    return;
                }
                Err(_) => return,
            },
        };
        let mut after = after;
        loop {
            let rows = match self.store.events_after(run_id, after, 500).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::warn!(error = %e, run_id, "live feed catch-up failed");
                    return;
                }
            };
            let n = rows.len();
            for row in rows {
                after = row.sequence;
                let _ = feed.sender.send(row);
            }
            *last = Some(after);
            if n < 500 {
                break;
            }
        }
    }
}
