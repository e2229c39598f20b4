//! In-process signals: broadcast channels, a notifier and the in-flight map, in this process's
//! memory (a signal reaches this node only).
//!
//! - A run's live feed (runs.md §11, storage-and-scale.md §3, §6) is a broadcast channel per
//!   run with subscribers. A commit's trigger makes it catch up from the store, so every
//!   subscriber receives the run's events in sequence order without gaps, even when a
//!   transaction's effects did not name every event it wrote.
//! - A conversation's live feed (runs.md §12) is the same, per conversation. Its trigger names
//!   no sequence, so a new feed learns where the conversation stands when it opens, before
//!   any trigger can read it.
//! - Executor push channels (executor.md §10) and run progress relays (executor.md §11) are
//!   broadcast channels keyed by executor and by run, created by a subscriber and dropped at
//!   the first send that finds no subscriber left.
//! - The job workers wait on one notifier; in-flight model calls are a map of task id to the
//!   call's abort notifier.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use nexus_store::prelude::*;
use nexus_store::{ConversationEventRow, EventRow, Store};
use tokio::sync::{Notify, broadcast};
use uuid::Uuid;

use super::{Abort, Ephemeral, Subscription};
use crate::executor::frames::PushFrame;

/// Events buffered per run or conversation feed before a slow subscriber starts lagging (it
/// re-reads the store).
const FEED_BUFFER: usize = 1024;

/// Frames buffered per executor channel before a slow reader starts losing them (it recovers
/// by polling its inbox).
const EXECUTOR_CHANNEL_BUFFER: usize = 256;

/// Progress frames buffered per run.
const PROGRESS_BUFFER: usize = 256;

/// How many events one catch-up read takes.
const CATCH_UP_PAGE: i64 = 500;

/// The in-process implementation of [`super::Signals`].
pub struct InProcessSignals {
    /// Where a run's or a conversation's feed catches up from.
    store: Store,
    /// Per-run live feeds.
    runs: Feeds<EventRow>,
    /// Per-conversation live feeds.
    conversations: Feeds<ConversationEventRow>,
    /// Woken after a commit that inserted a job.
    jobs: Notify,
    /// Per-executor push channels, by public id.
    executors: Channels<Uuid, PushFrame>,
    /// Per-run progress relays, by internal run id.
    progress: Channels<i64, Ephemeral>,
    /// In-flight model calls by task id: a stop aborts them.
    inflight: Mutex<HashMap<i64, Arc<Notify>>>,
}

