//! The `tool_search` index (kernel-tools.md §11): a search over a frozen declaration and its
//! skill catalog. Pure: the kernel hands in the frozen entries and catalog and serializes the
//! result.
//!
//! [`SearchIndex::new`] (borrowing) or [`SearchIndex::owned`] (owning, so the kernel can keep
//! the index beside the declaration it was built from) folds each callable's searched fields
//! (callable, description, route runner and served name, skill names and descriptions) once,
//! into one text where each entry's fields end with a newline; [`SearchIndex::search`] scans
//! that text a block of entries at a time and projects only the entries it returns.
//!
//! Matching: a query equal to a callable returns that entry alone (the first in stored order);
//! otherwise every whitespace-separated term, case-folded, must occur in the entry's folded
//! fields (no term spans two fields: a term holds no whitespace, and fields are separated by
//! newlines). Matches come in stored order, at most `limit`, and the serialized result stays
//! within [`bounds::TOOL_SEARCH_OUTPUT`] (an entry that would cross it is skipped and the result
//! marked truncated).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::bounds;
use crate::declaration::{callable_of, project_one, spelling_map_of};

/// Entries per block of the folded text: a block is tested for every term first (one
/// vectorized scan per term), and only a block holding them all is tested entry by entry.
const BLOCK: usize = 32;

/// The search index of one frozen declaration and skill catalog.
pub struct SearchIndex<'a> {
    declaration: Cow<'a, [Value]>,
    skills: Cow<'a, [Value]>,
    /// Each searchable callable's index in the stored declaration, in stored order.
    entries: Vec<usize>,
    /// The case-folded searched fields of every entry, each field ending with `\n`.
    text: String,
    /// Where each entry's fields start in `text`; one more than `entries` (the end).
    starts: Vec<usize>,
    /// The first entry (position in `entries`) of each callable.
    by_name: HashMap<String, usize>,
    /// Each callable's catalog entries (indexes into `skills`), in catalog order.
    skills_of: HashMap<String, Vec<usize>>,
    /// The declaration's alias spelling map, built only if a bare alias needs it.
    spelling: OnceLock<HashMap<String, String>>,
}

fn str_field<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The entry's wire form (provider projection: `strict: false` default, aliases rendered).
fn definition(declaration: &[Value], spelling: &OnceLock<HashMap<String, String>>, entry: &Value) -> Value {
    project_one(entry, || spelling.get_or_init(|| spelling_map_of(declaration)))
}

