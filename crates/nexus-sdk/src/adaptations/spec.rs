//! Alias specs and recuts: the pack grammar of one alias.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::error::AdaptationError;
use nexus_api::catalog::CatalogEntry;

/// One anchored edit of a served template: the first occurrence of `anchor` is replaced by
/// `replacement`. Macros in `replacement` are rendered by the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recut {
    /// The exact text to find in the template.
    pub anchor: String,
    /// The text that takes its place.
    pub replacement: String,
}

impl Recut {
    /// Applies the recut to `template` of `canonical`.
    pub fn apply(&self, canonical: &str, template: &str) -> Result<String, AdaptationError> {
        if self.anchor.is_empty() || !template.contains(&self.anchor) {
            return Err(AdaptationError::AnchorMoved {
                canonical: canonical.to_owned(),
                anchor: self.anchor.clone(),
            });
        }
        Ok(template.replacen(&self.anchor, &self.replacement, 1))
    }
}

/// One alias parameter: `params.<name> = {maps_to, invert?, description?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasParam {
    /// The alias's parameter name.
    pub name: String,
    /// The kernel parameter it maps to.
    pub maps_to: String,
    /// Whether a boolean value is negated on the way in.
    pub invert: Option<bool>,
    /// The alias parameter's description (required by the kernel with `invert: true`).
    pub description: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ParamBody {
    maps_to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    invert: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

/// An alias of a kernel tool as a pack writes it: `{name, canonical, params?, omit?,
/// description? | recut?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AliasSpec {
    /// The alias's callable name.
    pub name: String,
    /// The kernel tool it presents (canonical name; the kernel also accepts the wire name).
    pub canonical: String,
    /// Parameter mappings, in their written order. Empty means none.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "ser_params",
        deserialize_with = "de_params"
    )]
    pub params: Vec<AliasParam>,
    /// Kernel parameters the alias hides. Empty means none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub omit: Vec<String>,
    /// A whole replacement description (exclusive with `recut`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// One anchored edit of the served template (exclusive with `description`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recut: Option<Recut>,
}

fn ser_params<S: Serializer>(params: &[AliasParam], s: S) -> Result<S::Ok, S::Error> {
    params_json(params).serialize(s)
}

fn de_params<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<AliasParam>, D::Error> {
    let map = Map::<String, Value>::deserialize(d)?;
    map.into_iter()
        .map(|(name, body)| {
            let body: ParamBody =
                serde_json::from_value(body).map_err(|e| D::Error::custom(format!("params.{name}: {e}")))?;
            Ok(AliasParam {
                name,
                maps_to: body.maps_to,
                invert: body.invert,
                description: body.description,
            })
        })
        .collect()
}

fn params_json(params: &[AliasParam]) -> Map<String, Value> {
    params
        .iter()
        .map(|p| {
            let body = ParamBody {
                maps_to: p.maps_to.clone(),
                invert: p.invert,
                description: p.description.clone(),
            };
            let body = serde_json::to_value(body).expect("a param body serializes");
            (p.name.clone(), body)
        })
        .collect()
}

impl AliasSpec {
    /// An alias with no mapping and the kernel's own description.
    pub fn new(name: impl Into<String>, canonical: impl Into<String>) -> AliasSpec {
        AliasSpec {
            name: name.into(),
            canonical: canonical.into(),
            params: Vec::new(),
            omit: Vec::new(),
            description: None,
            recut: None,
        }
    }

    /// Checks the pack grammar the kernel cannot see: `description` and `recut` exclude each
    /// other.
    pub fn validate(&self) -> Result<(), AdaptationError> {
        if self.description.is_some() && self.recut.is_some() {
            return Err(AdaptationError::DescriptionAndRecut {
                name: self.name.clone(),
            });
        }
        Ok(())
    }

    /// The compact kernel alias entry `{name, canonical, params?, omit?, description?}` for
    /// this spec over the served `entry`. A recut becomes the template with its anchor
    /// replaced; a spec with neither description nor recut leaves the kernel template in
    /// charge (no `description` key).
    pub fn to_entry(&self, entry: &CatalogEntry) -> Result<Value, AdaptationError> {
        self.validate()?;
        let description = match (&self.description, &self.recut) {
            (Some(text), None) => Some(text.clone()),
            (None, Some(recut)) => Some(recut.apply(&entry.canonical_name, &entry.template)?),
            _ => None,
        };
        let mut out = Map::new();
        out.insert("name".into(), Value::String(self.name.clone()));
        out.insert("canonical".into(), Value::String(self.canonical.clone()));
        if !self.params.is_empty() {
            out.insert("params".into(), Value::Object(params_json(&self.params)));
        }
        if !self.omit.is_empty() {
            out.insert("omit".into(), self.omit.iter().cloned().map(Value::String).collect());
        }
        if let Some(description) = description {
            out.insert("description".into(), Value::String(description));
        }
        Ok(Value::Object(out))
    }
}
