//! The engine behind [`Runner::run`]: announce, then one loop that polls the inbox (on a timer,
//! after each channel hello and on `work_available`), claims while slots are free, routes
//! `work_canceled` to running calls, and on shutdown drains the running calls.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore, mpsc};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::backoff::Backoff;
use super::channel::{self, Event};
use super::tool::{Announcement, Service};
use super::{Runner, call};
use crate::error::Result;
use crate::executor_client::{ExecutorClient, InboxRow, RowKind};

/// A slow kernel answer to an inbox read or a claim ends that poll; the next one retries.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Rows read per inbox page.
const PAGE: u32 = 200;

/// A row's identity: its run and its key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CallKey {
    pub(crate) run: String,
    pub(crate) key: String,
}

impl CallKey {
    pub(crate) fn of(run: &str, key: &str) -> CallKey {
        CallKey {
            run: run.to_owned(),
            key: key.to_owned(),
        }
    }
}

/// A running call: its token (for the claim status read) and its cancel token.
struct Running {
    claim_token: String,
    cancel: CancellationToken,
}

/// What the engine's tasks share.
pub(crate) struct Shared {
    pub(crate) client: ExecutorClient,
    pub(crate) service: Arc<dyn Service>,
    running: Mutex<HashMap<CallKey, Running>>,
    /// The announced `timeout_ms` per tool, from the last accepted announcement.
    timeouts: Mutex<HashMap<String, u64>>,
}

