//! The `tools` member (providers.md §5.1, §5.3) and the cache that keeps its bytes.
//!
//! - A function entry (`{type:"function", function:{name, description, parameters, strict}}`)
//!   becomes `{name, description, input_schema, strict?}`: `description` only when present,
//!   `input_schema` the `parameters` (an empty object schema when absent), `strict: true` only
//!   when `strict` is `true`. Other members of the entry are not carried.
//! - An entry without `function` (shape 5) is sent verbatim, members in stored order.
//! - Under provider-side tool search, the deferred entries follow the others, in their order,
//!   each with `"defer_loading": true` last, and the regex search tool ends the list. With no
//!   deferred entry there is nothing to search and the search tool is not added; with no
//!   non-deferred entry the deferred ones are left out (the omission of declarations.md §10).
//! - With prompt caching, the last non-deferred entry gets `cache_control` (its last member).
//!
//! **The cache.** A run's rounds send the same frozen list every time, and its bytes must be
//! identical in every round. The bytes are computed once per distinct (tools, deferred tools,
//! mode) and kept in a small most-recently-used list; a request's lists are compared with the
//! kept ones member by member, in order ([`same_list`]), which walks the values without
//! serializing or hashing them. Equal lists in the same order always serialize to the same
//! bytes, so a hit gives exactly what encoding afresh gives.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::json::{EPHEMERAL, same_list, write_object_with, write_str, write_value};
use crate::provider::ProviderError;

/// The provider's regex tool-search tool, appended under server-side tool search.
pub(crate) const SEARCH_TOOL: &[u8] = br#"{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}"#;

/// The schema sent for a function without `parameters`.
const EMPTY_SCHEMA: &[u8] = br#"{"type":"object","properties":{}}"#;

/// How many distinct lists are kept.
const KEPT: usize = 4;

/// What the bytes depend on besides the lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mode {
    /// `prompt_caching`: a breakpoint on the last non-deferred tool.
    pub caching: bool,
    /// Server-side tool search is on for this model.
    pub search: bool,
}

/// The bytes of the `tools` array for `tools` and `deferred` (the deferred entries, read only
/// under `mode.search`); empty when the member is omitted.
pub(crate) fn encode(tools: &[Value], deferred: &[Value], mode: Mode) -> Result<Vec<u8>, ProviderError> {
    if tools.is_empty() {
        // Nothing eager would remain: deferred entries are left out (the fallback of §5.3).
        return Ok(Vec::new());
    }
    let deferred = if mode.search { deferred } else { &[] };
    let mut out = Vec::with_capacity(512 * (tools.len() + deferred.len()));
    out.push(b'[');
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let last = i + 1 == tools.len();
        let extra: &[(&str, &[u8])] = if mode.caching && last {
            &[("cache_control", EPHEMERAL)]
        } else {
            &[]
        };
        entry(&mut out, tool, extra).map_err(|e| ProviderError::error(format!("tools[{i}]: {e}")))?;
    }
    for (i, tool) in deferred.iter().enumerate() {
        out.push(b',');
        entry(&mut out, tool, &[("defer_loading", b"true")])
            .map_err(|e| ProviderError::error(format!("tools_deferred[{i}]: {e}")))?;
    }
    if !deferred.is_empty() {
        out.push(b',');
        out.extend_from_slice(SEARCH_TOOL);
    }
    out.push(b']');
    Ok(out)
}

/// One tool, with `extra` members added last.
fn entry(out: &mut Vec<u8>, tool: &Value, extra: &[(&str, &[u8])]) -> Result<(), &'static str> {
    let Value::Object(obj) = tool else {
        return Err("a tool entry must be an object");
    };
    match obj.get("function") {
        None => write_object_with(out, obj, extra),
        Some(Value::Object(f)) => function(out, f, extra)?,
        Some(_) => return Err("function must be an object"),
    }
    Ok(())
}

