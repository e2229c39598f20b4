//! Parameter checks shared by the kernel tool parsers (kernel-tools.md §0): an unknown key on
//! a strict schema, a missing or blank string, a value of the wrong type or outside its range
//! all answer an error result naming the parameter, `parameter_invalid` unless the tool's
//! section names a word of its own.
//!
//! The checks are written once, in [`Params::typed`] and the converters beside it; a tool's
//! parser words its sentences (each names the offending value and the repair, so the sentences
//! differ by tool) around them. Two sets of sentences are shared whole: the conversation and
//! history tools' ([`Params::only`], [`Params::required_text`], [`Params::optional`]) and the
//! memory family's ([`str_arg`], [`int_arg`], [`bool_arg`]).

use nexus_core::results::ToolWord;
use serde_json::{Map, Value};

use super::KernelToolOutcome;

/// Whether an explicit `null` reads as an absent parameter or as a value of the wrong type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nulls {
    Absent,
    Refused,
}

/// A tool's input as an object of parameters, with the tool's wire name for the sentences.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params<'a> {
    tool: &'static str,
    obj: Option<&'a Map<String, Value>>,
}

impl<'a> Params<'a> {
    /// The input, which must be an object: `{tool} takes a JSON object of parameters`.
    pub(crate) fn object(tool: &'static str, input: &'a Value) -> Result<Self, KernelToolOutcome> {
        Self::object_or(tool, input, &format!("{tool} takes a JSON object of parameters"))
    }

    /// The input, which must be an object; `sentence` otherwise.
    pub(crate) fn object_or(tool: &'static str, input: &'a Value, sentence: &str) -> Result<Self, KernelToolOutcome> {
        match input.as_object() {
            Some(obj) => Ok(Self { tool, obj: Some(obj) }),
            None => Err(KernelToolOutcome::error(ToolWord::ParameterInvalid, sentence)),
        }
    }

    /// The input of a tool that reads its parameters by key only: anything but an object has
    /// none of them.
    pub(crate) fn lenient(tool: &'static str, input: &'a Value) -> Self {
        Self {
            tool,
            obj: input.as_object(),
        }
    }

    /// A parameter's value as given (`null` included).
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.and_then(|o| o.get(key))
    }

    /// Whether `key` was given (even as `null`).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The first key outside `allowed`.
    pub(crate) fn unknown_key(&self, allowed: &[&str]) -> Option<&'a str> {
        self.obj?
            .keys()
            .find(|k| !allowed.contains(&k.as_str()))
            .map(String::as_str)
    }

    /// The one check every typed read makes: absent (or `null`, under [`Nulls::Absent`]) is
    /// `Ok(None)`; a value `conv` reads is `Ok(Some)`; any other value is `Err` with it.
    pub(crate) fn typed<T>(
        &self,
        key: &str,
        nulls: Nulls,
        conv: impl FnOnce(&'a Value) -> Option<T>,
    ) -> Result<Option<T>, &'a Value> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Null) if nulls == Nulls::Absent => Ok(None),
            Some(v) => conv(v).map(Some).ok_or(v),
        }
    }

    // ---- the conversation and history tools' sentences ----------------------------------

    /// Refuses any key outside `allowed` (schemas with `additionalProperties: false`).
    pub(crate) fn only(&self, allowed: &[&str]) -> Result<(), KernelToolOutcome> {
        match self.unknown_key(allowed) {
            Some(key) => Err(invalid(&format!(
                "`{key}` is not a parameter of {}; its parameters are {}",
                self.tool,
                allowed.join(", ")
            ))),
            None => Ok(()),
        }
    }

    /// A required, non-blank string parameter.
    pub(crate) fn required_text(&self, key: &str) -> Result<&'a str, KernelToolOutcome> {
        let tool = self.tool;
        match self.typed(key, Nulls::Refused, Value::as_str) {
            Ok(Some(s)) if !s.trim().is_empty() => Ok(s),
            Ok(Some(_)) => Err(invalid(&format!("`{key}` of {tool} is blank; give a non-blank string"))),
            Err(other) => Err(invalid(&format!("`{key}` of {tool} must be a string, got {other}"))),
            Ok(None) => Err(invalid(&format!("{tool} needs `{key}`, a non-blank string"))),
        }
    }

    /// An optional parameter read by `conv` when present (`null` included), `expected`
    /// naming what it must be.
    pub(crate) fn optional<T>(
        &self,
        key: &str,
        expected: &str,
        conv: impl FnOnce(&'a Value) -> Option<T>,
    ) -> Result<Option<T>, KernelToolOutcome> {
        self.typed(key, Nulls::Refused, conv)
            .map_err(|v| invalid(&format!("`{key}` of {} must be {expected}, got {v}", self.tool)))
    }
}

/// A `parameter_invalid` result.
pub(crate) fn invalid(sentence: &str) -> KernelToolOutcome {
    KernelToolOutcome::error(ToolWord::ParameterInvalid, sentence)
}

// ---- converters for [`Params::typed`] -----------------------------------------------------

/// A string that is not blank.
pub(crate) fn non_blank(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.trim().is_empty())
}

/// An integer in `lo..=hi`.
pub(crate) fn int_in(lo: i64, hi: i64) -> impl Fn(&Value) -> Option<i64> {
    move |v| v.as_i64().filter(|n| (lo..=hi).contains(n))
}

/// A string among `words`.
pub(crate) fn word_in<'w>(words: &'w [&'w str]) -> impl Fn(&Value) -> Option<&str> + 'w {
    move |v| v.as_str().filter(|s| words.contains(s))
}

/// An array whose items are all strings.
pub(crate) fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array()?.iter().map(|i| i.as_str().map(str::to_string)).collect()
}

