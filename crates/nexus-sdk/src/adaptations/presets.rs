//! `presets.json`: the preset words, the plain names they may supersede, and each preset's
//! aliases.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::error::AdaptationError;
use super::spec::AliasSpec;
use super::{FORMAT, NEXUS_STYLE};

const SHIPPED: &str = include_str!("../../adaptations/presets.json");

/// The preset table (`presets.json`, `format: 1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Presets {
    /// The pack format; this SDK reads [`FORMAT`].
    pub format: u64,
    /// The style words in application order; `nexus` (the plain style) among them.
    pub words: Vec<String>,
    /// Canonical name → plain wire name, for every canonical a preset may supersede.
    #[serde(default)]
    pub plain: BTreeMap<String, String>,
    /// Word → preset. `nexus` has none: it means the plain definitions.
    #[serde(default)]
    pub presets: BTreeMap<String, Preset>,
}

/// One preset: the plain canonicals it replaces and the aliases it declares instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    /// Canonical names whose plain definitions this preset replaces (unless `nexus` is also
    /// an active style).
    #[serde(default)]
    pub supersedes: Vec<String>,
    /// The aliases it appends, in order.
    #[serde(default)]
    pub aliases: Vec<AliasSpec>,
}

impl Presets {
    /// The presets shipped with this crate, parsed and validated once.
    ///
    /// # Panics
    /// Only if the shipped file is invalid, which this crate's tests rule out.
    pub fn shipped() -> &'static Presets {
        static PRESETS: OnceLock<Presets> = OnceLock::new();
        PRESETS.get_or_init(|| Presets::parse(SHIPPED).expect("the shipped presets.json is valid"))
    }

    /// Parses and validates a `presets.json` text.
    pub fn parse(text: &str) -> Result<Presets, AdaptationError> {
        let presets: Presets = serde_json::from_str(text)?;
        presets.validate()?;
        Ok(presets)
    }

    /// Checks the table: format, unique words including `nexus`, a preset only for a known
    /// word other than `nexus`, supersessions named in `plain`, and every alias spec.
    pub fn validate(&self) -> Result<(), AdaptationError> {
        let bad = |m: String| Err(AdaptationError::Parse(m));
        if self.format != FORMAT {
            return bad(format!("presets format {} is not {FORMAT}", self.format));
        }
        if !self.words.iter().any(|w| w == NEXUS_STYLE) {
            return bad(format!("words lacks {NEXUS_STYLE:?}"));
        }
        for (i, word) in self.words.iter().enumerate() {
            if self.words[..i].contains(word) {
                return bad(format!("word {word:?} is listed twice"));
            }
        }
        for (word, preset) in &self.presets {
            if word == NEXUS_STYLE {
                return bad(format!("{NEXUS_STYLE:?} is the plain style and has no preset"));
            }
            if !self.words.contains(word) {
                return Err(AdaptationError::UnknownStyle(word.clone()));
            }
            for canonical in &preset.supersedes {
                if !self.plain.contains_key(canonical) {
                    return bad(format!("presets.{word} supersedes {canonical}, not in plain"));
                }
            }
            for alias in &preset.aliases {
                alias.validate()?;
            }
        }
        Ok(())
    }

    /// The preset of `word`, if it has one.
    pub fn preset(&self, word: &str) -> Option<&Preset> {
        self.presets.get(word)
    }

    /// The plain wire name of a supersedable `canonical`.
    pub fn plain_name(&self, canonical: &str) -> Option<&str> {
        self.plain.get(canonical).map(String::as_str)
    }

    /// Every alias spec of every preset, in `words` order.
    pub fn aliases(&self) -> impl Iterator<Item = &AliasSpec> {
        self.words
            .iter()
            .filter_map(|w| self.preset(w))
            .flat_map(|p| p.aliases.iter())
    }
}
