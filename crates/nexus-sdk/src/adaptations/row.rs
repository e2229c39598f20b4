//! Rows (`rows/<id>.json`): which styles a model family gets.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::AdaptationError;
use super::glob::glob_match;
use super::presets::Presets;
use super::spec::AliasSpec;
use super::{FORMAT, NEXUS_STYLE};
use nexus_api::catalog::Catalog;

/// The id of the row a model no other row matches gets.
pub const DEFAULT_ROW: &str = "default";

const SHIPPED: [(&str, &str); 3] = [
    (DEFAULT_ROW, include_str!("../../adaptations/rows/default.json")),
    ("claude", include_str!("../../adaptations/rows/claude.json")),
    ("codex", include_str!("../../adaptations/rows/codex.json")),
];

/// One row: `{format, row, models, tool_style, tool_descriptions?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// The pack format; this SDK reads [`FORMAT`].
    pub format: u64,
    /// The row id (its file name).
    pub row: String,
    /// Globs over the model part of a `provider/model` ref. The default row has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// The style words to apply.
    pub tool_style: Vec<String>,
    /// Extra alias specs appended after the presets' aliases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_descriptions: Vec<AliasSpec>,
}

fn shipped_rows() -> &'static [Row] {
    static ROWS: OnceLock<Vec<Row>> = OnceLock::new();
    ROWS.get_or_init(|| {
        SHIPPED
            .iter()
            .map(|(id, text)| {
                let row = Row::parse(text).expect("a shipped row is valid");
                assert_eq!(row.row, *id, "a shipped row's id is its file name");
                row
            })
            .collect()
    })
}

impl Row {
    /// Parses and validates a row text.
    pub fn parse(text: &str) -> Result<Row, AdaptationError> {
        let row: Row = serde_json::from_str(text)?;
        row.validate()?;
        Ok(row)
    }

    /// Checks the row: format, a non-empty id and style, no `models` on the default row, and
    /// every alias spec. Style words are checked against the presets when applied.
    pub fn validate(&self) -> Result<(), AdaptationError> {
        let bad = |m: String| Err(AdaptationError::Parse(m));
        if self.format != FORMAT {
            return bad(format!("row {} format {} is not {FORMAT}", self.row, self.format));
        }
        if self.row.is_empty() {
            return bad("a row needs an id".into());
        }
        if self.row == DEFAULT_ROW && !self.models.is_empty() {
            return bad("the default row has no models".into());
        }
        if self.tool_style.is_empty() {
            return bad(format!("row {} has no tool_style", self.row));
        }
        for alias in &self.tool_descriptions {
            alias.validate()?;
        }
        Ok(())
    }

    /// Every shipped row: the default row first, then the model rows.
    pub fn all_shipped() -> &'static [Row] {
        shipped_rows()
    }

    /// The shipped row with id `id` (`default`, `claude`, `codex`).
    pub fn shipped(id: &str) -> Option<&'static Row> {
        shipped_rows().iter().find(|r| r.row == id)
    }

    /// The first shipped row whose `models` glob matches `model` (the model part of a ref,
    /// e.g. `claude-sonnet-4`); the default row when none does.
    pub fn for_model(model: &str) -> &'static Row {
        shipped_rows()
            .iter()
            .find(|r| r.matches(model))
            .or_else(|| Row::shipped(DEFAULT_ROW))
            .expect("the default row is shipped")
    }

    /// As [`Row::for_model`] for a whole `provider/model` ref: the glob sees the text after the
    /// first `/` (the whole ref when it has none).
    pub fn for_ref(model_ref: &str) -> &'static Row {
        let model = model_ref.split_once('/').map_or(model_ref, |(_, m)| m);
        Row::for_model(model)
    }

    /// Whether one of this row's globs matches `model`.
    pub fn matches(&self, model: &str) -> bool {
        self.models.iter().any(|g| glob_match(g, model))
    }

    /// Whether this row keeps the plain definitions (`nexus` is among its styles).
    pub fn keeps_plain(&self) -> bool {
        self.tool_style.iter().any(|s| s == NEXUS_STYLE)
    }

    /// Applies this row's styles and descriptions to `catalog` with the shipped presets.
    pub fn apply(&self, catalog: &Catalog) -> Result<Vec<Value>, AdaptationError> {
        let styles: Vec<&str> = self.tool_style.iter().map(String::as_str).collect();
        Presets::shipped().apply(catalog, &styles, &self.tool_descriptions)
    }
}
