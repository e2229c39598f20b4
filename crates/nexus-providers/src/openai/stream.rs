//! A streamed reply: server-sent events `data: {chunk}` until `data: [DONE]`.
//!
//! - `choices[0].delta.content` pieces go to the [`DeltaSink`] as they arrive and make the text
//!   (a `delta.refusal` likewise makes the refusal);
//! - `delta.tool_calls[]` are merged by `index`: the first piece of a call brings its `id` and
//!   `function.name`, every piece may bring more `function.arguments` text, which is appended.
//!   A piece without an `index` (some compatible servers) continues the last call unless it
//!   brings a new `id`. Calls are returned in index order;
//! - the last `finish_reason` and the last `usage` (the final chunk, whose `choices` are empty,
//!   because the body asks for `stream_options.include_usage`) are kept;
//! - an `{"error": …}` chunk (or an `error` event) is classified as such a body is
//!   (`decode::classify_error`: overloaded for server and rate errors);
//! - a stream that ends without `[DONE]` and without a `finish_reason` broke: overloaded, as a
//!   read failure is;
//! - a call that never got an id or a name is `provider_error`, as in a completion.
//!
//! The reply is built by `decode::reply`, as the non-streaming one is, so a stream and the
//! completion it amounts to give the same [`ModelReply`].

use futures_util::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::Value;

use super::decode::{self, WireUsage};
use crate::neutral::{ModelReply, RawToolCall};
use crate::provider::{DeltaSink, ProviderError};

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallPiece>>,
}

#[derive(Deserialize)]
struct CallPiece {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionPiece>,
}

