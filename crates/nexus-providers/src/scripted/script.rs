//! The script grammar (providers.md §7): JSON Lines, one assistant reply per line; blank lines
//! and lines starting with `//` are ignored. Unknown fields are refused, so a typo fails loudly.

use serde::Deserialize;
use serde_json::Value;

use crate::neutral::{ModelReply, RawToolCall, StopReason, Usage};
use crate::provider::{ProviderError, keys};

/// One parsed script line.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptLine {
    /// The 1-based line number in the file.
    pub line_no: usize,
    /// The thread this reply belongs to (default `main`).
    pub thread: String,
    /// The reply text.
    pub text: Option<String>,
    /// The calls, in order.
    pub tool_calls: Vec<ScriptCall>,
    /// The stop reason, already defaulted.
    pub stop: StopReason,
    /// Usage reported with the reply.
    pub usage: Usage,
    /// Provider-native blocks to hand back (additive; not in providers.md §7).
    pub native: Option<Value>,
    /// Request assertions.
    pub expect: Option<Expect>,
    /// An injected failure.
    pub error: Option<InjectedError>,
    /// How long to wait before answering.
    pub delay_ms: u64,
}

/// One scripted call. `id` is `None` when the script left it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptCall {
    /// The explicit id, if any.
    pub id: Option<String>,
    /// The callable name.
    pub name: String,
    /// The raw arguments text (canonical JSON of `input`, or `arguments` verbatim).
    pub arguments: String,
}

/// Request assertions of one line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Function names that must be in `request.tools`.
    #[serde(default)]
    pub tools_include: Vec<String>,
    /// Function names that must not be in `request.tools`.
    #[serde(default)]
    pub tools_exclude: Vec<String>,
    /// Text the system parts must contain.
    #[serde(default)]
    pub system_contains: Option<String>,
    /// Text the last user entry must contain.
    #[serde(default)]
    pub last_user_contains: Option<String>,
    /// The total number of parts in the request's attachment entries.
    #[serde(default)]
    pub attachments: Option<usize>,
    /// Assertions on the last tool result entry.
    #[serde(default)]
    pub last_result: Option<LastResult>,
}

/// Assertions on the last tool result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LastResult {
    /// Its call id.
    #[serde(default)]
    pub call_id: Option<String>,
    /// Its callable name.
    #[serde(default)]
    pub name: Option<String>,
    /// Text its output must contain.
    #[serde(default)]
    pub contains: Option<String>,
    /// Its error flag.
    #[serde(default)]
    pub is_error: Option<bool>,
}

/// An injected failure: `key` for the first `times` attempts (every attempt when `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InjectedError {
    /// One of the model error keys.
    pub key: &'static str,
    /// How many attempts fail.
    pub times: Option<u32>,
    /// The HTTP status reported with the error.
    pub status: Option<u16>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLine {
    #[serde(default)]
    thread: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_calls: Vec<RawCall>,
    #[serde(default)]
    stop: Option<String>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    expect: Option<Expect>,
    #[serde(default)]
    error: Option<RawError>,
    #[serde(default)]
    delay_ms: Option<u64>,
    #[serde(default)]
    native: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawError {
    key: String,
    #[serde(default)]
    times: Option<u32>,
    #[serde(default)]
    status: Option<u16>,
}

/// Parses a whole script. `file` names the file in error details.
pub fn parse_script(file: &str, text: &str) -> Result<Vec<ScriptLine>, ProviderError> {
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with("//") {
            continue;
        }
        let line_no = i + 1;
        let malformed = |msg: String| ProviderError::error(format!("script_malformed: {file} line {line_no}: {msg}"));
        let parsed: RawLine = serde_json::from_str(trimmed).map_err(|e| malformed(e.to_string()))?;
        lines.push(convert(parsed, line_no).map_err(malformed)?);
    }
    Ok(lines)
}

