//! The `tool_search` index (kernel-tools.md §11): a search over a frozen declaration and its
//! skill catalog. Pure: the kernel hands in the frozen entries and catalog and serializes the
//! result.
//!
//! [`SearchIndex::new`] folds each callable's searched fields (callable, description, route
//! runner and served name, skill names and descriptions) once; [`SearchIndex::search`] scans
//! those and projects only the entries it returns.
//!
//! Matching: a query equal to a callable returns that entry alone (the first in stored order);
//! otherwise every whitespace-separated term, case-folded, must occur in the entry's folded
//! fields (no term spans two fields). Matches come in stored order, at most `limit`, and the
//! serialized result stays within [`bounds::TOOL_SEARCH_OUTPUT`] (an entry that would cross it
//! is skipped and the result marked truncated).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::bounds;
use crate::declaration::{callable_of, project_one, spelling_map_of};

/// One searchable callable of the declaration.
struct Entry<'a> {
    /// Its index in the stored declaration.
    index: usize,
    name: &'a str,
    /// Case-folded searched fields, separated by newlines so no term spans two fields.
    haystack: String,
}

/// The search index of one frozen declaration and skill catalog.
pub struct SearchIndex<'a> {
    declaration: &'a [Value],
    entries: Vec<Entry<'a>>,
    /// The first entry (position in `entries`) of each callable.
    by_name: HashMap<&'a str, usize>,
    /// Each callable's catalog entries, in catalog order.
    skills: HashMap<&'a str, Vec<&'a Value>>,
    /// The declaration's alias spelling map, built only if a bare alias needs it.
    spelling: OnceLock<HashMap<String, String>>,
}

fn str_field<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

impl<'a> SearchIndex<'a> {
    /// Folds the searched fields of every callable of `declaration`; `skills` is the frozen
    /// catalog (§11 entries, each naming its `callable`).
    pub fn new(declaration: &'a [Value], skills: &'a [Value]) -> Self {
        let mut by_skill: HashMap<&'a str, Vec<&'a Value>> = HashMap::new();
        for s in skills {
            if let Some(c) = s.get("callable").and_then(Value::as_str) {
                by_skill.entry(c).or_default().push(s);
            }
        }
        let mut index = SearchIndex {
            declaration,
            entries: Vec::with_capacity(declaration.len()),
            by_name: HashMap::with_capacity(declaration.len()),
            skills: by_skill,
            spelling: OnceLock::new(),
        };
        let mut haystack = String::new();
        for (i, entry) in declaration.iter().enumerate() {
            let Some(name) = callable_of(entry) else { continue };
            haystack.clear();
            haystack.push_str(name);
            haystack.push('\n');
            index.push_description(entry, &mut haystack);
            if let Some(r) = entry.get("route").filter(|r| r.is_object()) {
                haystack.push('\n');
                haystack.push_str(str_field(r, "runner_executor_public_id"));
                haystack.push('\n');
                haystack.push_str(str_field(r, "tool_name"));
            }
            if let Some(list) = index.skills.get(name) {
                for s in list {
                    haystack.push('\n');
                    haystack.push_str(str_field(s, "name"));
                    haystack.push('\n');
                    haystack.push_str(str_field(s, "description"));
                }
            }
            index.by_name.entry(name).or_insert(index.entries.len());
            index.entries.push(Entry {
                index: i,
                name,
                haystack: haystack.to_lowercase(),
            });
        }
        index
    }

    /// Appends the description the entry's wire form carries.
    fn push_description(&self, entry: &Value, out: &mut String) {
        let Some(obj) = entry.as_object() else { return };
        if obj.contains_key("canonical") {
            // An alias: its description is rendered (kernel macros re-spelled).
            let def = self.definition(entry);
            out.push_str(
                def.pointer("/function/description")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
            return;
        }
        let d = match obj.get("function") {
            Some(f @ Value::Object(_)) => str_field(f, "description"),
            _ => str_field(entry, "description"),
        };
        out.push_str(d);
    }

    fn definition(&self, entry: &Value) -> Value {
        project_one(entry, || {
            self.spelling.get_or_init(|| spelling_map_of(self.declaration))
        })
    }

    /// The number of searchable callables.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the declaration has no callable.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn entry_json(&self, e: &Entry<'_>) -> Value {
        let stored = &self.declaration[e.index];
        let mut m = Map::new();
        m.insert("name".into(), Value::String(e.name.to_string()));
        m.insert("definition".into(), self.definition(stored));
        if let Some(r) = stored.get("route").filter(|r| r.is_object()) {
            m.insert("route".into(), r.clone());
        }
        let skills: Vec<Value> = self
            .skills
            .get(e.name)
            .into_iter()
            .flatten()
            .map(|s| {
                let mut m = Map::new();
                for key in ["name", "description", "source", "executor_public_id"] {
                    if let Some(v) = s.get(key) {
                        m.insert(key.into(), v.clone());
                    }
                }
                Value::Object(m)
            })
            .collect();
        m.insert("skills".into(), Value::Array(skills));
        Value::Object(m)
    }