impl InProcessSignals {
    pub(super) fn new(store: Store) -> Self {
        Self {
            store,
            runs: Feeds::new(),
            conversations: Feeds::new(),
            jobs: Notify::new(),
            executors: Channels::new(EXECUTOR_CHANNEL_BUFFER),
            progress: Channels::new(PROGRESS_BUFFER),
            inflight: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn subscribe_run(&self, run_id: i64) -> Subscription<EventRow> {
        self.runs.subscribe(run_id).0
    }

    /// Sends the run's events after the feed's last sent sequence (or from `first_known`, or,
    /// on a feed that has sent nothing and knows nothing, only notes where the run stands).
    pub(super) async fn run_events(&self, run_id: i64, first_known: Option<i64>) {
        let Some(feed) = self.runs.live(run_id) else {
            return;
        };
        let mut last = feed.last_sent.lock().await;
        let after = match (*last, first_known) {
            (Some(l), _) => l,
            (None, Some(first)) => first - 1,
            (None, None) => {
                if let Ok(s) = self.store.latest_event_sequence(run_id).await {
                    *last = Some(s);
                }
                return;
            }
        };
        let store = &self.store;
        *last = Some(
            feed.catch_up(
                after,
                |after| store.events_after(run_id, after, CATCH_UP_PAGE),
                |r| r.sequence,
            )
            .await,
        );
    }

    /// A conversation's durable events from now on. A feed opened here first reads where the
    /// conversation stands, holding the feed so that no trigger catches up before it knows.
    pub(super) async fn subscribe_conversation(&self, conversation_id: i64) -> Subscription<ConversationEventRow> {
        let (subscription, fresh) = self.conversations.subscribe(conversation_id);
        if let Some(mut last) = fresh
            && let Ok(s) = self.store.latest_conversation_event_sequence(conversation_id).await
        {
            *last = Some(s);
        }
        subscription
    }

    /// Sends the conversation's events after the feed's last sent sequence (on a feed that
    /// knows none, because its opening read failed, only notes where the conversation stands).
    pub(super) async fn conversation_events(&self, conversation_id: i64) {
        let Some(feed) = self.conversations.live(conversation_id) else {
            return;
        };
        let mut last = feed.last_sent.lock().await;
        let Some(after) = *last else {
            if let Ok(s) = self.store.latest_conversation_event_sequence(conversation_id).await {
                *last = Some(s);
            }
            return;
        };
        let store = &self.store;
        *last = Some(
            feed.catch_up(
                after,
                |after| store.conversation_events(conversation_id, after, CATCH_UP_PAGE),
                |r| r.sequence,
            )
            .await,
        );
    }

    pub(super) fn wake_jobs(&self) {
        self.jobs.notify_one();
    }

    pub(super) async fn jobs_woken(&self) {
        self.jobs.notified().await
    }

    pub(super) fn push_to_executor(&self, executor: Uuid, frame: PushFrame) {
        self.executors.send(executor, frame);
    }

    pub(super) fn subscribe_executor(&self, executor: Uuid) -> Subscription<PushFrame> {
        self.executors.subscribe(executor)
    }

    pub(super) fn executor_connected(&self, executor: Uuid) -> bool {
        self.executors.is_connected(executor)
    }

    pub(super) fn relay_ephemeral(&self, run_id: i64, frame: Ephemeral) {
        self.progress.send(run_id, frame);
    }

    pub(super) fn subscribe_ephemeral(&self, run_id: i64) -> Subscription<Ephemeral> {
        self.progress.subscribe(run_id)
    }

    pub(super) fn model_call_started(&self, task_id: i64) -> Abort {
        let abort = Arc::new(Notify::new());
        self.inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(task_id, abort.clone());
        Abort(abort)
    }

    /// Whether the model call of `task_id` is in flight here.
    pub(super) fn has_model_call(&self, task_id: i64) -> bool {
        self.inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(&task_id)
    }

    /// After notices may have been lost (a node's listening connection dropped): every live
    /// feed catches up from the store, from the last sequence it sent (a feed that has sent
    /// nothing yet, from its record's start: its subscribers skip what they already hold), and
    /// the job workers wake.
    pub(super) async fn resync(&self) {
        for run_id in self.runs.live_ids() {
            if let Some(feed) = self.runs.live(run_id) {
                let mut last = feed.last_sent.lock().await;
                let store = &self.store;
                *last = Some(
                    feed.catch_up(
                        last.unwrap_or(0),
                        |after| store.events_after(run_id, after, CATCH_UP_PAGE),
                        |r| r.sequence,
                    )
                    .await,
                );
            }
        }
        for conversation_id in self.conversations.live_ids() {
            self.conversation_events(conversation_id).await;
        }
        self.wake_jobs();
    }

    pub(super) fn model_call_ended(&self, task_id: i64) {
        self.inflight.lock().unwrap_or_else(|p| p.into_inner()).remove(&task_id);
    }

    pub(super) fn abort_model_call(&self, task_id: i64) {
        let inflight = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(abort) = inflight.get(&task_id) {
            abort.notify_one();
        }
    }
}

/// Live feeds of durable rows (`R`) by internal id (a run's, a conversation's).
struct Feeds<R> {
    feeds: Mutex<HashMap<i64, Feed<R>>>,
}

#[derive(Clone)]
struct Feed<R> {
    sender: broadcast::Sender<R>,
    /// The last sequence sent (`None` until the feed knows where its record stands).
    last_sent: Arc<tokio::sync::Mutex<Option<i64>>>,
}

impl<R: Clone> Feeds<R> {
    fn new() -> Self {
        Self {
            feeds: Mutex::new(HashMap::new()),
        }
    }

    /// A receiver of the feed of `id`, and, when this call opened the feed, its `last_sent`
    /// held (no trigger catches up until it is released).
    fn subscribe(&self, id: i64) -> (Subscription<R>, Option<tokio::sync::OwnedMutexGuard<Option<i64>>>) {
        let mut feeds = self.feeds.lock().unwrap_or_else(|p| p.into_inner());
        let mut fresh = None;
        let feed = feeds.entry(id).or_insert_with(|| {
            let last_sent = Arc::new(tokio::sync::Mutex::new(None));
            fresh = last_sent.clone().try_lock_owned().ok();
            Feed {
                sender: broadcast::channel(FEED_BUFFER).0,
                last_sent,
            }
        });
        (Subscription::new(feed.sender.subscribe()), fresh)
    }

    /// The ids of every feed opened here.
    fn live_ids(&self) -> Vec<i64> {
        self.feeds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .copied()
            .collect()
    }

    /// The feed of `id` if it has subscribers (a feed whose last subscriber left is dropped).
    fn live(&self, id: i64) -> Option<Feed<R>> {
        let mut feeds = self.feeds.lock().unwrap_or_else(|p| p.into_inner());
        let feed = feeds.get(&id)?;
        if feed.sender.receiver_count() == 0 {
            feeds.remove(&id);
            return None;
        }
        Some(feed.clone())
    }
}

impl<R> Feed<R> {
    /// Sends every row `read` gives after `after`, page by page, in order; the last sequence
    /// sent (`after` when none; where it stopped when a read failed).
    async fn catch_up<F, Fut>(&self, mut after: i64, read: F, sequence: fn(&R) -> i64) -> i64
    where
        F: Fn(i64) -> Fut,
        Fut: std::future::Future<Output = nexus_store::Result<Vec<R>>>,
    {
        loop {
            let rows = match read(after).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::warn!(error = %e, "live feed catch-up failed");
                    return after;
                }
            };
            let n = rows.len();
            for row in rows {
                after = sequence(&row);
                let _ = self.sender.send(row);
            }
            if (n as i64) < CATCH_UP_PAGE {
                return after;
            }
        }
    }
}

