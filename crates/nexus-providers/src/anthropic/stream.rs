//! A streamed Messages reply (`stream: true`): server-sent events assembled into the content
//! blocks the non-streaming body would hold, then decoded by the same [`decode::reply`].
//!
//! - `message_start`: the usage so far (input and cache tokens).
//! - `content_block_start`: block `index` as given (`text: ""`, `tool_use` with `input: {}`,
//!   `thinking`, or a whole `server_tool_use` / `tool_search_tool_result` block).
//! - `content_block_delta`: `text_delta` is appended to the block's text and handed to the
//!   [`DeltaSink`] at once; `input_json_delta` pieces are collected and, at the block's stop,
//!   parsed into its `input` (for a `tool_use` whose pieces do not form JSON the raw text
//!   becomes the call's arguments, for the kernel to judge; for any other block it is a
//!   malformed reply); `thinking_delta` and `signature_delta` are appended to the block's
//!   `thinking` and `signature`; `citations_delta` adds to its `citations`. Other deltas are
//!   ignored.
//! - `message_delta`: the stop reason, and the usage members it carries (the final counts).
//! - `message_stop`: the reply. `ping` and unknown events are ignored.
//! - `error`: classified by [`decode::error_object`] (`overloaded_error` is
//!   `provider_overloaded`, retried as HTTP 529 is).
//! - A stream that ends before `message_stop` is `provider_overloaded` (a read failure).

use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value};

use super::decode::{self, Block, malformed};
use crate::neutral::{ModelReply, Usage};
use crate::provider::{DeltaSink, ProviderError};

/// Reads `events` (`(event, data)` pairs) to the reply, sending text deltas to `deltas`.
pub(crate) async fn read<S>(events: S, deltas: &dyn DeltaSink) -> Result<ModelReply, ProviderError>
where
    S: Stream<Item = Result<(String, String), ProviderError>>,
{
    let mut events = std::pin::pin!(events);
    let mut assembler = Assembler::default();
    while let Some(item) = events.next().await {
        let (name, data) = item?;
        if let Some(reply) = assembler.event(&name, &data, deltas)? {
            return Ok(reply);
        }
    }
    Err(ProviderError::overloaded(
        Some("the reply stream ended before message_stop".into()),
        None,
    ))
}

/// One block being assembled.
#[derive(Debug)]
struct Partial {
    block: Map<String, Value>,
    /// The `input_json_delta` pieces so far.
    json: String,
}

impl Partial {
    fn finish(self, index: usize) -> Result<Block, ProviderError> {
        let mut block = self.block;
        if !self.json.is_empty() {
            match serde_json::from_str::<Value>(&self.json) {
                Ok(input) => {
                    block.insert("input".into(), input);
                }
                Err(_) if block.get("type").and_then(Value::as_str) == Some("tool_use") => {
                    let text = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
                    return Ok(Block::RawToolUse {
                        id: text("id"),
                        name: text("name"),
                        arguments: self.json,
                    });
                }
                Err(e) => return Err(malformed(format_args!("content[{index}]: input deltas: {e}"))),
            }
        }
        Ok(Block::Json(Value::Object(block)))
    }
}

/// The state of one streamed reply.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    /// By `index`: open blocks, then finished ones.
    open: Vec<Option<Partial>>,
    done: Vec<Option<Block>>,
    stop: Option<String>,
    usage: Usage,
}