    /// Searches for `query` (already trimmed, non-blank) and returns the result object
    /// `{"tools":[{name, definition, route?, skills}], "truncated": bool}`.
    pub fn search(&self, query: &str, limit: usize) -> Value {
        let folded;
        let terms: Vec<&str>;
        let exact = self.by_name.get(query).map(|&i| &self.entries[i]);
        let mut matches: Box<dyn Iterator<Item = &Entry<'_>>> = match exact {
            Some(e) => Box::new(std::iter::once(e)),
            None => {
                folded = query.to_lowercase();
                terms = folded.split_whitespace().collect();
                Box::new(
                    self.entries
                        .iter()
                        .filter(|e| terms.iter().all(|t| e.haystack.contains(t))),
                )
            }
        };
        // `{"tools":[` + entries joined by `,` + `],"truncated":false}` (the longer flag).
        let frame = r#"{"tools":[],"truncated":false}"#.len();
        let mut used = frame;
        let mut kept: Vec<Value> = Vec::new();
        let mut truncated = false;
        for e in &mut matches {
            if kept.len() == limit {
                truncated = true;
                break;
            }
            let entry = self.entry_json(e);
            let len = serde_json::to_string(&entry).expect("json").len() + usize::from(!kept.is_empty());
            if used + len > bounds::TOOL_SEARCH_OUTPUT {
                truncated = true;
                continue;
            }
            used += len;
            kept.push(entry);
        }
        let mut out = Map::new();
        out.insert("tools".into(), Value::Array(kept));
        out.insert("truncated".into(), Value::Bool(truncated));
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decl() -> Vec<Value> {
        vec![
            json!({"type":"function","function":{"name":"alpha","description":"Reads the Alpha file.","parameters":{"type":"object"}}}),
            json!({"type":"function","function":{"name":"mac_read","description":"Read a file on the mac.","parameters":{"type":"object"}},
                   "route":{"kind":"runner","runner_executor_public_id":"0190aaaa-0000-7000-8000-000000000001","tool_name":"read"},
                   "defer_loading":true}),
            json!({"type":"web_search_20250305","name":"web_search"}),
            json!({"name":"Flat","description":"A flat GADGET entry.","parameters":{"type":"object"}}),
        ]
    }

    fn names(v: &Value) -> Vec<&str> {
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn exact_terms_order_and_limit() {
        let d = decl();
        let skills = vec![json!({"callable":"alpha","name":"pdf","description":"Handles PDFs.","source":"x"})];
        let idx = SearchIndex::new(&d, &skills);
        assert_eq!(idx.len(), 3);
        let v = idx.search("mac_read", 5);
        assert_eq!(names(&v), ["mac_read"]);
        assert_eq!(v["tools"][0]["definition"]["function"]["strict"], json!(false));
        assert!(v["tools"][0]["definition"].get("defer_loading").is_none());
        assert_eq!(v["tools"][0]["route"]["tool_name"], "read");
        assert_eq!(names(&idx.search("FILE read", 5)), ["alpha", "mac_read"]);
        assert_eq!(names(&idx.search("pdfs", 5)), ["alpha"]);
        assert_eq!(idx.search("pdfs", 5)["tools"][0]["skills"][0]["name"], "pdf");
        assert_eq!(names(&idx.search("gadget", 5)), ["Flat"]);
        let v = idx.search("file", 1);
        assert_eq!(names(&v), ["alpha"]);
        assert_eq!(v["truncated"], json!(true));
        assert_eq!(idx.search("web_search", 5)["tools"], json!([]));
        // No term spans two fields.
        assert_eq!(idx.search("alphareads", 5)["tools"], json!([]));
    }
}