#[derive(Deserialize)]
struct FunctionPiece {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// One call being assembled.
struct Call {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// What the chunks so far amount to.
#[derive(Default)]
struct Assembly {
    content: Option<String>,
    refusal: Option<String>,
    calls: Vec<Call>,
    finish_reason: Option<String>,
    usage: Option<WireUsage>,
}

/// Reads `events` to the end of the reply.
pub(super) async fn assemble(
    events: impl Stream<Item = Result<(String, String), ProviderError>>,
    deltas: &dyn DeltaSink,
) -> Result<ModelReply, ProviderError> {
    let mut events = std::pin::pin!(events);
    let mut assembly = Assembly::default();
    while let Some(event) = events.next().await {
        let (name, data) = event?;
        let data = data.trim();
        if data == "[DONE]" {
            return assembly.finish();
        }
        if data.is_empty() {
            continue;
        }
        if name == "error" {
            let error = serde_json::from_str::<Value>(data).unwrap_or_else(|_| Value::String(data.to_string()));
            return Err(decode::classify_error(&error));
        }
        assembly.push(data, deltas)?;
    }
    if assembly.finish_reason.is_some() {
        return assembly.finish();
    }
    Err(ProviderError::overloaded(
        Some("the reply stream ended before [DONE] and without a finish_reason".to_string()),
        None,
    ))
}

impl Assembly {
    fn push(&mut self, data: &str, deltas: &dyn DeltaSink) -> Result<(), ProviderError> {
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| decode::malformed(&format!("stream chunk: {e}"), data.as_bytes()))?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(decode::classify_error(&error));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage);
        }
        for choice in chunk.choices.unwrap_or_default() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    deltas.text(&text);
                    self.content.get_or_insert_with(String::new).push_str(&text);
                }
                if let Some(text) = delta.refusal.filter(|t| !t.is_empty()) {
                    deltas.text(&text);
                    self.refusal.get_or_insert_with(String::new).push_str(&text);
                }
                for piece in delta.tool_calls.unwrap_or_default() {
                    self.merge(piece);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        Ok(())
    }

    /// Adds one tool-call piece to its call.
    fn merge(&mut self, piece: CallPiece) {
        let at = match piece.index {
            Some(index) => self.calls.iter().position(|c| c.index == index),
            None => match (&piece.id, self.calls.last()) {
                (Some(id), Some(last)) if !id.is_empty() && *id != last.id => None,
                (_, Some(_)) => Some(self.calls.len() - 1),
                (_, None) => None,
            },
        };
        let at = at.unwrap_or_else(|| {
            let index = piece
                .index
                .unwrap_or_else(|| self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0));
            self.calls.push(Call {
                index,
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            });
            self.calls.len() - 1
        });
        let call = &mut self.calls[at];
        if let Some(id) = piece.id.filter(|id| !id.is_empty())
            && call.id.is_empty()
        {
            call.id = id;
        }
        if let Some(function) = piece.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty())
                && call.name.is_empty()
            {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }

    fn finish(mut self) -> Result<ModelReply, ProviderError> {
        self.calls.sort_by_key(|c| c.index);
        let calls = self
            .calls
            .into_iter()
            .map(|c| RawToolCall {
                id: c.id,
                name: c.name,
                arguments: c.arguments,
            })
            .collect::<Vec<_>>();
        if let Some(why) = decode::incomplete_call(&calls) {
            return Err(ProviderError::error(format!("malformed_reply: stream: {why}")));
        }
        Ok(decode::reply(
            self.content,
            self.refusal,
            calls,
            self.finish_reason.as_deref(),
            self.usage.unwrap_or_default().neutral(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::neutral::StopReason;
    use crate::provider::keys;

    #[derive(Default)]
    struct Record(Mutex<Vec<String>>);

    impl DeltaSink for Record {
        fn text(&self, delta: &str) {
            self.0.lock().unwrap().push(delta.to_string());
        }
    }

    fn run(events: &[(&str, &str)]) -> (Result<ModelReply, ProviderError>, Vec<String>) {
        let events: Vec<Result<(String, String), ProviderError>> =
            events.iter().map(|(e, d)| Ok((e.to_string(), d.to_string()))).collect();
        let record = Record::default();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let reply = rt.block_on(assemble(futures_util::stream::iter(events), &record));
        (reply, record.0.into_inner().unwrap())
    }

    #[test]
    fn pieces_without_an_index_and_refusals() {
        let (reply, seen) = run(&[
            (
                "",
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{"}}]}}]}"#,
            ),
            (
                "",
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}"#,
            ),
            (
                "",
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"[]"}}]}}]}"#,
            ),
            ("", r#"{"choices":[{"index":1,"delta":{"content":"other choice"}}]}"#),
            ("", r#"{"choices":[{"delta":{"refusal":"no"},"finish_reason":"stop"}]}"#),
        ]);
        let reply = reply.unwrap();
        let calls: Vec<_> = reply
            .tool_calls
            .iter()
            .map(|c| (&*c.id, &*c.name, &*c.arguments))
            .collect();
        assert_eq!(calls, vec![("a", "f", "{}"), ("b", "g", "[]")]);
        assert_eq!(reply.text.as_deref(), Some("no"));
        assert_eq!(reply.stop, StopReason::Refused);
        assert_eq!(seen, vec!["no"]);
    }

    #[test]
    fn a_body_in_memory_decodes_as_the_stream_does_however_it_is_read() {
        let events = [
            ("", r#"{"choices":[{"delta":{"content":"Hé — ✓"}}]}"#),
            (
                "",
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"k\":"}}]}}]}"#,
            ),
            (
                "",
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
            ),
            ("", r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#),
            (
                "",
                r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}"#,
            ),
            ("", "[DONE]"),
        ];
        let (streamed, _) = run(&events);
        let streamed = streamed.unwrap();
        assert_eq!(streamed.tool_calls[0].arguments, r#"{"k":1}"#);
        let body: String = events.iter().map(|(_, d)| format!("data: {d}\n\n")).collect();
        let body = body.as_bytes();
        assert_eq!(super::super::decode_event_stream(&[body]), Ok(streamed.clone()));
        for cut in 1..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(
                super::super::decode_event_stream(&[a, b]),
                Ok(streamed.clone()),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn errors() {
        let (reply, _) = run(&[("error", r#"{"message":"overloaded","type":"server_error"}"#)]);
        assert_eq!(reply.unwrap_err().key, keys::PROVIDER_OVERLOADED);
        let (reply, _) = run(&[("error", "not json")]);
        assert_eq!(reply.unwrap_err().key, keys::PROVIDER_ERROR);
        let (reply, _) = run(&[("", "{not json")]);
        assert_eq!(reply.unwrap_err().key, keys::PROVIDER_ERROR);
        let (reply, _) = run(&[]);
        assert_eq!(reply.unwrap_err().key, keys::PROVIDER_OVERLOADED);
        // A finish_reason without [DONE] is a whole reply.
        let (reply, _) = run(&[(
            "",
            r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":"length"}]}"#,
        )]);
        assert_eq!(reply.unwrap().stop, StopReason::OutputBudgetExhausted);
        // A call whose id never came cannot be paired with its result.
        let (reply, _) = run(&[
            (
                "",
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}}]}}]}"#,
            ),
            ("", "[DONE]"),
        ]);
        assert_eq!(reply.unwrap_err().key, keys::PROVIDER_ERROR);
        // [DONE] without a finish_reason: ended as the server said.
        let (reply, _) = run(&[("", r#"{"choices":[{"delta":{"content":"hi"}}]}"#), ("", " [DONE] ")]);
        assert_eq!(reply.unwrap().stop, StopReason::EndTurn);
    }
}
