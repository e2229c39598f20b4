//! Exponential backoff with jitter, for reconnects and retries of transient failures.

use std::time::Duration;

/// Doubles from `initial` up to `max`; each delay is drawn uniformly from its upper half, so
/// runners that lost the same server do not come back in lockstep.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    current: Duration,
}

impl Backoff {
    pub(crate) fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            current: initial,
        }
    }

    /// The delay before the next attempt.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let ceiling = self.current;
        self.current = (self.current * 2).min(self.max);
        let half = ceiling / 2;
        let jitter_ms = u64::try_from(half.as_millis()).unwrap_or(u64::MAX);
        half + Duration::from_millis(rand::random_range(0..=jitter_ms))
    }

    /// Back to the initial delay (after a success).
    pub(crate) fn reset(&mut self) {
        self.current = self.initial;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_with_jitter_in_the_upper_half() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(800));
        for ceiling in [100u64, 200, 400, 800, 800, 800] {
            let d = b.next_delay();
            assert!(
                d >= Duration::from_millis(ceiling / 2) && d <= Duration::from_millis(ceiling),
                "{d:?} outside [{}, {ceiling}] ms",
                ceiling / 2
            );
        }
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(100));
    }
}
