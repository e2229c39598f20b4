//! The Nexus kernel (engine): it drives everything that has state, over the store.
//!
//! Architecture Invariant: the kernel knows no HTTP. It returns typed [`KernelError`]s carrying
//! a code from `nexus_core::codes`; the server maps them to the envelope.
//! Architecture Invariant: the kernel holds no SQL; every read and write goes through
//! `nexus_store::Store`.

pub mod admin;
pub mod auth;
#[cfg(test)]
mod booted;
pub mod clock;
pub mod conversations;
pub mod credentials;
pub mod declarations;
pub mod error;
pub mod executor;
mod kernel;
pub mod memory;
mod names;
mod paging;
pub mod profile;
pub mod runs;
pub mod settings;
pub mod signals;
pub mod state;
pub mod time;
pub mod tools;
pub mod uploads;

pub use auth::{ExecutorPrincipal, MemberPrincipal};
pub use error::{KernelError, KernelResult};
pub use kernel::{Admin, Conversations, Executor, Kernel, KernelBuilder, Memory, Runs, Uploads};
pub use settings::KernelSettings;
pub use state::KernelState;

/// The default `scripted` scripts directory (`<data-dir>/scripts` under the default data dir).
pub const DEFAULT_SCRIPTS_DIR: &str = "nexus-data/scripts";

/// The default blob store root (`<data-dir>/blobs` under the default data dir).
pub const DEFAULT_BLOBS_DIR: &str = "nexus-data/blobs";