// ---- the memory family's sentences (unknown keys ignored; `null` is absent) ---------------

/// A string parameter: `Ok(None)` when absent (or null) and not required.
pub(crate) fn str_arg<'a>(input: &'a Value, key: &str, required: bool) -> Result<Option<&'a str>, KernelToolOutcome> {
    match Params::lenient("", input).typed(key, Nulls::Absent, Value::as_str) {
        Ok(None) if required => Err(invalid(&format!("`{key}` is required; pass it as a string"))),
        Ok(s) => Ok(s),
        Err(other) => Err(invalid(&format!(
            "`{key}` must be a string, got {other}; pass it as a string"
        ))),
    }
}

/// An integer parameter in `min..=max`, or `default` when absent.
pub(crate) fn int_arg(input: &Value, key: &str, default: i64, min: i64, max: i64) -> Result<i64, KernelToolOutcome> {
    Params::lenient("", input)
        .typed(key, Nulls::Absent, int_in(min, max))
        .map(|n| n.unwrap_or(default))
        .map_err(|v| {
            invalid(&if max == i64::MAX {
                format!("`{key}` must be an integer of at least {min}, got {v}; pass such an integer or omit it")
            } else {
                format!("`{key}` must be an integer from {min} to {max}, got {v}; pass one in that range or omit it")
            })
        })
}

/// A boolean parameter, or `default` when absent.
pub(crate) fn bool_arg(input: &Value, key: &str, default: bool) -> Result<bool, KernelToolOutcome> {
    Params::lenient("", input)
        .typed(key, Nulls::Absent, Value::as_bool)
        .map(|b| b.unwrap_or(default))
        .map_err(|v| {
            invalid(&format!(
                "`{key}` must be true or false, got {v}; pass a boolean or omit it"
            ))
        })
}

// ---- refusals shared by the conversation tools --------------------------------------------

/// The conversation a standalone run does not have: every `to` / `session_id` names a
/// conversation this run cannot reach.
pub(crate) fn unknown_conversation(tool: &str, target: &str) -> KernelToolOutcome {
    KernelToolOutcome::error(
        ToolWord::UnknownConversation,
        &format!(
            "{target:?} is not a conversation {tool} can reach from this run: this run is standalone and has no child \
             conversations; give a child label or a conversation id of this workspace"
        ),
    )
}

/// A history refusal (`conversations/history.rs`) as the tool's error result.
pub(crate) fn history_refusal(refusal: crate::conversations::history::HistoryRefusal) -> KernelToolOutcome {
    use crate::conversations::history::HistoryRefusal;
    match refusal {
        HistoryRefusal::Parameter(m) => invalid(&m),
        HistoryRefusal::UnknownConversation(m) => KernelToolOutcome::error(ToolWord::UnknownConversation, &m),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn said(r: Result<impl std::fmt::Debug, KernelToolOutcome>) -> String {
        r.expect_err("refused").content.as_str().unwrap().to_string()
    }

    #[test]
    fn typed_reads_absent_null_and_wrong_values() {
        let input = json!({"a": null, "b": 3, "c": "x"});
        let p = Params::object("t", &input).unwrap();
        assert_eq!(p.typed("zz", Nulls::Refused, Value::as_i64), Ok(None));
        assert_eq!(p.typed("a", Nulls::Absent, Value::as_i64), Ok(None));
        assert_eq!(p.typed("a", Nulls::Refused, Value::as_i64), Err(&Value::Null));
        assert_eq!(p.typed("b", Nulls::Refused, int_in(1, 3)), Ok(Some(3)));
        assert_eq!(p.typed("b", Nulls::Refused, int_in(4, 5)), Err(&json!(3)));
        assert_eq!(p.unknown_key(&["a", "b"]), Some("c"));
        assert!(Params::lenient("t", &json!("s")).get("a").is_none());
    }

    #[test]
    fn the_shared_sentences() {
        let input = json!({"to": " ", "n": "1", "x": 1});
        let p = Params::object("send", &input).unwrap();
        assert_eq!(
            said(p.only(&["to", "n"])),
            "parameter_invalid: `x` is not a parameter of send; its parameters are to, n"
        );
        assert_eq!(
            said(p.required_text("to")),
            "parameter_invalid: `to` of send is blank; give a non-blank string"
        );
        assert_eq!(
            said(p.required_text("message")),
            "parameter_invalid: send needs `message`, a non-blank string"
        );
        assert_eq!(
            said(p.optional("n", "a boolean", Value::as_bool)),
            "parameter_invalid: `n` of send must be a boolean, got \"1\""
        );
        assert_eq!(
            said(Params::object("send", &json!([]))),
            "parameter_invalid: send takes a JSON object of parameters"
        );
        // The memory family reads `null` as absent and words its own sentences.
        assert_eq!(int_arg(&json!({"limit": null}), "limit", 7, 1, 9).unwrap(), 7);
        assert_eq!(
            said(int_arg(&json!({"limit": 0}), "limit", 7, 1, i64::MAX)),
            "parameter_invalid: `limit` must be an integer of at least 1, got 0; pass such an integer or omit it"
        );
        assert_eq!(
            said(str_arg(&json!({}), "path", true)),
            "parameter_invalid: `path` is required; pass it as a string"
        );
        assert_eq!(str_arg(&json!({"path": null}), "path", false).unwrap(), None);
        assert_eq!(
            said(bool_arg(&json!({"b": 1}), "b", false)),
            "parameter_invalid: `b` must be true or false, got 1; pass a boolean or omit it"
        );
    }
}