/// `{name, description?, input_schema, strict?}` and the `extra` members.
fn function(out: &mut Vec<u8>, f: &Map<String, Value>, extra: &[(&str, &[u8])]) -> Result<(), &'static str> {
    let Some(Value::String(name)) = f.get("name") else {
        return Err("function.name must be a string");
    };
    out.extend_from_slice(br#"{"name":"#);
    write_str(out, name);
    if let Some(description) = f.get("description").filter(|d| !d.is_null()) {
        out.extend_from_slice(br#","description":"#);
        write_value(out, description);
    }
    out.extend_from_slice(br#","input_schema":"#);
    match f.get("parameters").filter(|p| !p.is_null()) {
        Some(schema) => write_value(out, schema),
        None => out.extend_from_slice(EMPTY_SCHEMA),
    }
    if f.get("strict") == Some(&Value::Bool(true)) {
        out.extend_from_slice(br#","strict":true"#);
    }
    for (key, raw) in extra {
        out.push(b',');
        write_str(out, key);
        out.push(b':');
        out.extend_from_slice(raw);
    }
    out.push(b'}');
    Ok(())
}

/// One kept list and its bytes.
struct Kept {
    tools: Vec<Value>,
    deferred: Vec<Value>,
    mode: Mode,
    bytes: Arc<[u8]>,
}

/// The most recently used tools bytes of one adapter (see the module docs).
#[derive(Default)]
pub(crate) struct ToolsCache {
    /// Least recently used first.
    kept: Mutex<Vec<Kept>>,
}

impl std::fmt::Debug for ToolsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.kept.lock().map_or(0, |k| k.len());
        f.debug_struct("ToolsCache").field("kept", &n).finish()
    }
}

impl ToolsCache {
    /// The bytes [`encode`] gives for these lists, from the cache when they were seen.
    pub(crate) fn get(&self, tools: &[Value], deferred: &[Value], mode: Mode) -> Result<Arc<[u8]>, ProviderError> {
        let deferred = if mode.search { deferred } else { &[] };
        {
            let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
            let hit = kept
                .iter()
                .rposition(|k| k.mode == mode && same_list(&k.tools, tools) && same_list(&k.deferred, deferred));
            if let Some(at) = hit {
                let k = kept.remove(at);
                let bytes = Arc::clone(&k.bytes);
                kept.push(k);
                return Ok(bytes);
            }
        }
        let bytes: Arc<[u8]> = encode(tools, deferred, mode)?.into();
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.push(Kept {
            tools: tools.to_vec(),
            deferred: deferred.to_vec(),
            mode,
            bytes: Arc::clone(&bytes),
        });
        if kept.len() > KEPT {
            kept.remove(0);
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const PLAIN: Mode = Mode {
        caching: false,
        search: false,
    };

    fn text(bytes: &[u8]) -> &str {
        std::str::from_utf8(bytes).unwrap()
    }

    fn func(name: &str, strict: bool) -> Value {
        json!({"type":"function","function":{"name":name,"description":"d","parameters":{"type":"object","properties":{"b":{},"a":{}}},"strict":strict}})
    }

    #[test]
    fn functions_become_input_schema_and_strict_only_when_true() {
        let out = encode(&[func("f", false), func("g", true)], &[], PLAIN).unwrap();
        assert_eq!(
            text(&out),
            r#"[{"name":"f","description":"d","input_schema":{"type":"object","properties":{"b":{},"a":{}}}},{"name":"g","description":"d","input_schema":{"type":"object","properties":{"b":{},"a":{}}},"strict":true}]"#
        );
        let bare = json!({"type":"function","function":{"name":"h"}});
        assert_eq!(
            text(&encode(&[bare], &[], PLAIN).unwrap()),
            r#"[{"name":"h","input_schema":{"type":"object","properties":{}}}]"#
        );
    }

    #[test]
    fn shape_five_is_verbatim_and_empty_lists_omit() {
        let web = json!({"type":"web_search_20250305","name":"web_search","max_uses":3.0});
        assert_eq!(
            text(&encode(std::slice::from_ref(&web), &[], PLAIN).unwrap()),
            r#"[{"type":"web_search_20250305","name":"web_search","max_uses":3.0}]"#
        );
        assert!(encode(&[], &[], PLAIN).unwrap().is_empty());
        assert!(encode(&[json!("bare")], &[], PLAIN).is_err());
        let err = encode(&[web, json!({"function":{"description":"x"}})], &[], PLAIN).unwrap_err();
        assert_eq!(err.detail.as_deref(), Some("tools[1]: function.name must be a string"));
    }

    #[test]
    fn search_marks_deferred_and_appends_the_search_tool() {
        let mode = Mode {
            caching: true,
            search: true,
        };
        let out = encode(&[func("a", false)], &[func("b", false)], mode).unwrap();
        let s = text(&out);
        assert!(s.starts_with(r#"[{"name":"a","description":"d","input_schema":{"type":"object","properties":{"b":{},"a":{}}},"cache_control":{"type":"ephemeral"}},{"name":"b","#), "{s}");
        assert!(
            s.ends_with(
                r#""defer_loading":true},{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}]"#
            ),
            "{s}"
        );
        // No eager tool: the deferred ones are left out (and nothing is searched).
        assert!(encode(&[], &[func("b", false)], mode).unwrap().is_empty());
        // No deferred tool: no search tool.
        assert!(!text(&encode(&[func("a", false)], &[], mode).unwrap()).contains("tool_search_tool_regex"));
        // Search off: deferred ignored.
        assert_eq!(
            encode(&[func("a", false)], &[func("b", false)], PLAIN).unwrap(),
            encode(&[func("a", false)], &[], PLAIN).unwrap()
        );
    }

    #[test]
    fn the_cache_gives_the_encoded_bytes_and_respects_order() {
        let cache = ToolsCache::default();
        let a = json!({"name":"x","type":"t"});
        let b = json!({"type":"t","name":"x"});
        let first = cache.get(std::slice::from_ref(&a), &[], PLAIN).unwrap();
        assert!(Arc::ptr_eq(
            &first,
            &cache.get(std::slice::from_ref(&a), &[], PLAIN).unwrap()
        ));
        let other = cache.get(std::slice::from_ref(&b), &[], PLAIN).unwrap();
        assert_eq!(&other[..], &encode(&[b], &[], PLAIN).unwrap()[..]);
        assert_ne!(first, other);
        for i in 0..10 {
            cache.get(&[json!({"name": i})], &[], PLAIN).unwrap();
        }
        assert_eq!(cache.kept.lock().unwrap().len(), KEPT);
    }
}
