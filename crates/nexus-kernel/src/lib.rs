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
pub mod profile;
pub mod time;
pub mod tools;

pub use auth::{ExecutorPrincipal, MemberPrincipal};
pub use error::{KernelError, KernelResult};

use nexus_providers::ProviderCatalog;
use nexus_store::Store;

/// The kernel: a store and the deployment's settings. Cheap to clone.
#[derive(Clone)]
pub struct Kernel {
    pub store: Store,
    /// The configured model provider instances (always including the built-in `scripted`).
    pub providers: ProviderCatalog,
}

impl Kernel {
    /// A kernel with the default provider catalog.
    pub fn new(store: Store) -> Self {
        Self {
            store,
            providers: ProviderCatalog::default(),
        }
    }

    /// A kernel with configured provider instances.
    pub fn with_providers(store: Store, providers: ProviderCatalog) -> Self {
        Self { store, providers }
    }
}
