//! Client-side adaptation packs (declarations.md §13).
//!
//! A pack is data shipped with this crate (`adaptations/presets.json`, `adaptations/rows/*.json`)
//! that turns the served catalog into a per-model declaration: the plain kernel definitions a
//! style keeps, followed by **compact** alias entries `{name, canonical, params?, omit?,
//! description?}`. The kernel stays the only validator and renderer of aliases; a pack never
//! embeds kernel prose. An alias that re-words part of a kernel description carries a
//! [`Recut`]: one anchored edit applied to the served `template`, which fails loudly
//! ([`AdaptationError::AnchorMoved`]) when the kernel re-cuts the anchored text.
//!
//! ```no_run
//! # async fn demo(client: &nexus_sdk::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use nexus_sdk::adaptations::Row;
//! let catalog = client.tools().await?;
//! let tool_definitions = Row::for_model("claude-sonnet-4").apply(&catalog)?;
//! # let _ = tool_definitions; Ok(()) }
//! ```

mod apply;
mod error;
mod glob;
mod presets;
mod row;
mod spec;

pub use apply::apply;
pub use error::AdaptationError;
pub use glob::glob_match;
pub use presets::{Preset, Presets};
pub use row::{DEFAULT_ROW, Row};
pub use spec::{AliasParam, AliasSpec, Recut};

/// The format number this SDK reads in every pack file.
pub const FORMAT: u64 = 1;

/// The style word that keeps the plain kernel definitions.
pub const NEXUS_STYLE: &str = "nexus";
