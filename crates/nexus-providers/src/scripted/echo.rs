//! `scripted/echo` (providers.md §7): replies driven by prompt directives.
//!
//! - The last entry is a user entry holding one or more `[[call:<name> <json object>]]`
//!   directives → those calls (ids `call_echo_<k>_<i>`, arguments the canonical JSON of the
//!   object), stop `tool_use`. A directive whose object does not parse is ignored.
//! - The last entries are tool results (trailing attachment entries skipped) → their outputs
//!   joined by `"\n"`.
//! - Otherwise → the last user entry's text.
//!
//! Usage is a deterministic estimate: a token per 4 bytes of the body and of the reply text.

use serde_json::Value;

use crate::neutral::{Entry, ModelReply, ModelRequest, RawToolCall, StopReason, Usage, parts_text};

/// The echo reply to `req`; `body_len` is the encoded body size (for the usage estimate).
pub fn reply(req: &ModelRequest, body_len: usize) -> ModelReply {
    let k = req.assistant_count();
    if let Some(Entry::User { parts }) = req.entries.last() {
        let calls = call_directives(&parts_text(parts));
        if !calls.is_empty() {
            let tool_calls = calls
                .into_iter()
                .enumerate()
                .map(|(i, (name, arguments))| RawToolCall {
                    id: format!("call_echo_{k}_{i}"),
                    name,
                    arguments,
                })
                .collect();
            return finish(None, tool_calls, StopReason::ToolUse, body_len);
        }
    }
    let trailing: Vec<&str> = {
        let mut outputs = Vec::new();
        for entry in req
            .entries
            .iter()
            .rev()
            .skip_while(|e| matches!(e, Entry::Attachments { .. }))
        {
            match entry {
                Entry::ToolResult { output, .. } => outputs.push(output.as_str()),
                _ => break,
            }
        }
        outputs.reverse();
        outputs
    };
    let text = if trailing.is_empty() {
        req.last_user().map(parts_text).unwrap_or_default()
    } else {
        trailing.join("\n")
    };
    finish(Some(text), Vec::new(), StopReason::EndTurn, body_len)
}

fn finish(text: Option<String>, tool_calls: Vec<RawToolCall>, stop: StopReason, body_len: usize) -> ModelReply {
    let out_len = text.as_ref().map_or(0, String::len)
        + tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>();
    ModelReply {
        text,
        tool_calls,
        stop,
        usage: Usage {
            input_tokens: body_len.div_ceil(4) as u64,
            output_tokens: out_len.div_ceil(4) as u64,
            ..Usage::default()
        },
        native: None,
    }
}

/// Every well-formed `[[call:<name> <json object>]]` in `text`, in order, as (name, canonical
/// arguments).
pub fn call_directives(text: &str) -> Vec<(String, String)> {
    const OPEN: &str = "[[call:";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        rest = &rest[at + OPEN.len()..];
        let name_end = rest
            .find(|c: char| c.is_whitespace() || c == '{' || c == ']')
            .unwrap_or(rest.len());
        let name = &rest[..name_end];
        let after_name = rest[name_end..].trim_start();
        if name.is_empty() || !after_name.starts_with('{') {
            continue;
        }
        let mut stream = serde_json::Deserializer::from_str(after_name).into_iter::<Value>();
        let Some(Ok(value @ Value::Object(_))) = stream.next() else {
            continue;
        };
        let tail = after_name[stream.byte_offset()..].trim_start();
        if let Some(after) = tail.strip_prefix("]]") {
            let arguments = serde_jcs::to_string(&value).expect("a JSON value canonicalizes");
            out.push((name.to_string(), arguments));
            rest = after;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives() {
        assert_eq!(
            call_directives(r#"go [[call:read {"path":"a","b":{"x":[1]}}]] and [[call:ls {}]]"#),
            vec![
                ("read".to_string(), r#"{"b":{"x":[1]},"path":"a"}"#.to_string()),
                ("ls".to_string(), "{}".to_string())
            ]
        );
        assert!(call_directives("[[call:read [1]]] [[call: {}]] [[call:x {bad]]").is_empty());
        assert_eq!(call_directives("[[call:x {} ]]").len(), 1);
        assert_eq!(call_directives("[[call:x {\"a\":\"]]\"}]]")[0].1, r#"{"a":"]]"}"#);
    }
}