fn convert(raw: RawLine, line_no: usize) -> Result<ScriptLine, String> {
    let thread = raw.thread.unwrap_or_else(|| "main".to_string());
    if thread.is_empty() {
        return Err("thread must not be empty".into());
    }
    let mut tool_calls = Vec::with_capacity(raw.tool_calls.len());
    for (i, call) in raw.tool_calls.into_iter().enumerate() {
        if call.name.is_empty() {
            return Err(format!("tool_calls[{i}].name must not be empty"));
        }
        let arguments = match (call.input, call.arguments) {
            (Some(_), Some(_)) => {
                return Err(format!("tool_calls[{i}] has both input and arguments"));
            }
            (Some(input), None) => serde_jcs::to_string(&input).map_err(|e| e.to_string())?,
            (None, Some(arguments)) => arguments,
            (None, None) => "{}".to_string(),
        };
        tool_calls.push(ScriptCall {
            id: call.id,
            name: call.name,
            arguments,
        });
    }
    let stop = match raw.stop.as_deref() {
        None if tool_calls.is_empty() => StopReason::EndTurn,
        None => StopReason::ToolUse,
        Some("end_turn") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::OutputBudgetExhausted,
        Some("refusal") => StopReason::Refused,
        Some(other) => {
            return Err(format!(
                "stop must be end_turn, tool_use, max_tokens or refusal, not {other:?}"
            ));
        }
    };
    let error = match raw.error {
        None => None,
        Some(e) => {
            let key = keys::ALL
                .into_iter()
                .find(|k| *k == e.key)
                .ok_or_else(|| format!("error.key must be one of {}, not {:?}", keys::ALL.join(", "), e.key))?;
            Some(InjectedError {
                key,
                times: e.times,
                status: e.status,
            })
        }
    };
    let usage = raw
        .usage
        .map(|u| Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_read_input_tokens: u.cache_read_input_tokens,
            cache_creation_input_tokens: u.cache_creation_input_tokens,
        })
        .unwrap_or_default();
    Ok(ScriptLine {
        line_no,
        thread,
        text: raw.text,
        tool_calls,
        stop,
        usage,
        native: raw.native,
        expect: raw.expect,
        error,
        delay_ms: raw.delay_ms.unwrap_or(0),
    })
}

impl ScriptLine {
    /// The reply this line gives as the thread's `k`-th: missing ids become `call_<thread>_<k>_<i>`.
    pub fn reply(&self, k: usize) -> ModelReply {
        ModelReply {
            text: self.text.clone(),
            tool_calls: self
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| RawToolCall {
                    id: c.id.clone().unwrap_or_else(|| format!("call_{}_{k}_{i}", self.thread)),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect(),
            stop: self.stop.clone(),
            usage: self.usage,
            native: self.native.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_line() {
        let text = r#"
// a comment
{"thread":"t","text":"hi","tool_calls":[{"id":"c1","name":"read","input":{"b":1,"a":2}},{"name":"x","arguments":"{bad"}],"stop":"tool_use","usage":{"input_tokens":3,"output_tokens":4},"expect":{"tools_include":["read"]},"error":{"key":"provider_overloaded","times":1,"status":529},"delay_ms":5}

   {"text":"done"}
"#;
        let lines = parse_script("s.jsonl", text).unwrap();
        assert_eq!(lines.len(), 2);
        let l = &lines[0];
        assert_eq!(l.line_no, 3);
        assert_eq!(l.thread, "t");
        assert_eq!(l.tool_calls[0].arguments, r#"{"a":2,"b":1}"#);
        assert_eq!(l.tool_calls[1].arguments, "{bad");
        assert_eq!(
            l.error,
            Some(InjectedError {
                key: "provider_overloaded",
                times: Some(1),
                status: Some(529)
            })
        );
        assert_eq!(l.delay_ms, 5);
        let r = l.reply(2);
        assert_eq!(r.tool_calls[0].id, "c1");
        assert_eq!(r.tool_calls[1].id, "call_t_2_1");
        assert_eq!(r.usage.output_tokens, 4);
        assert_eq!(lines[1].line_no, 5);
        assert_eq!(lines[1].thread, "main");
        assert_eq!(lines[1].stop, StopReason::EndTurn);
    }

    #[test]
    fn stop_defaults_and_words() {
        let lines = parse_script(
            "s",
            r#"{"tool_calls":[{"name":"a"}]}
{"stop":"max_tokens"}
{"stop":"end_turn","tool_calls":[{"name":"a"}]}
{"stop":"refusal"}"#,
        )
        .unwrap();
        assert_eq!(lines[0].stop, StopReason::ToolUse);
        assert_eq!(lines[0].tool_calls[0].arguments, "{}");
        assert_eq!(lines[1].stop, StopReason::OutputBudgetExhausted);
        assert_eq!(lines[2].stop, StopReason::EndTurn);
        assert_eq!(lines[3].stop, StopReason::Refused);
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        for (bad, needle) in [
            ("{not json", "line 2"),
            (r#"{"txt":"typo"}"#, "unknown field"),
            (r#"{"stop":"later"}"#, "stop must be"),
            (r#"{"error":{"key":"tool_failed"}}"#, "error.key"),
            (r#"{"tool_calls":[{"name":"a","input":{},"arguments":"{}"}]}"#, "both"),
            (r#"{"expect":{"tools_includes":["a"]}}"#, "unknown field"),
            (r#"{"thread":""}"#, "thread"),
        ] {
            let err = parse_script("demo.jsonl", &format!("{{}}\n{bad}\n")).unwrap_err();
            assert_eq!(err.key, "provider_error");
            let detail = err.detail.unwrap();
            assert!(detail.starts_with("script_malformed: demo.jsonl line 2: "), "{detail}");
            assert!(detail.contains(needle), "{detail}");
        }
    }
}
