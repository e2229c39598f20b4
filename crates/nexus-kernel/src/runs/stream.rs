//! The live event feed behind `GET R/events/stream` (runs.md §11): the durable backlog after a
//! cursor, then every event published after its commit, in sequence order, with no gaps and no
//! repeats, interleaved with the run's ephemeral frames (`executor_progress`), which carry no
//! sequence and are never stored. Both come from the signals seam (`crate::signals`). A
//! subscriber that falls behind the feed's buffer re-reads the store; ephemeral frames it
//! missed are simply gone.

use std::collections::VecDeque;

use nexus_store::EventRow;
use nexus_store::prelude::*;
use serde_json::Value;
use uuid::Uuid;

use crate::auth::MemberPrincipal;
use crate::error::KernelResult;
use crate::signals::{Ephemeral, RecvError, Subscription};
use crate::{Kernel, Runs};

const PAGE: i64 = 500;

/// One run's feed from a cursor on.
pub struct EventStream {
    kernel: Kernel,
    run_id: i64,
    run_public_id: Uuid,
    /// The last sequence handed out.
    last: i64,
    backlog: VecDeque<EventRow>,
    /// Whether the last store read filled its page (more may follow it).
    more: bool,
    rx: Subscription<EventRow>,
    /// `None` once the progress relay closed (the durable feed goes on).
    progress: Option<Subscription<Ephemeral>>,
}

/// One item of the feed.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedItem {
    /// A stored event: `id: <sequence>`, `event: <type>`.
    Durable {
        sequence: i64,
        kind: nexus_store::EventKind,
        json: Value,
    },
    /// An ephemeral frame (no id): `executor_progress`, `model_delta`.
    Ephemeral { kind: &'static str, json: Value },
}

impl Runs<'_> {
    /// Live feed: a receiver of the run's durable events, published after each commit.
    pub fn subscribe(&self, run_id: i64) -> Subscription<EventRow> {
        self.state.signals.subscribe_run(run_id)
    }

    /// Opens the feed of `run` after sequence `after` (0 = from the start).
    pub async fn event_stream(
        &self,
        principal: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        after: i64,
    ) -> KernelResult<EventStream> {
        let (ws_row, _) = self.workspace_for(principal, ws, false).await?;
        let run = self.run_in(&ws_row, run).await?;
        // Subscribe before reading the backlog, so nothing committed in between is missed.
        let rx = self.subscribe(run.id);
        let progress = self.executor().subscribe_progress(run.id);
        let mut stream = EventStream {
            kernel: Kernel::clone(self),
            run_id: run.id,
            run_public_id: run.public_id,
            last: after.max(0),
            backlog: VecDeque::new(),
            more: false,
            rx,
            progress: Some(progress),
        };
        stream.refill().await?;
        Ok(stream)
    }
}

impl EventStream {
    async fn refill(&mut self) -> KernelResult<()> {
        let rows = self.kernel.store.events_after(self.run_id, self.last, PAGE).await?;
        self.more = rows.len() as i64 == PAGE;
        self.backlog.extend(rows);
        Ok(())
    }

    /// The next item; `None` when the feed closed.
    pub async fn next(&mut self) -> Option<FeedItem> {
        loop {
            if let Some(row) = self.backlog.pop_front() {
                if row.sequence <= self.last {
                    continue;
                }
                if row.sequence > self.last.saturating_add(1) {
                    // A gap: something was published out of order; read it from the store.
                    self.backlog.clear();
                    if self.refill().await.is_err() {
                        return None;
                    }
                    continue;
                }
                self.last = row.sequence;
                if self.backlog.is_empty() && self.more {
                    let _ = self.refill().await;
                }
                let json = Kernel::event_json(self.run_public_id, &row);
                return Some(FeedItem::Durable {
                    sequence: row.sequence,
                    kind: row.kind,
                    json,
                });
            }
            tokio::select! {
                durable = self.rx.recv() => match durable {
                    Ok(row) => self.backlog.push_back(row),
                    Err(RecvError::Lagged(_)) => {
                        if self.refill().await.is_err() {
                            return None;
                        }
                    }
                    Err(RecvError::Closed) => return None,
                },
                frame = next_frame(&mut self.progress) => match frame {
                    Ok(frame) => return Some(FeedItem::Ephemeral { kind: frame.kind, json: frame.data }),
                    // Missed or closed progress is not state: keep following the durable feed.
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => self.progress = None,
                },
            }
        }
    }
}

/// The next progress frame; never resolves once the relay closed.
async fn next_frame(progress: &mut Option<Subscription<Ephemeral>>) -> Result<Ephemeral, RecvError> {
    match progress {
        Some(p) => p.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use nexus_store::prelude::*;
    use nexus_store::testing::engines;
    use serde_json::json;

    use super::FeedItem;
    use crate::booted::Booted;

    /// A finished run's backlog longer than one store read, resumed from a cursor that is not
    /// a multiple of the page: the stream pages through to the last event without any new
    /// event to wake it.
    #[tokio::test]
    async fn a_long_backlog_resumed_mid_page_is_read_to_its_end() {
        for ts in engines().await {
            let Booted { kernel, agent, ws, .. } = Booted::new(&ts.store).await;
            let made = kernel
                .runs().create_run(
                    &agent,
                    ws,
                    &json!({"run": {"approval_mode": "bypass", "steps": [{"model": {"prompt": "Go.", "model": "scripted/unserved"}}]}}),
                    None,
                )
                .await
                .unwrap();
            let run = uuid::Uuid::parse_str(&made.fresh().unwrap().run.public_id).unwrap();
            let run_id = kernel.store.run_by_public_id(run).await.unwrap().unwrap().id;
            let mut tx = kernel.store.begin().await.unwrap();
            for _ in 0..1_100 {
                tx.append_event(run_id, nexus_store::EventKind::RunStatusChanged, None, &json!({}), 0)
                    .await
                    .unwrap();
            }
            tx.commit().await.unwrap();
            let last = kernel.store.latest_event_sequence(run_id).await.unwrap();
            let mut stream = kernel.runs().event_stream(&agent, ws, run, 3).await.unwrap();
            for want in 4..=last {
                let item = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next())
                    .await
                    .unwrap_or_else(|_| panic!("stalled before {want} on {}", ts.dialect));
                match item {
                    Some(FeedItem::Durable { sequence, .. }) => assert_eq!(sequence, want),
                    other => panic!("{other:?}"),
                }
            }
        }
    }
}
