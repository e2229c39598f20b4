//! Approval rules (approvals.md §2) and the verdict table (§3).
//!
//! Rules are validated at declaration time ([`parse_rules`]) and evaluated by the gate against
//! a row's resolved wire `tool_name` and `tool_input` ([`evaluate`]).

mod glob;
mod rules;
mod verdict;

pub use glob::{Glob, glob_match};
pub use rules::{ApprovalRules, Origin, Rule, RuleError, RuleVerdict, parse_rules};
pub use verdict::{Decision, GrantOrigin, Mode, evaluate, text_at};

#[cfg(test)]
mod tests;
