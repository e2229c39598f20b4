//! The verdict table (approvals.md §3).

use serde_json::Value;

use super::glob::glob_match;
use super::rules::{Origin, Rule, RuleVerdict};
use crate::bounds;

/// A run's approval mode (approvals.md §1): the one type the declaration grammar, the store's
/// `runs.approval_mode` column and the gate share. Its word is what the column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// `bypass`: grant model calls no deny rule matches.
    Bypass,
    /// `ask`: hold every model call unless an allow rule grants it. The default only lets rows
    /// derive `Default` (the strictest mode that still runs a call); every writer names the mode.
    #[default]
    Ask,
    /// `rules`: grant only what an allow rule matches.
    Rules,
}

impl Mode {
    /// Every mode, in declaration order.
    pub const ALL: [Self; 3] = [Self::Bypass, Self::Ask, Self::Rules];

    /// The wire (and stored) word.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Bypass => "bypass",
            Self::Ask => "ask",
            Self::Rules => "rules",
        }
    }

    /// The mode whose word is `word`; `None` for any other string.
    pub fn from_word(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == word)
    }

    /// The message refusing `approval_mode` when it is missing, or the value `given` when it
    /// is not one of the words.
    pub fn refusal(given: Option<&Value>) -> String {
        const WORDS: &str = "bypass, ask, rules";
        match given {
            None | Some(Value::Null) => format!("approval_mode is required: one of {WORDS}"),
            Some(other) => format!("approval_mode {other} is not one of {WORDS}"),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let word = String::deserialize(d)?;
        Self::from_word(&word).ok_or_else(|| serde::de::Error::unknown_variant(&word, &["bypass", "ask", "rules"]))
    }
}

/// Who granted a released row (`approval.origin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrantOrigin {
    /// The mode granted it.
    Mode,
    /// An allow rule granted it.
    Rule,
    /// An author row, granted as itself.
    Author,
    /// A kernel row, granted as itself.
    Kernel,
}

/// What the gate does with a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Release, recording `approval.origin`.
    Grant(GrantOrigin),
    /// Leave at `needs_approval`.
    Hold,
    /// Fail with `approval_denied`; `detail` is the error detail (≤ 256 bytes).
    Deny {
        /// `error.detail`.
        detail: String,
    },
}

/// The text at a dotted `path` of `input`: a string, or an array of scalars joined by one space.
pub fn text_at(input: &Value, path: &[String]) -> Option<String> {
    let mut cur = input;
    for seg in path {
        cur = match cur {
            Value::Object(m) => m.get(seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let parts: Option<Vec<String>> = items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    Value::Bool(b) => Some(b.to_string()),
                    Value::Null => Some("null".into()),
                    _ => None,
                })
                .collect();
            parts.map(|p| p.join(" "))
        }
        _ => None,
    }
}

fn matches(rule: &Rule, tool_name: &str, input: &Value) -> bool {
    if !rule.tool.matches(tool_name) {
        return false;
    }
    match (&rule.path, &rule.r#match) {
        (None, _) => true,
        (Some(path), m) => match text_at(input, path) {
            None => false,
            Some(text) => m.as_ref().is_none_or(|g| glob_match(g, &text)),
        },
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// Applies the verdict table to one row.
pub fn evaluate(rules: &[Rule], mode: Mode, origin: Origin, tool_name: &str, input: &Value) -> Decision {
    let hits: Vec<&Rule> = rules
        .iter()
        .filter(|r| r.origin == origin && matches(r, tool_name, input))
        .collect();
    if let Some(deny) = hits.iter().find(|r| r.verdict == RuleVerdict::Deny) {
        let detail = deny.reason.as_deref().unwrap_or("denied by an approval rule");
        return Decision::Deny {
            detail: cut(detail, bounds::REASON_BYTES),
        };
    }
    let ask = hits.iter().any(|r| r.verdict == RuleVerdict::Ask);
    let allow = hits.iter().any(|r| r.verdict == RuleVerdict::Allow);
    match origin {
        Origin::Author => {
            if ask {
                Decision::Hold
            } else {
                Decision::Grant(GrantOrigin::Author)
            }
        }
        Origin::Kernel => {
            if ask {
                Decision::Hold
            } else {
                Decision::Grant(GrantOrigin::Kernel)
            }
        }
        Origin::Model => match mode {
            Mode::Bypass => Decision::Grant(GrantOrigin::Mode),
            Mode::Ask if ask => Decision::Hold,
            Mode::Ask if allow => Decision::Grant(GrantOrigin::Rule),
            Mode::Ask => Decision::Hold,
            Mode::Rules if ask => Decision::Hold,
            Mode::Rules if allow => Decision::Grant(GrantOrigin::Rule),
            Mode::Rules => Decision::Deny {
                detail: cut(&format!("no approval rule allows `{tool_name}`"), bounds::REASON_BYTES),
            },
        },
    }
}
