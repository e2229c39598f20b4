//! Durable events and their publication (runs.md §11, storage-and-scale.md §3, §6).
//!
//! Events are appended inside the transaction that makes the change ([`Kernel::emit`]); after
//! the commit, [`Kernel::publish`] hands the transaction's effects to the signals seam
//! (`crate::signals`): each touched run's live feed catches up from the store, the workers
//! wake, executors get their push frames.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::AfterCommit;
use super::unit::Unit;
use crate::Kernel;
use crate::error::KernelResult;

impl Kernel {
    /// Appends one event inside `tx` and records the trigger for after the commit.
    pub(crate) async fn emit(
        &self,
        u: &mut Unit<'_>,
        kind: nexus_store::EventKind,
        task_key: Option<&str>,
        data: Value,
    ) -> KernelResult<()> {
        let row = u.tx.append_event(u.run.id, kind, task_key, &data, u.now).await?;
        u.run.last_event_sequence = row.sequence;
        u.effects.push(AfterCommit::Event(row));
        Ok(())
    }

    /// Publishes a committed transaction's effects through the signals seam: wakes the
    /// workers, pushes executor frames, and lets each touched run's live feed catch up (from
    /// the lowest sequence the effects name, when they name one). Call only after the commit.
    pub(crate) async fn publish(&self, effects: Vec<AfterCommit>) {
        let mut runs: BTreeSet<i64> = BTreeSet::new();
        let mut conversations: BTreeSet<i64> = BTreeSet::new();
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
                AfterCommit::ConversationEvents(conversation_id) => {
                    conversations.insert(conversation_id);
                }
                AfterCommit::WakeJobs | AfterCommit::KernelTool(_) => self.state.signals.wake_jobs(),
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
            self.state.signals.run_events(run_id, known.get(&run_id).copied()).await;
        }
        for conversation_id in conversations {
            self.state.signals.conversation_events(conversation_id).await;
        }
    }
}

#[cfg(test)]
mod tests {
    /// The event types the store holds are words the wire names: no stored type reaches a
    /// client as a word its SDK does not know.
    #[test]
    fn every_stored_event_type_is_a_wire_word() {
        use nexus_api::conversations::ConversationEventKind as WireConversation;
        use nexus_api::events::EventKind as Wire;
        for kind in nexus_store::EventKind::ALL {
            assert!(!matches!(Wire::from(kind.as_str()), Wire::Other(_)), "{kind}");
        }
        for kind in nexus_store::ConversationEventKind::ALL {
            let wire = WireConversation::from(kind.as_str());
            assert!(!matches!(wire, WireConversation::Other(_)), "{kind}");
        }
    }
}
