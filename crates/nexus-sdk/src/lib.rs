//! Rust SDK for Nexus.
//!
//! - [`tools`]: one constant per canonical kernel tool name, for `kernel_tools`.
//! - [`Client`]: the member plane (catalog, profile, configuration, assembly).
//! - [`ExecutorClient`]: the executor transport plane.
//! - [`adaptations`]: client-side adaptation packs that turn the served catalog into a
//!   per-model declaration (declarations.md §13).
//!
//! Every response is deserialized leniently: unknown fields are ignored, so a newer kernel never
//! breaks an older SDK.

#![warn(missing_docs)]

pub mod adaptations;
mod client;
mod error;
pub mod executor_client;
mod http;
pub mod member;
pub mod runner;
pub mod tools;
mod upload;

pub use client::Client;
pub use error::{ApiError, Error, Result};
pub use executor_client::ExecutorClient;
pub use member::{RunRef, Workspace};
pub use nexus_api::assembly::{
    AssemblyPreview, AssemblyRequest, EnvironmentSnapshot, RunnerSnapshot, SkillEntry, SkillSource,
};
pub use nexus_api::catalog::{Catalog, CatalogEntry};
pub use nexus_api::profile::{
    Configuration, MemberKind, MemberList, Profile, ProfileCredential, ProfileMember, WorkspaceMember,
};
pub use runner::{Runner, RunnerHandle};
