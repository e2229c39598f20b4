//! The [`Kernel`] struct, its builder and its services. The kernel is the shared context: a
//! store, the providers, the settings ([`KernelSettings`]) and the in-process state
//! ([`KernelState`]), plus the `pub(crate)` internals every area uses (settle, the gate,
//! events, the clock, signals), written as `impl Kernel` blocks in the other files. An area's
//! public doors are methods of its service ([`Runs`], [`Executor`], [`Conversations`],
//! [`Uploads`], [`Memory`], [`Admin`]), reached as `kernel.runs()` and so on; a service is a
//! borrowed view of the kernel and derefs to it, so a door reads the context as `self.store`
//! and calls an internal as `self.emit(..)`. Outside this file no `impl Kernel` method is
//! public (`tests/services.rs`). The types the kernel holds live in files that name no
//! `Kernel` (ARCHITECTURE.md, "nexus-kernel"), so this file and those import one way.

use std::ops::Deref;
use std::path::PathBuf;
use std::sync::Arc;

use nexus_providers::Providers;
use nexus_store::Store;

use crate::clock::Clock;
use crate::settings::KernelSettings;
use crate::signals::Signals;
use crate::state::KernelState;
use crate::uploads::{Blobs, DbBlobs, FsBlobs, UploadState};
use crate::{DEFAULT_BLOBS_DIR, DEFAULT_SCRIPTS_DIR, time};

/// The kernel: a store, the deployment's settings and this process's state. Cheap to clone.
#[derive(Clone)]
pub struct Kernel {
    pub store: Store,
    /// The live model provider instances (always including the built-in `scripted`); its
    /// `catalog()` describes the same instances for profile validation.
    pub providers: Arc<Providers>,
    /// Engine settings (node id, sweep interval, model lease, provider retries): plain data.
    pub settings: Arc<KernelSettings>,
    /// In-process state: the signals (live feeds, worker wake-ups, push channels, progress,
    /// model-call aborts), the sealed-entries and `tool_search` caches, and the uploads.
    pub state: Arc<KernelState>,
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
            blobs_in_database: false,
            node_id: None,
            sweep_interval_ms: None,
            model_lease_ms: None,
            provider_backoff_ms: None,
        }
    }
}

/// Runs: create, start, stop and read runs and tasks; approvals, recovery, the worker.
#[derive(Clone, Copy)]
pub struct Runs<'k>(&'k Kernel);

impl Deref for Runs<'_> {
    type Target = Kernel;
    fn deref(&self) -> &Kernel {
        self.0
    }
}

/// The executor protocol: announce, claim, extend, commit; the inbox, progress, push, discovery.
#[derive(Clone, Copy)]
pub struct Executor<'k>(&'k Kernel);

impl Deref for Executor<'_> {
    type Target = Kernel;
    fn deref(&self) -> &Kernel {
        self.0
    }
}

/// Conversations: create and read them; their inputs, turns, history and feeds.
#[derive(Clone, Copy)]
pub struct Conversations<'k>(&'k Kernel);

impl Deref for Conversations<'_> {
    type Target = Kernel;
    fn deref(&self) -> &Kernel {
        self.0
    }
}

/// Uploads and captures: ingest, read, bind to results, reap.
#[derive(Clone, Copy)]
pub struct Uploads<'k>(&'k Kernel);

impl Deref for Uploads<'_> {
    type Target = Kernel;
    fn deref(&self) -> &Kernel {
        self.0
    }
}

/// Memory documents: list, read, put, delete.
#[derive(Clone, Copy)]
pub struct Memory<'k>(&'k Kernel);

impl Deref for Memory<'_> {
    type Target = Kernel;
    fn deref(&self) -> &Kernel {
        self.0
    }
}

/// The deployment: accounts, members, executors, tokens, authentication, profiles, declarations.
#[derive(Clone, Copy)]
pub struct Admin<'k>(&'k Kernel);

impl Deref for Admin<'_> {
    type Target = Kernel;
    fn deref(&self) -> &Kernel {
        self.0
    }
}

/// The service accessors: each area's public doors (the module doc).
impl Kernel {
    pub fn runs(&self) -> Runs<'_> {
        Runs(self)
    }

    pub fn executor(&self) -> Executor<'_> {
        Executor(self)
    }

    pub fn conversations(&self) -> Conversations<'_> {
        Conversations(self)
    }

    pub fn uploads(&self) -> Uploads<'_> {
        Uploads(self)
    }

    pub fn memory(&self) -> Memory<'_> {
        Memory(self)
    }

    pub fn admin(&self) -> Admin<'_> {
        Admin(self)
    }
}

impl Kernel {
    /// Now, in Unix milliseconds, on the kernel's clock (`crate::clock`: the process clock on
    /// SQLite, the database's on PostgreSQL). Every deadline, lease and `*_at` is read here.
    pub fn now_ms(&self) -> i64 {
        self.state.clock.now_ms()
    }

    /// Reads the database's clock again (PostgreSQL; nothing on SQLite). `nexus serve` reads it
    /// before serving and the worker on every sweep pass.
    pub async fn read_clock(&self) -> crate::error::KernelResult<()> {
        Ok(self.state.clock.read(&self.store).await?)
    }
}

/// Builds a [`Kernel`].
pub struct KernelBuilder {
    store: Store,
    providers: Option<Providers>,
    scripts_dir: PathBuf,
    blobs_dir: PathBuf,
    blobs_in_database: bool,
    node_id: Option<String>,
    sweep_interval_ms: Option<u64>,
    model_lease_ms: Option<i64>,
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

    /// Keeps blobs in the database (`storage.blobs.kind = "database"`, [`DbBlobs`]) instead of
    /// under [`KernelBuilder::blobs_dir`], which then only stages ingest.
    pub fn blobs_in_database(mut self, yes: bool) -> Self {
        self.blobs_in_database = yes;
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

    /// The model-call lease (`kernel.model_lease_ms`, default 15 minutes): how long a node that
    /// died mid-call holds its round before another node takes it over. The renewal runs at
    /// least three times per lease.
    pub fn model_lease_ms(mut self, ms: i64) -> Self {
        self.model_lease_ms = Some(ms);
        self
    }

    /// Backoff before each provider retry (default 1 s, 4 s, 16 s).
    pub fn provider_backoff_ms(mut self, ms: Vec<u64>) -> Self {
        self.provider_backoff_ms = Some(ms);
        self
    }

    pub fn build(self) -> Kernel {
        let providers = self.providers.unwrap_or_else(|| Providers::new(self.scripts_dir));
        let mut settings = KernelSettings::new(self.node_id.unwrap_or_else(|| format!("node-{}", time::new_id())));
        if let Some(ms) = self.sweep_interval_ms {
            settings.sweep_interval_ms = ms;
        }
        if let Some(ms) = self.model_lease_ms {
            settings.model_lease_ms = ms.max(3);
            settings.lease_renew_ms = settings.lease_renew_ms.min(settings.model_lease_ms as u64 / 3);
        }
        if let Some(b) = self.provider_backoff_ms {
            settings.provider_backoff_ms = b;
        }
        let blobs: Arc<dyn Blobs> = if self.blobs_in_database {
            Arc::new(DbBlobs::new(self.store.clone(), self.blobs_dir))
        } else {
            Arc::new(FsBlobs::new(self.blobs_dir))
        };
        let state = KernelState::new(
            Signals::for_store(self.store.clone()),
            Clock::for_store(&self.store),
            UploadState::new(blobs),
        );
        Kernel {
            store: self.store,
            providers: Arc::new(providers),
            settings: Arc::new(settings),
            state: Arc::new(state),
        }
    }
}
