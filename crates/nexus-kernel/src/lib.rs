//! The Nexus kernel (engine): it drives everything that has state, over the store.
//!
//! Architecture Invariant: the kernel knows no HTTP. It returns typed [`KernelError`]s carrying
//! a code from `nexus_core::codes`; the server maps them to the envelope.
//! Architecture Invariant: the kernel holds no SQL; every read and write goes through
//! `nexus_store::Store`.

pub mod admin;
pub mod auth;
pub mod credentials;
pub mod declarations;
pub mod error;
pub mod executor;
pub mod memory;
mod names;
mod paging;
pub mod profile;
pub mod runs;
pub mod time;
pub mod tools;
pub mod uploads;

pub use auth::{ExecutorPrincipal, MemberPrincipal};
pub use error::{KernelError, KernelResult};

use std::path::PathBuf;
use std::sync::Arc;

use nexus_providers::Providers;
use nexus_store::Store;

pub use runs::Runtime;

/// The default `scripted` scripts directory (`<data-dir>/scripts` under the default data dir).
pub const DEFAULT_SCRIPTS_DIR: &str = "nexus-data/scripts";

/// The default blob store root (`<data-dir>/blobs` under the default data dir).
pub const DEFAULT_BLOBS_DIR: &str = "nexus-data/blobs";

/// The kernel: a store and the deployment's settings. Cheap to clone.
#[derive(Clone)]
pub struct Kernel {
    pub store: Store,
    /// The live model provider instances (always including the built-in `scripted`); its
    /// `catalog()` describes the same instances for profile validation.
    pub providers: Arc<Providers>,
    /// Engine settings and in-process state (node id, live feed, worker wake-ups).
    pub runtime: Arc<Runtime>,
    /// Uploads and captures: the blob store (uploads.md) and the reaper's clock.
    pub uploads: Arc<uploads::Uploads>,
    /// The executor plane's in-process state: push channels and the progress relay.
    pub executor_plane: Arc<executor::PlaneState>,
    /// Built `tool_search` indexes, keyed by the exact frozen context bytes (bounded, LRU).
    pub search_cache: Arc<tools::SearchCache>,
}

impl Kernel {
    /// A kernel with the default providers (`scripted` over [`DEFAULT_SCRIPTS_DIR`]) and a
    /// fresh node id.
    pub fn new(store: Store) -> Self {
        Self::builder(store).build()
    }

    /// A kernel with configured provider instances.
    pub fn with_providers(store: Store, providers: Providers) -> Self {
        Self::builder(store).providers(providers).build()
    }

    /// A kernel with every setting chosen.
    pub fn builder(store: Store) -> KernelBuilder {
        KernelBuilder {
            store,
            providers: None,
            scripts_dir: PathBuf::from(DEFAULT_SCRIPTS_DIR),
            blobs_dir: PathBuf::from(DEFAULT_BLOBS_DIR),
            node_id: None,
            sweep_interval_ms: None,
            provider_backoff_ms: None,
        }
    }
}

/// Builds a [`Kernel`].
pub struct KernelBuilder {
    store: Store,
    providers: Option<Providers>,
    scripts_dir: PathBuf,
    blobs_dir: PathBuf,
    node_id: Option<String>,
    sweep_interval_ms: Option<u64>,
    provider_backoff_ms: Option<Vec<u64>>,
}

impl KernelBuilder {
    /// The provider instances (overrides [`KernelBuilder::scripts_dir`]).
    pub fn providers(mut self, providers: Providers) -> Self {
        self.providers = Some(providers);
        self
    }

    /// Where the built-in `scripted` instance reads `<name>.jsonl`.
    pub fn scripts_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.scripts_dir = dir.into();
        self
    }

    /// The root of the fs blob store (`storage.blobs.path`, default [`DEFAULT_BLOBS_DIR`]).
    pub fn blobs_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.blobs_dir = dir.into();
        self
    }

    /// The name this node leases jobs under (default: `node-<uuid>`).
    pub fn node_id(mut self, node_id: impl Into<String>) -> Self {
        self.node_id = Some(node_id.into());
        self
    }

    /// How often the worker sweeps (`kernel.sweep_interval_ms`, default 5,000).
    pub fn sweep_interval_ms(mut self, ms: u64) -> Self {
        self.sweep_interval_ms = Some(ms);
        self
    }

    /// Backoff before each provider retry (default 1 s, 4 s, 16 s).
    pub fn provider_backoff_ms(mut self, ms: Vec<u64>) -> Self {
        self.provider_backoff_ms = Some(ms);
        self
    }

    pub fn build(self) -> Kernel {
        let providers = self.providers.unwrap_or_else(|| Providers::new(self.scripts_dir));
        let mut runtime = Runtime::new(self.node_id.unwrap_or_else(|| format!("node-{}", time::new_id())));
        if let Some(ms) = self.sweep_interval_ms {
            runtime.sweep_interval_ms = ms;
        }
        if let Some(b) = self.provider_backoff_ms {
            runtime.provider_backoff_ms = b;
        }
        Kernel {
            store: self.store,
            providers: Arc::new(providers),
            runtime: Arc::new(runtime),
            uploads: Arc::new(uploads::Uploads::new(Arc::new(uploads::FsBlobs::new(self.blobs_dir)))),
            executor_plane: Arc::new(executor::PlaneState::default()),
            search_cache: Arc::new(tools::SearchCache::new()),
        }
    }
}
