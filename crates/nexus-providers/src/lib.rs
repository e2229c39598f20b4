//! Model providers behind one trait (providers.md).
//!
//! This crate holds what the kernel needs to know about models without ever branching on a
//! provider: the model-ref grammar and the instance catalog that resolves a ref at acceptance
//! and at the profile writer. The adapters (`scripted`, `anthropic`, `openai`) and the async
//! `Provider` trait land with the run engine.
//!
//! Architecture Invariant: provider-specific code lives only in this crate.

pub mod catalog;
pub mod model_ref;

pub use catalog::{Instance, ProviderCatalog, ResolveError};
pub use model_ref::ModelRef;