/// Broadcast channels of frames (`F`) by key, each created by its first subscriber.
struct Channels<K, F> {
    senders: Mutex<HashMap<K, broadcast::Sender<F>>>,
    buffer: usize,
}

impl<K: Eq + Hash, F: Clone> Channels<K, F> {
    fn new(buffer: usize) -> Self {
        Self {
            senders: Mutex::new(HashMap::new()),
            buffer,
        }
    }

    /// A receiver of the frames sent under `key` from now on.
    fn subscribe(&self, key: K) -> Subscription<F> {
        let mut map = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        Subscription::new(
            map.entry(key)
                .or_insert_with(|| broadcast::channel(self.buffer).0)
                .subscribe(),
        )
    }

    /// Whether `key` has at least one open receiver.
    fn is_connected(&self, key: K) -> bool {
        let map = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&key).is_some_and(|s| s.receiver_count() > 0)
    }

    /// Sends `frame` to every open receiver of `key`; drops it when there is none (and the
    /// channel with it).
    fn send(&self, key: K, frame: F) {
        let mut map = self.senders.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = map.get(&key) {
            if sender.receiver_count() == 0 {
                map.remove(&key);
            } else {
                let _ = sender.send(frame);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::push::{work_available_frame, work_canceled_frame};

    #[test]
    fn frames_reach_open_channels_only() {
        let hub = Channels::<Uuid, PushFrame>::new(EXECUTOR_CHANNEL_BUFFER);
        let a = Uuid::now_v7();
        let run = Uuid::now_v7();
        hub.send(a, work_available_frame("tool_call", run, "k")); // nobody listening: dropped
        assert!(!hub.is_connected(a));
        let mut rx = hub.subscribe(a);
        assert!(hub.is_connected(a));
        hub.send(a, work_available_frame("tool_call", run, "k"));
        hub.send(a, work_canceled_frame(run, "k"));
        let f = rx.try_recv().unwrap();
        assert_eq!(f, work_available_frame("tool_call", run, "k"));
        assert_eq!(rx.try_recv().unwrap(), work_canceled_frame(run, "k"));
        drop(rx);
        assert!(!hub.is_connected(a));
        hub.send(a, work_canceled_frame(run, "k"));
    }
}
