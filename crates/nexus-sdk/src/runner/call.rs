//! One claimed call: run the handler in its own task, extend the claim while it runs, drop it
//! when the row is canceled or the claim is lost, and commit its result.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinError;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::backoff::Backoff;
use super::engine::{CallKey, Shared};
use super::lease::{Held, Lease};
use super::tool::{ToolCall, ToolResult};
use crate::executor_client::Claim;

/// Removes the call from the running set however the call ends.
struct Deregister<'a> {
    shared: &'a Shared,
    key: CallKey,
}

impl Drop for Deregister<'_> {
    fn drop(&mut self) {
        self.shared.finished(&self.key);
    }
}

/// The target of the one timing line per call ([`serve`]): enable it with
/// `RUST_LOG=nexus_sdk::runner::timing=debug` (rho's loopback benchmark parses it).
const TIMING: &str = "nexus_sdk::runner::timing";

/// Serves one claim to its end. `polled_at` is when the inbox poll that found the row began,
/// `claimed_at` when the claim request was sent; the permit holds the call's concurrency slot
/// until the commit is done.
///
/// Each call that reaches its commit logs one debug line on the [`TIMING`] target, in
/// microseconds: `inbox_us` (poll start → claim sent), `claim_us` (claim sent → granted),
/// `queue_us` (granted → handler start), `handler_us`, `commit_us` (commit sent →
/// acknowledged, retries included) and `total_us` (granted → acknowledged). Off, it costs six
/// clock reads.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    claim: Claim,
    polled_at: Instant,
    claimed_at: Instant,
    cancel: CancellationToken,
    _permit: OwnedSemaphorePermit,
) {
    let granted = Instant::now();
    let key = CallKey::of(&claim.task.run_public_id, &claim.task.task_key);
    let _deregister = Deregister {
        shared: &shared,
        key: key.clone(),
    };
    let tool_name = claim.task.tool_name.clone().unwrap_or_default();
    let mut lease = Lease::new(claimed_at, claim.task.timeout_ms, shared.announced_timeout(&tool_name));
    let call = ToolCall {
        run_public_id: key.run.clone(),
        task_key: key.key.clone(),
        tool_name,
        input: claim.task.tool_input.clone(),
        row: claim.task.raw.clone(),
        claim_token: claim.claim_token.clone(),
        cancel: cancel.clone(),
        client: shared.client.clone(),
    };
    let service = shared.service.clone();
    let mut handler = tokio::spawn(async move {
        let started = Instant::now();
        let result = service.call(call).await;
        (result, started, Instant::now())
    });
    let token = claim.claim_token.as_str();
    let (result, started, ended) = loop {
        tokio::select! {
            joined = &mut handler => break match joined {
                Ok(timed) => timed,
                Err(e) => (from_join(e), granted, Instant::now()),
            },
            _ = cancel.cancelled() => {
                tracing::debug!(run = %key.run, key = %key.key, "the row was canceled; the handler is dropped");
                handler.abort();
                let _ = (&mut handler).await;
                return;
            }
            _ = tokio::time::sleep_until(lease.extend_at()), if lease.extending() => {
                if lease.extend(&shared.client, &key.run, &key.key, token).await == Held::Lost {
                    tracing::info!(run = %key.run, key = %key.key, "the claim is gone; the handler is dropped");
                    cancel.cancel();
                    handler.abort();
                    let _ = (&mut handler).await;
                    return;
                }
            }
        }
    };
    let sent = Instant::now();
    commit(&shared, &key, token, lease.deadline(), result, &cancel).await;
    let acknowledged = Instant::now();
    let us = |from: Instant, to: Instant| to.saturating_duration_since(from).as_micros() as u64;
    tracing::debug!(
        target: TIMING,
        run = %key.run,
        key = %key.key,
        tool = claim.task.tool_name.as_deref().unwrap_or_default(),
        inbox_us = us(polled_at, claimed_at),
        claim_us = us(claimed_at, granted),
        queue_us = us(granted, started),
        handler_us = us(started, ended),
        commit_us = us(sent, acknowledged),
        total_us = us(granted, acknowledged),
    );
}

/// The failed outcome of a handler that panicked or was aborted.
fn from_join(e: JoinError) -> ToolResult {
    if !e.is_panic() {
        return ToolResult::failed("the tool's handler was aborted");
    }
    let payload = e.into_panic();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned());
    ToolResult::failed(format!("the tool's handler panicked: {message}"))
}

/// Whether a refusal names the result itself (the park stands, executor.md §9 step 5): the
/// framework then commits a failed outcome instead, once, so the run need not wait for the
/// deadline. `result_unstorable` already settled the task.
fn payload_refused(e: &crate::Error) -> bool {
    e.api()
        .is_some_and(|a| a.status == 422 && a.code != "result_unstorable" && a.code != "invalid_outcome")
}

/// Commits, retrying transient failures under the same token while the deadline stands.
async fn commit(
    shared: &Shared,
    key: &CallKey,
    token: &str,
    deadline: Instant,
    mut result: ToolResult,
    cancel: &CancellationToken,
) {
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let mut replaced = false;
    loop {
        let error = match shared.client.commit(&key.run, &key.key, token, &result).await {
            Ok(reply) => {
                if reply.idle {
                    tracing::debug!(run = %key.run, key = %key.key, "the row had already settled");
                }
                return;
            }
            Err(e) => e,
        };
        if error.is_transient() {
            let delay = backoff.next_delay();
            if Instant::now() + delay >= deadline {
                tracing::warn!(run = %key.run, key = %key.key, error = %error, "the result could not be committed before the claim's deadline");
                return;
            }
            tracing::debug!(run = %key.run, key = %key.key, error = %error, "commit failed; retrying");
            tokio::select! {
                _ = tokio::time::sleep(delay) => continue,
                _ = cancel.cancelled() => return,
            }
        }
        if payload_refused(&error) && !replaced {
            tracing::warn!(run = %key.run, key = %key.key, error = %error, "the kernel refused the result; committing a failure instead");
            result = ToolResult::failed(format!("the kernel refused the tool's result: {error}"));
            replaced = true;
            continue;
        }
        tracing::warn!(run = %key.run, key = %key.key, error = %error, "the commit was refused");
        return;
    }
}
