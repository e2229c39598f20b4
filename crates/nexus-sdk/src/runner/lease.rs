//! A claim's clock on the runner's side: when to extend, by how much, and what an extend
//! refusal means (executor.md §8).

use std::time::Duration;

use tokio::time::Instant;

use crate::executor_client::ExecutorClient;

/// The longest extension the kernel grants (executor.md §8).
pub(crate) const MAX_EXTENSION_MS: u64 = 3_600_000;

/// The budget of a row that carries none (executor.md §13).
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 600_000;

/// Between failed extend attempts, at most this long.
const RETRY_CEILING: Duration = Duration::from_secs(1);

/// What an extend attempt left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// The claim stands (extended, or to be retried).
    Yes,
    /// The claim is gone: the row was canceled, settled, expired or re-claimed.
    Lost,
}

/// The local view of one claim's deadline. Deadlines are measured from when a request was
/// sent, so the local deadline is never later than the kernel's.
#[derive(Debug)]
pub(crate) struct Lease {
    deadline: Instant,
    extension_ms: u64,
    retry_at: Option<Instant>,
    extending: bool,
}

impl Lease {
    /// A lease granted by a claim sent at `claimed_at` on a row of `timeout_ms`, whose tool
    /// was announced with `announced_ms`.
    pub(crate) fn new(claimed_at: Instant, timeout_ms: Option<u64>, announced_ms: Option<u64>) -> Lease {
        let budget = timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).max(1);
        let extension_ms = budget
            .min(announced_ms.unwrap_or(MAX_EXTENSION_MS))
            .clamp(1, MAX_EXTENSION_MS);
        Lease {
            deadline: claimed_at + Duration::from_millis(budget),
            extension_ms,
            retry_at: None,
            extending: true,
        }
    }

    /// The local deadline.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether an extension is still due at some point.
    pub(crate) fn extending(&self) -> bool {
        self.extending
    }

    /// When to extend next: a retry, else when a third of an extension's budget remains.
    pub(crate) fn extend_at(&self) -> Instant {
        self.retry_at.unwrap_or_else(|| {
            self.deadline
                .checked_sub(Duration::from_millis(self.extension_ms / 3))
                .unwrap_or(self.deadline)
        })
    }

    /// Sends one extension and reads its answer.
    pub(crate) async fn extend(&mut self, client: &ExecutorClient, run: &str, key: &str, token: &str) -> Held {
        let sent = Instant::now();
        let error = match client.extend(run, key, token, self.extension_ms).await {
            Ok(_) => {
                self.deadline = sent + Duration::from_millis(self.extension_ms);
                self.retry_at = None;
                return Held::Yes;
            }
            Err(e) => e,
        };
        let now = Instant::now();
        if error.is_transient() {
            if now >= self.deadline {
                tracing::warn!(run, key, error = %error, "the claim's deadline passed while the kernel was unreachable");
                self.extending = false;
            } else {
                let left = self.deadline - now;
                self.retry_at = Some(now + (left / 4).min(RETRY_CEILING));
            }
            return Held::Yes;
        }
        match error.code() {
            Some("not_claimant" | "not_extendable" | "not_found") => Held::Lost,
            Some("extension_too_long") => {
                let cap = error
                    .api()
                    .and_then(|a| a.field("max_timeout_ms"))
                    .and_then(serde_json::Value::as_u64)
                    .filter(|cap| *cap > 0 && *cap < self.extension_ms);
                match cap {
                    Some(cap) => {
                        self.extension_ms = cap;
                        self.retry_at = Some(now);
                    }
                    None => self.refused(run, key, &error),
                }
                Held::Yes
            }
            _ => {
                self.refused(run, key, &error);
                Held::Yes
            }
        }
    }

    fn refused(&mut self, run: &str, key: &str, error: &crate::Error) {
        tracing::warn!(run, key, error = %error, "the claim cannot be extended; the call runs until its deadline");
        self.extending = false;
        self.retry_at = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_is_the_smallest_of_the_row_the_announcement_and_an_hour() {
        let now = Instant::now();
        let lease = Lease::new(now, Some(9_000_000), None);
        assert_eq!(lease.extension_ms, MAX_EXTENSION_MS);
        assert_eq!(lease.deadline(), now + Duration::from_millis(9_000_000));
        let lease = Lease::new(now, Some(600_000), Some(60_000));
        assert_eq!(lease.extension_ms, 60_000);
        // A third of the extension before the deadline, so each extension moves it forward.
        assert_eq!(lease.extend_at(), now + Duration::from_millis(580_000));
        let lease = Lease::new(now, None, None);
        assert_eq!(lease.deadline(), now + Duration::from_millis(DEFAULT_TIMEOUT_MS));
        assert_eq!(lease.extension_ms, DEFAULT_TIMEOUT_MS);
    }
}
