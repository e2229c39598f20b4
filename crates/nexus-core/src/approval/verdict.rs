//! The verdict table (approvals.md §3).

use serde_json::Value;

use super::glob::glob_match;
use super::rules::{Origin, Rule, RuleVerdict};
use crate::bounds;

/// The run's approval mode as the gate sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// `bypass`.
    Bypass,
    /// `ask`.
    Ask,
    /// `rules`.
    Rules,
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
