//! The rule grammar (approvals.md §2).

use serde_json::Value;

use super::glob::Glob;

/// A rule's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleVerdict {
    /// Grant.
    Allow,
    /// Hold for a human.
    Ask,
    /// Fail with `approval_denied`.
    Deny,
}

/// A row origin (approvals.md §1), also the store's `tasks.origin` word. The default (`model`,
/// the one the gate trusts least) only lets rows derive `Default`; every writer names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Origin {
    /// Model calls (the default for rules).
    #[default]
    Model,
    /// Steps authored through member doors.
    Author,
    /// Rows the kernel makes for itself.
    Kernel,
}

impl Origin {
    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Author => "author",
            Self::Kernel => "kernel",
        }
    }

    /// The origin whose word is `word`; `None` for any other string.
    pub fn from_word(word: &str) -> Option<Self> {
        [Self::Model, Self::Author, Self::Kernel]
            .into_iter()
            .find(|o| o.as_str() == word)
    }
}

impl serde::Serialize for Origin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One validated rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The `tool` pattern over the resolved wire `tool_name`.
    pub tool: Glob,
    /// The verdict.
    pub verdict: RuleVerdict,
    /// The dotted key path into `tool_input`, split into segments.
    pub path: Option<Vec<String>>,
    /// The anchored glob over the text at `path`.
    pub r#match: Option<String>,
    /// Carried on a deny.
    pub reason: Option<String>,
    /// The origin the rule applies to.
    pub origin: Origin,
}

/// A run's approval rules, parsed once: the stored JSON text (bytes kept as written) and the
/// rules it holds. Built only from text that parses ([`ApprovalRules::parse`]), so a holder
/// never meets an unreadable rule list; the store reads a column that does not parse as a
/// corrupt row. Dereferences to the stored text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRules {
    text: String,
    rules: Vec<Rule>,
}

impl ApprovalRules {
    /// The rules of the stored text `text`: a JSON rule list ([`parse_rules`]). Text that is
    /// not JSON is refused with reason `not_json`.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let value: Value = serde_json::from_str(text).map_err(|_| err("not_json", String::new()))?;
        let rules = parse_rules(&value)?;
        Ok(Self {
            text: text.to_string(),
            rules,
        })
    }

    /// The rules of `value`, stored as its compact JSON text.
    pub fn of_value(value: &Value) -> Result<Self, RuleError> {
        Ok(Self {
            rules: parse_rules(value)?,
            text: value.to_string(),
        })
    }

    /// The rules, in written order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The stored text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl std::ops::Deref for ApprovalRules {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

/// A rule grammar refusal: `reason` is the rule word, `path` a JSON pointer relative to the
/// rules array (`""` for the array itself, `/2/verdict` for a key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("approval_rules{path}: {reason}")]
pub struct RuleError {
    /// `not_json` (stored text only), `not_a_list`, `not_an_object`, `unknown_key`,
    /// `tool_required`, `verdict_invalid`,
    /// `origin_invalid`, `match_without_path`, `path_invalid`, `glob_invalid`, `reason_invalid`.
    pub reason: &'static str,
    /// Where, relative to the rules array.
    pub path: String,
}

const KEYS: [&str; 6] = ["tool", "verdict", "path", "match", "reason", "origin"];

fn err(reason: &'static str, path: String) -> RuleError {
    RuleError { reason, path }
}

/// Validates `approval_rules` (grammar only). `null` is the caller's concern (no rules).
pub fn parse_rules(value: &Value) -> Result<Vec<Rule>, RuleError> {
    let Some(items) = value.as_array() else {
        return Err(err("not_a_list", String::new()));
    };
    items.iter().enumerate().map(|(i, item)| parse_rule(item, i)).collect()
}

fn parse_rule(value: &Value, i: usize) -> Result<Rule, RuleError> {
    let at = |k: &str| format!("/{i}/{k}");
    let Some(obj) = value.as_object() else {
        return Err(err("not_an_object", format!("/{i}")));
    };
    if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(err("unknown_key", at(&k.replace('~', "~0").replace('/', "~1"))));
    }
    let tool = match obj.get("tool") {
        None | Some(Value::Null) => return Err(err("tool_required", at("tool"))),
        Some(Value::String(s)) => Glob::parse_alternatives(s).ok_or_else(|| err("glob_invalid", at("tool")))?,
        Some(_) => return Err(err("glob_invalid", at("tool"))),
    };
    let verdict = match obj.get("verdict").and_then(Value::as_str) {
        Some("allow") => RuleVerdict::Allow,
        Some("ask") => RuleVerdict::Ask,
        Some("deny") => RuleVerdict::Deny,
        _ => return Err(err("verdict_invalid", at("verdict"))),
    };
    let origin = match obj.get("origin") {
        None => Origin::Model,
        Some(v) => match v.as_str() {
            Some("model") => Origin::Model,
            Some("author") => Origin::Author,
            Some("kernel") => Origin::Kernel,
            _ => return Err(err("origin_invalid", at("origin"))),
        },
    };
    let path = match obj.get("path") {
        None => None,
        Some(Value::String(s)) if !s.split('.').any(str::is_empty) => Some(s.split('.').map(str::to_string).collect()),
        Some(_) => return Err(err("path_invalid", at("path"))),
    };
    let r#match = match obj.get("match") {
        None => None,
        Some(_) if path.is_none() => return Err(err("match_without_path", at("match"))),
        Some(Value::String(s)) if !s.contains('\0') => Some(s.clone()),
        Some(_) => return Err(err("glob_invalid", at("match"))),
    };
    let reason = match obj.get("reason") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(err("reason_invalid", at("reason"))),
    };
    Ok(Rule {
        tool,
        verdict,
        path,
        r#match,
        reason,
        origin,
    })
}