impl Shared {
    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<CallKey, Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn announced_timeout(&self, tool: &str) -> Option<u64> {
        self.timeouts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tool)
            .copied()
    }

    pub(crate) fn finished(&self, key: &CallKey) {
        self.running().remove(key);
    }

    fn remember(&self, announcement: &Announcement) {
        let timeouts = announcement
            .tools
            .iter()
            .filter_map(|t| Some((t.name.clone(), t.timeout_ms?)))
            .collect();
        *self.timeouts.lock().unwrap_or_else(PoisonError::into_inner) = timeouts;
    }

    fn cancel(&self, key: &CallKey) {
        if let Some(running) = self.running().get(key) {
            running.cancel.cancel();
        }
    }

    /// Announces the service's current announcement, retrying transient failures; a typed
    /// refusal is returned.
    async fn announce(&self) -> Result<()> {
        let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(30));
        loop {
            let announcement = self.service.announcement();
            match self.client.announce(&announcement).await {
                Ok(_) => {
                    self.remember(&announcement);
                    return Ok(());
                }
                Err(e) if e.is_transient() => {
                    tracing::debug!(error = %e, "the announcement could not be sent; retrying");
                    tokio::time::sleep(backoff.next_delay()).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// After a reconnect: frames sent while disconnected are lost, so each running claim is
    /// read back, and a claim that is gone cancels its call.
    async fn recheck_claims(&self) {
        let claims: Vec<(CallKey, String)> = self
            .running()
            .iter()
            .map(|(k, r)| (k.clone(), r.claim_token.clone()))
            .collect();
        for (key, token) in claims {
            let gone = match self.client.claim_status(&key.run, &key.key, &token).await {
                Ok(status) => !status.active,
                Err(e) => matches!(e.code(), Some("not_claimant" | "not_found")),
            };
            if gone {
                tracing::info!(run = %key.run, key = %key.key, "the claim ended while the channel was down");
                self.cancel(&key);
            }
        }
    }
}

/// Aborts a background task when the engine returns.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The claiming side of the loop: the slots and the running calls' tasks.
struct Claims {
    shared: Arc<Shared>,
    slots: Arc<Semaphore>,
    calls: JoinSet<()>,
    /// The last poll stopped for want of a slot: poll again when a call ends.
    saturated: bool,
    /// [`RunnerHandle::shutdown`](super::RunnerHandle::shutdown): a poll under way when it is
    /// called claims nothing more.
    stop: CancellationToken,
    /// Claims sent without an answer (a failure in transport, a 5xx, a timeout), by row, with
    /// their `Idempotency-Key`: the kernel may have granted one, so the row is claimed again
    /// with the same key, which answers that grant, until a definite answer comes or the row
    /// leaves the inbox.
    unanswered: HashMap<CallKey, String>,
}

impl Claims {
    /// The `Idempotency-Key` to claim `row` with: the unanswered claim's, else a fresh one for
    /// an unclaimed tool call this runner is not running. `None`: not to be claimed.
    fn claim_key(&self, row: &InboxRow) -> Option<String> {
        let key = CallKey::of(&row.run_public_id, &row.task_key);
        if row.kind != RowKind::ToolCall || self.shared.running().contains_key(&key) {
            return None;
        }
        match self.unanswered.get(&key) {
            Some(k) => Some(k.clone()),
            None if !row.claimed => Some(format!("{:032x}", rand::random::<u128>())),
            None => None,
        }
    }

    /// Reads the inbox and claims what it can while slots are free.
    async fn poll(&mut self) {
        let polled = Instant::now();
        self.saturated = false;
        let mut after: Option<String> = None;
        let mut listed = std::collections::HashSet::new();
        loop {
            let read = tokio::time::timeout(REQUEST_TIMEOUT, self.shared.client.inbox(after.as_deref(), Some(PAGE)));
            let page = match read.await {
                Ok(Ok(page)) => page,
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "the inbox could not be read");
                    return;
                }
                Err(_) => return,
            };
            for row in &page.tasks {
                let call = CallKey::of(&row.run_public_id, &row.task_key);
                let Some(idempotency_key) = self.claim_key(row) else {
                    listed.insert(call);
                    continue;
                };
                if self.stop.is_cancelled() {
                    return;
                }
                let Ok(permit) = self.slots.clone().try_acquire_owned() else {
                    self.saturated = true;
                    return;
                };
                listed.insert(call.clone());
                let sent = Instant::now();
                let claim = tokio::time::timeout(
                    REQUEST_TIMEOUT,
                    self.shared
                        .client
                        .claim_keyed(&row.run_public_id, &row.task_key, &idempotency_key),
                );
                match claim.await {
                    Ok(Ok(claim)) => {
                        self.unanswered.remove(&call);
                        let cancel = CancellationToken::new();
                        let key = CallKey::of(&claim.task.run_public_id, &claim.task.task_key);
                        let running = Running {
                            claim_token: claim.claim_token.clone(),
                            cancel: cancel.clone(),
                        };
                        self.shared.running().insert(key, running);
                        let shared = self.shared.clone();
                        self.calls
                            .spawn(call::serve(shared, claim, polled, sent, cancel, permit));
                    }
                    Ok(Err(e)) if e.is_transient() => {
                        tracing::debug!(error = %e, "a claim failed; the next poll claims again with its key");
                        self.unanswered.insert(call, idempotency_key);
                        return;
                    }
                    // Another runner won it, the run stopped, the tool is no longer served…
                    Ok(Err(e)) => {
                        self.unanswered.remove(&call);
                        tracing::debug!(run = %row.run_public_id, key = %row.task_key, error = %e, "not claimed")
                    }
                    Err(_) => {
                        self.unanswered.insert(call, idempotency_key);
                        return;
                    }
                }
            }
            match page.next_after {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        // The whole inbox was read: an unanswered claim of a row no longer listed (settled,
        // or its run ended) is forgotten.
        self.unanswered.retain(|call, _| listed.contains(call));
    }
}

/// Re-sends the announcement on each [`super::RunnerHandle::reannounce`].
async fn announcer(shared: Arc<Shared>, reannounce: Arc<Notify>) {
    loop {
        reannounce.notified().await;
        if let Err(e) = shared.announce().await {
            tracing::warn!(error = %e, "the kernel refused the new announcement");
        }
    }
}

/// [`Runner::run`].
pub(crate) async fn run(runner: Runner, shutdown: impl Future<Output = ()> + Send) -> Result<()> {
    let Runner {
        client,
        service,
        concurrency,
        poll_interval,
        handle,
    } = runner;
    let shared = Arc::new(Shared {
        client: client.clone(),
        service,
        running: Mutex::new(HashMap::new()),
        timeouts: Mutex::new(HashMap::new()),
    });
    tokio::pin!(shutdown);
    tokio::select! {
        announced = shared.announce() => announced?,
        _ = &mut shutdown => return Ok(()),
        _ = handle.shutdown.cancelled() => return Ok(()),
    }
    let (tx, mut events) = mpsc::unbounded_channel();
    let _channel = AbortOnDrop(tokio::spawn(channel::run(client, tx)));
    let _announcer = AbortOnDrop(tokio::spawn(announcer(shared.clone(), handle.reannounce.clone())));
    let mut claims = Claims {
        shared: shared.clone(),
        slots: Arc::new(Semaphore::new(concurrency)),
        calls: JoinSet::new(),
        saturated: false,
        stop: handle.shutdown.clone(),
        unanswered: HashMap::new(),
    };
    let mut ticker = tokio::time::interval(poll_interval.max(Duration::from_millis(10)));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            _ = handle.shutdown.cancelled() => break,
            Some(event) = events.recv() => match event {
                Event::Connected => {
                    shared.recheck_claims().await;
                    claims.poll().await;
                }
                Event::WorkAvailable => claims.poll().await,
                Event::WorkCanceled { run_public_id, task_key } => {
                    shared.cancel(&CallKey::of(&run_public_id, &task_key));
                }
            },
            _ = ticker.tick() => claims.poll().await,
            Some(joined) = claims.calls.join_next() => {
                if let Err(e) = joined {
                    tracing::error!(error = %e, "a call task failed");
                }
                if claims.saturated {
                    claims.poll().await;
                }
            }
        }
    }
    // Shutdown: no new claims; running calls finish and commit, and cancels still reach them.
    tracing::debug!(running = claims.calls.len(), "the runner is draining");
    loop {
        tokio::select! {
            joined = claims.calls.join_next() => match joined {
                None => break,
                Some(Err(e)) => tracing::error!(error = %e, "a call task failed"),
                Some(Ok(())) => {}
            },
            Some(event) = events.recv() => {
                if let Event::WorkCanceled { run_public_id, task_key } = event {
                    shared.cancel(&CallKey::of(&run_public_id, &task_key));
                }
            }
        }
    }
    Ok(())
}
