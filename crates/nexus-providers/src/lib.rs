//! Model providers behind one trait (providers.md).
//!
//! This crate holds what the kernel needs to know about models without ever branching on a
//! provider: the model-ref grammar, the instance catalog that resolves a ref at acceptance and
//! at the profile writer, the neutral request and reply ([`neutral`]), the [`Provider`] trait,
//! the offline [`Scripted`] provider, the [`OpenAi`] adapter (Chat Completions and compatible
//! servers) and the [`Providers`] registry. The `anthropic` adapter comes later.
//!
//! Architecture Invariant: provider-specific code lives only in this crate.

#![warn(missing_docs)]

pub mod anthropic;
mod canonical;
pub mod catalog;
pub mod config;
mod http;
pub mod model_ref;
pub mod neutral;
pub mod openai;
pub mod provider;
pub mod registry;
pub mod scripted;
mod slots;

pub use anthropic::Anthropic;
pub use catalog::{Instance, ProviderCatalog, ResolveError};
pub use config::{InstanceConfig, Kind};
pub use model_ref::ModelRef;
pub use neutral::{Entry, ModelReply, ModelRequest, Part, RawToolCall, RequestOptions, StopReason, Usage};
pub use openai::OpenAi;
pub use provider::{
    BlobReader, ChainMark, Continues, DeltaSink, EncodedRequest, ModelCapabilities, NoBlobs, NoDeltas, Provider,
    ProviderError, SendFuture,
};
pub use registry::Providers;
pub use scripted::Scripted;