impl Assembler {
    /// Takes one event; the reply once `message_stop` arrives.
    pub(crate) fn event(
        &mut self,
        name: &str,
        data: &str,
        deltas: &dyn DeltaSink,
    ) -> Result<Option<ModelReply>, ProviderError> {
        if data.trim().is_empty() {
            return Ok(None);
        }
        let value: Value = serde_json::from_str(data).map_err(|e| malformed(format_args!("event {name}: {e}")))?;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or(name);
        match kind {
            "message_start" => {
                if let Some(u) = value.pointer("/message/usage") {
                    decode::apply_usage(&mut self.usage, u);
                }
            }
            "content_block_start" => {
                let index = index(&value)?;
                let Some(Value::Object(block)) = value.get("content_block") else {
                    return Err(malformed("content_block_start without a block"));
                };
                put(
                    &mut self.open,
                    index,
                    Partial {
                        block: block.clone(),
                        json: String::new(),
                    },
                );
            }
            "content_block_delta" => {
                let index = index(&value)?;
                let partial = self
                    .open
                    .get_mut(index)
                    .and_then(Option::as_mut)
                    .ok_or_else(|| malformed(format_args!("a delta for block {index}, which is not open")))?;
                delta(partial, value.get("delta").unwrap_or(&Value::Null), deltas);
            }
            "content_block_stop" => {
                let index = index(&value)?;
                self.stop_block(index)?;
            }
            "message_delta" => {
                if let Some(stop) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop.to_string());
                }
                if let Some(u) = value.get("usage") {
                    decode::apply_usage(&mut self.usage, u);
                }
            }
            "message_stop" => return self.finish().map(Some),
            "error" => return Err(decode::error_object(value.get("error"), data.as_bytes())),
            _ => {}
        }
        Ok(None)
    }

    fn stop_block(&mut self, index: usize) -> Result<(), ProviderError> {
        if let Some(partial) = self.open.get_mut(index).and_then(Option::take) {
            let block = partial.finish(index)?;
            put(&mut self.done, index, block);
        }
        Ok(())
    }

    /// The reply: every block in index order (a block never stopped is finished here).
    fn finish(&mut self) -> Result<ModelReply, ProviderError> {
        for index in 0..self.open.len() {
            self.stop_block(index)?;
        }
        let blocks = std::mem::take(&mut self.done).into_iter().flatten().collect();
        decode::reply(blocks, self.stop.as_deref(), self.usage)
    }
}

/// The `index` member of a block event.
fn index(value: &Value) -> Result<usize, ProviderError> {
    value
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .filter(|i| *i < 1 << 16)
        .ok_or_else(|| malformed("a block event without a valid index"))
}

fn put<T>(list: &mut Vec<Option<T>>, index: usize, item: T) {
    if list.len() <= index {
        list.resize_with(index + 1, || None);
    }
    list[index] = Some(item);
}

/// Applies one `content_block_delta`.
fn delta(partial: &mut Partial, delta: &Value, deltas: &dyn DeltaSink) {
    let piece = |name: &str| delta.get(name).and_then(Value::as_str);
    match delta.get("type").and_then(Value::as_str) {
        Some("text_delta") => {
            if let Some(text) = piece("text") {
                deltas.text(text);
                append(&mut partial.block, "text", text);
            }
        }
        Some("input_json_delta") => {
            if let Some(json) = piece("partial_json") {
                partial.json.push_str(json);
            }
        }
        Some("thinking_delta") => {
            if let Some(thinking) = piece("thinking") {
                append(&mut partial.block, "thinking", thinking);
            }
        }
        Some("signature_delta") => {
            if let Some(signature) = piece("signature") {
                append(&mut partial.block, "signature", signature);
            }
        }
        Some("citations_delta") => {
            if let Some(citation) = delta.get("citation") {
                match partial.block.get_mut("citations") {
                    Some(Value::Array(list)) => list.push(citation.clone()),
                    _ => {
                        partial
                            .block
                            .insert("citations".into(), Value::Array(vec![citation.clone()]));
                    }
                }
            }
        }
        _ => {}
    }
}

/// Appends `piece` to the string member `name` (created when absent or not a string).
fn append(block: &mut Map<String, Value>, name: &str, piece: &str) {
    match block.get_mut(name) {
        Some(Value::String(s)) => s.push_str(piece),
        _ => {
            block.insert(name.into(), Value::String(piece.into()));
        }
    }
}

#[cfg(test)]
mod tests;