/// Appends the description the entry's wire form carries.
fn push_description(
    declaration: &[Value],
    spelling: &OnceLock<HashMap<String, String>>,
    entry: &Value,
    out: &mut String,
) {
    let Some(obj) = entry.as_object() else { return };
    if obj.contains_key("canonical") {
        // An alias: its description is rendered (kernel macros re-spelled).
        let def = definition(declaration, spelling, entry);
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

impl SearchIndex<'static> {
    /// [`SearchIndex::new`] over an owned declaration and catalog.
    pub fn owned(declaration: Vec<Value>, skills: Vec<Value>) -> Self {
        Self::build(Cow::Owned(declaration), Cow::Owned(skills))
    }
}

impl<'a> SearchIndex<'a> {
    /// Folds the searched fields of every callable of `declaration`; `skills` is the frozen
    /// catalog (§11 entries, each naming its `callable`).
    pub fn new(declaration: &'a [Value], skills: &'a [Value]) -> Self {
        Self::build(Cow::Borrowed(declaration), Cow::Borrowed(skills))
    }

    fn build(declaration: Cow<'a, [Value]>, skills: Cow<'a, [Value]>) -> Self {
        let mut skills_of: HashMap<String, Vec<usize>> = HashMap::new();
        for (k, s) in skills.iter().enumerate() {
            if let Some(c) = s.get("callable").and_then(Value::as_str) {
                skills_of.entry(c.to_string()).or_default().push(k);
            }
        }
        let spelling = OnceLock::new();
        let mut entries = Vec::with_capacity(declaration.len());
        let mut starts = Vec::with_capacity(declaration.len() + 1);
        let mut by_name = HashMap::with_capacity(declaration.len());
        let mut text = String::new();
        let mut haystack = String::new();
        for (i, entry) in declaration.iter().enumerate() {
            let Some(name) = callable_of(entry) else { continue };
            haystack.clear();
            haystack.push_str(name);
            haystack.push('\n');
            push_description(&declaration, &spelling, entry, &mut haystack);
            if let Some(r) = entry.get("route").filter(|r| r.is_object()) {
                haystack.push('\n');
                haystack.push_str(str_field(r, "runner_executor_public_id"));
                haystack.push('\n');
                haystack.push_str(str_field(r, "tool_name"));
            }
            if let Some(list) = skills_of.get(name) {
                for &k in list {
                    haystack.push('\n');
                    haystack.push_str(str_field(&skills[k], "name"));
                    haystack.push('\n');
                    haystack.push_str(str_field(&skills[k], "description"));
                }
            }
            by_name.entry(name.to_string()).or_insert(entries.len());
            entries.push(i);
            starts.push(text.len());
            // Folded per entry, as each entry's fields were folded on their own.
            text.push_str(&haystack.to_lowercase());
            text.push('\n');
        }
        starts.push(text.len());
        SearchIndex {
            declaration,
            skills,
            entries,
            text,
            starts,
            by_name,
            skills_of,
            spelling,
        }
    }

    /// The number of searchable callables.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the declaration has no callable.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The folded fields of entries `from..to` (each ending with `\n`).
    fn fields(&self, from: usize, to: usize) -> &str {
        &self.text[self.starts[from]..self.starts[to]]
    }

    /// The entries (positions in `entries`) holding every term, in stored order.
    fn matching<'s>(&'s self, terms: &'s [&'s str]) -> impl Iterator<Item = usize> + 's {
        (0..self.entries.len()).step_by(BLOCK).flat_map(move |from| {
            let to = (from + BLOCK).min(self.entries.len());
            let block = self.fields(from, to);
            let hit = terms.iter().all(|t| block.contains(t));
            (from..if hit { to } else { from }).filter(move |&e| {
                let fields = self.fields(e, e + 1);
                terms.iter().all(|t| fields.contains(t))
            })
        })
    }

    fn entry_json(&self, e: usize) -> Value {
        let stored = &self.declaration[self.entries[e]];
        let name = callable_of(stored).unwrap_or("");
        let mut m = Map::new();
        m.insert("name".into(), Value::String(name.to_string()));
        m.insert(
            "definition".into(),
            definition(&self.declaration, &self.spelling, stored),
        );
        if let Some(r) = stored.get("route").filter(|r| r.is_object()) {
            m.insert("route".into(), r.clone());
        }
        let skills: Vec<Value> = self
            .skills_of
            .get(name)
            .into_iter()
            .flatten()
            .map(|&k| {
                let s = &self.skills[k];
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

    /// The kept entries (each with its compact JSON text) and the `truncated` flag.
    fn run(&self, query: &str, limit: usize) -> (Vec<(Value, String)>, bool) {
        let folded;
        let mut terms: Vec<&str> = Vec::new();
        let exact = self.by_name.get(query).copied();
        let matches: Box<dyn Iterator<Item = usize> + '_> = match exact {
            Some(e) => Box::new(std::iter::once(e)),
            None => {
                folded = query.to_lowercase();
                terms.extend(folded.split_whitespace());
                // The longest term first: the likeliest to rule a block out.
                terms.sort_by_key(|t| std::cmp::Reverse(t.len()));
                Box::new(self.matching(&terms))
            }
        };
        // `{"tools":[` + entries joined by `,` + `],"truncated":false}` (the longer flag).
        let frame = r#"{"tools":[],"truncated":false}"#.len();
        let mut used = frame;
        let mut kept: Vec<(Value, String)> = Vec::new();
        let mut truncated = false;
        for e in matches {
            if kept.len() == limit {
                truncated = true;
                break;
            }
            let entry = self.entry_json(e);
            let text = serde_json::to_string(&entry).expect("json");
            let len = text.len() + usize::from(!kept.is_empty());
            if used + len > bounds::TOOL_SEARCH_OUTPUT {
                truncated = true;
                continue;
            }
            used += len;
            kept.push((entry, text));
        }
        (kept, truncated)
    }

    /// How many callables `query` matches: what [`SearchIndex::search`] would return without
    /// its `limit` and the output bound (a query equal to a callable matches that one alone).
    pub fn count(&self, query: &str) -> usize {
        if self.by_name.contains_key(query) {
            return 1;
        }
        let folded = query.to_lowercase();
        let mut terms: Vec<&str> = folded.split_whitespace().collect();
        terms.sort_by_key(|t| std::cmp::Reverse(t.len()));
        self.matching(&terms).count()
    }

    /// Searches for `query` (already trimmed, non-blank) and returns the result object
    /// `{"tools":[{name, definition, route?, skills}], "truncated": bool}`.
    pub fn search(&self, query: &str, limit: usize) -> Value {
        let (kept, truncated) = self.run(query, limit);
        let mut out = Map::new();
        out.insert("tools".into(), Value::Array(kept.into_iter().map(|(v, _)| v).collect()));
        out.insert("truncated".into(), Value::Bool(truncated));
        Value::Object(out)
    }

    /// [`SearchIndex::search`] as its compact JSON text (the same bytes as serializing the
    /// object), built from the entry texts the output bound already measured.
    pub fn search_text(&self, query: &str, limit: usize) -> String {
        let (kept, truncated) = self.run(query, limit);
        let mut out = String::with_capacity(
            r#"{"tools":[],"truncated":false}"#.len() + kept.iter().map(|(_, t)| t.len() + 1).sum::<usize>(),
        );
        out.push_str(r#"{"tools":["#);
        for (i, (_, text)) in kept.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(text);
        }
        out.push_str(if truncated {
            r#"],"truncated":true}"#
        } else {
            r#"],"truncated":false}"#
        });
        out
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
        assert_eq!(idx.count("FILE read"), 2);
        assert_eq!(idx.count("file"), 2);
        assert_eq!(idx.count("mac_read"), 1);
        assert_eq!(idx.count("zzz"), 0);
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

    #[test]
    fn block_scan_matches_the_entry_by_entry_scan() {
        let words = ["file", "ledger", "mail", "Ünïcode", "ΣΑΣ", "a", "x y"];
        let d: Vec<Value> = (0..300)
            .map(|i| {
                let w = words[i % words.len()];
                let v = words[(i / 7) % words.len()];
                json!({"type":"function","function":{"name":format!("t{i}"),
                    "description":format!("Does {w} with {v} #{i}."),"parameters":{"type":"object"}}})
            })
            .collect();
        let idx = SearchIndex::new(&d, &[]);
        for q in [
            "file",
            "ledger mail",
            "ünïcode",
            "σας",
            "#29",
            "zzz",
            "e",
            "t1",
            "does #2",
            "with x",
        ] {
            let folded = q.to_lowercase();
            let terms: Vec<&str> = folded.split_whitespace().collect();
            let got: Vec<usize> = idx.matching(&terms).collect();
            let want: Vec<usize> = (0..idx.len())
                .filter(|&e| terms.iter().all(|t| idx.fields(e, e + 1).contains(t)))
                .collect();
            assert_eq!(got, want, "{q}");
            if idx.search(q, 20)["tools"].as_array().unwrap().len() < 20 {
                assert_eq!(
                    idx.count(q),
                    idx.search(q, 20)["tools"].as_array().unwrap().len(),
                    "{q}"
                );
            }
            for limit in [1, 5, 20] {
                let v = idx.search(q, limit);
                assert_eq!(idx.search_text(q, limit), serde_json::to_string(&v).unwrap(), "{q}");
            }
        }
        // An owned index answers as the borrowing one.
        let owned = SearchIndex::owned(d.clone(), vec![]);
        assert_eq!(owned.search_text("ledger", 20), idx.search_text("ledger", 20));
    }
}
