//! The adaptation error type.

/// Why a pack could not be loaded or applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdaptationError {
    /// A recut's anchor is not in the served template of `canonical` (or the template is
    /// missing): the kernel re-cut the text the pack edits. Never silently worked around.
    #[error("the {canonical} template no longer contains the recut anchor {anchor:?}")]
    AnchorMoved {
        /// The canonical name whose template was searched.
        canonical: String,
        /// The anchor that was not found.
        anchor: String,
    },
    /// An alias spec carries both `description` and `recut`, which are mutually exclusive.
    #[error("alias {name} carries both description and recut")]
    DescriptionAndRecut {
        /// The alias name.
        name: String,
    },
    /// A style word that the presets do not define.
    #[error("unknown tool style {0:?}")]
    UnknownStyle(String),
    /// Pack data that is not well-formed JSON of the pack grammar.
    #[error("invalid adaptation data: {0}")]
    Parse(String),
}

impl From<serde_json::Error> for AdaptationError {
    fn from(e: serde_json::Error) -> Self {
        AdaptationError::Parse(e.to_string())
    }
}
