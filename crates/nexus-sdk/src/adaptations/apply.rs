//! Applying a style to a fetched catalog (declarations.md §13, "Applying a style").

use serde_json::Value;

use super::NEXUS_STYLE;
use super::error::AdaptationError;
use super::presets::Presets;
use super::spec::AliasSpec;
use nexus_api::catalog::{Catalog, CatalogEntry};

/// Applies `styles` with the shipped presets; see [`Presets::apply`].
pub fn apply(
    catalog: &Catalog,
    styles: &[&str],
    row_descriptions: &[AliasSpec],
) -> Result<Vec<Value>, AdaptationError> {
    Presets::shipped().apply(catalog, styles, row_descriptions)
}

/// The fetched entry an alias's canonical names, in either spelling.
fn served<'c>(catalog: &'c Catalog, canonical: &str) -> Option<&'c CatalogEntry> {
    catalog
        .tools
        .iter()
        .find(|e| e.canonical_name == canonical || e.name == canonical)
}

impl Presets {
    /// Turns `catalog` into a declaration for `styles`:
    ///
    /// 1. every plain catalog definition, in catalog order, unless an active preset supersedes
    ///    its canonical and `nexus` is not among the styles;
    /// 2. then the active presets' aliases, in `words` order;
    /// 3. then `row_descriptions`;
    /// 4. where only aliases whose canonical is in the fetched catalog are emitted.
    ///
    /// Each alias is emitted as the compact kernel alias entry (see [`AliasSpec::to_entry`]).
    /// A style word the presets do not define is [`AdaptationError::UnknownStyle`]; a recut
    /// whose anchor is gone is [`AdaptationError::AnchorMoved`].
    pub fn apply(
        &self,
        catalog: &Catalog,
        styles: &[&str],
        row_descriptions: &[AliasSpec],
    ) -> Result<Vec<Value>, AdaptationError> {
        if let Some(unknown) = styles.iter().find(|s| !self.words.iter().any(|w| w == *s)) {
            return Err(AdaptationError::UnknownStyle((*unknown).to_owned()));
        }
        let active: Vec<_> = self
            .words
            .iter()
            .filter(|w| styles.contains(&w.as_str()))
            .filter_map(|w| self.preset(w))
            .collect();
        let keep_all = styles.contains(&NEXUS_STYLE);
        let superseded =
            |canonical: &str| !keep_all && active.iter().any(|p| p.supersedes.iter().any(|c| c == canonical));

        let mut out: Vec<Value> = catalog
            .tools
            .iter()
            .filter(|e| !superseded(&e.canonical_name))
            .map(|e| e.definition.clone())
            .collect();
        let aliases = active.iter().flat_map(|p| p.aliases.iter()).chain(row_descriptions);
        for alias in aliases {
            alias.validate()?;
            if let Some(entry) = served(catalog, &alias.canonical) {
                out.push(alias.to_entry(entry)?);
            }
        }
        Ok(out)
    }
}
