//! The progress cadence (executor.md §11): at most one relayed frame per task per [`CADENCE`].
//! A clock of this process, held by the kernel's state; `progress.rs` consults it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most one relayed frame per task per this interval.
pub const CADENCE: Duration = Duration::from_millis(250);

/// When each task's last frame was relayed.
#[derive(Debug, Default)]
pub struct ProgressCadence {
    last_relayed: Mutex<HashMap<i64, Instant>>,
}

impl ProgressCadence {
    /// Takes the task's cadence slot at `now`: false when a frame was relayed within
    /// [`CADENCE`].
    pub fn take_slot(&self, task_id: i64, now: Instant) -> bool {
        let mut last = self.last_relayed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = last.get(&task_id)
            && now.saturating_duration_since(*at) < CADENCE
        {
            return false;
        }
        if last.len() > 4096 {
            last.retain(|_, at| now.saturating_duration_since(*at) < CADENCE);
        }
        last.insert(task_id, now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cadence_is_per_task() {
        let hub = ProgressCadence::default();
        let t0 = Instant::now();
        assert!(hub.take_slot(1, t0));
        assert!(!hub.take_slot(1, t0 + Duration::from_millis(100)));
        assert!(hub.take_slot(2, t0 + Duration::from_millis(100)));
        assert!(hub.take_slot(1, t0 + Duration::from_millis(250)));
    }
}
