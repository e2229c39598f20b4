//! The kernel's settings: plain data, fixed when the kernel is built ([`crate::KernelBuilder`])
//! and shared by every clone of a [`Kernel`](crate::Kernel). The kernel's in-process state is
//! apart, in [`crate::state`].

/// Engine settings (storage-and-scale.md §5, providers.md §8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSettings {
    /// The name this node leases jobs under.
    pub node_id: String,
    /// How often the worker runs a sweep pass.
    pub sweep_interval_ms: u64,
    /// The model-call lease (15 minutes).
    pub model_lease_ms: i64,
    /// How often an in-flight model call renews its lease.
    pub lease_renew_ms: u64,
    /// Provider attempts per round (providers.md §8: 4).
    pub provider_max_attempts: u32,
    /// The backoff ceiling before retry k (ms): the wait is a full-jitter draw from `[0, ceiling]`
    /// unless the upstream sent `retry-after` (providers.md §8).
    pub provider_backoff_ms: Vec<u64>,
}

impl KernelSettings {
    /// The defaults, under `node_id`.
    pub fn new(node_id: impl Into<String>) -> Self {
        Self {
            node_id: node_id.into(),
            sweep_interval_ms: 5_000,
            model_lease_ms: 15 * 60 * 1000,
            lease_renew_ms: 60_000,
            provider_max_attempts: 4,
            provider_backoff_ms: vec![1_000, 4_000, 16_000],
        }
    }
}
