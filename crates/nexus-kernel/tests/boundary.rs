//! The kernel's edges, checked over its source (ARCHITECTURE.md, "nexus-kernel"):
//!
//! - **Typed at the boundary.** A public kernel function takes and returns typed values; it
//!   names `serde_json::Value` only where the contract is free JSON (tool inputs, structured
//!   content, metadata, stored configuration). Those are [`FREE_JSON`]; the functions not yet
//!   typed are [`NOT_YET_TYPED`], a list that only shrinks. A request's parser (`parse…`,
//!   returning no `Value`) takes the body as sent: parse, then apply.
//! - **The unit of work speaks the kernel's words.** How an engine shapes its round trips stays
//!   inside the store: the kernel names none of [`ROUND_TRIP_WORDS`].
//!
//! Test code (`#[cfg(test)]`, `#[test]`, `*_tests.rs`) is left out.

use std::path::{Path, PathBuf};

use syn::visit::Visit;

mod source;
use source::{is_test, rust_files};

/// Public functions whose contract is free JSON: (file under `src/`, function).
const FREE_JSON: &[(&str, &str)] = &[
    // A stored agent configuration is the member's own JSON document.
    ("profile.rs", "configuration_read"),
    // The error envelope's extra members are free JSON by the envelope's contract.
    ("error.rs", "with_extra"),
    // A kernel tool's input is the model's JSON, checked by the tool's own parser.
    ("tools/tool_search.rs", "tool_search"),
    ("tools/tool_search.rs", "tool_search_declared"),
    ("tools/tool_search.rs", "tool_search_declared"),
    // A tool row's frozen model context is the model's JSON, served as it was frozen.
    ("runs/columns.rs", "model_context_of"),
    // A tool result's text rendering of a JSON value.
    ("tools/handler.rs", "json_text"),
];

/// Public functions that still take or return `Value` though their contract has a shape.
const NOT_YET_TYPED: &[(&str, &str)] = &[
    ("runs/create/doors.rs", "append"),
    ("runs/create/doors.rs", "create_run"),
];

/// Identifiers that shape PostgreSQL round trips, which the kernel must not name (a prefix
/// ends with `*`, a suffix starts with `*`).
const ROUND_TRIP_WORDS: &[&str] = &[
    "*_with_unit",
    "lock_run_with*",
    "reserve_ids",
    "dependents_expected",
    "probe_dependents",
    "update_task_over",
    "update_task_claimed",
];

/// The kernel names of [`ROUND_TRIP_WORDS`] still standing: (file, identifier). Only shrinks.
const ROUND_TRIP_WORDS_LEFT: &[(&str, &str)] = &[];

fn matches_word(ident: &str, word: &str) -> bool {
    if let Some(prefix) = word.strip_suffix('*') {
        ident.starts_with(prefix)
    } else if let Some(suffix) = word.strip_prefix('*') {
        ident.ends_with(suffix)
    } else {
        ident == word
    }
}

/// What one file shows: its public functions naming `Value`, its round-trip words.
#[derive(Default)]
struct Seen {
    value_fns: Vec<String>,
    words: Vec<String>,
}

struct Walker {
    seen: Seen,
}

impl Walker {
    fn signature(&mut self, vis: &syn::Visibility, sig: &syn::Signature) {
        if !matches!(vis, syn::Visibility::Public(_)) {
            return;
        }
        let mut names = ValueNames(false);
        names.visit_signature(sig);
        // Parse, then apply: a request's parser takes the body as sent and returns its type.
        let mut returns = ValueNames(false);
        returns.visit_return_type(&sig.output);
        let parser = sig.ident.to_string().starts_with("parse") && !returns.0;
        if names.0 && !parser {
            self.seen.value_fns.push(sig.ident.to_string());
        }
    }
}

/// Whether a signature names `Value`.
struct ValueNames(bool);

impl<'ast> Visit<'ast> for ValueNames {
    fn visit_ident(&mut self, i: &'ast syn::Ident) {
        if i == "Value" {
            self.0 = true;
        }
    }
}

impl<'ast> Visit<'ast> for Walker {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test(&f.attrs) {
            self.signature(&f.vis, &f.sig);
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test(&f.attrs) {
            self.signature(&f.vis, &f.sig);
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    fn visit_ident(&mut self, i: &'ast syn::Ident) {
        let name = i.to_string();
        if ROUND_TRIP_WORDS.iter().any(|w| matches_word(&name, w)) && !self.seen.words.contains(&name) {
            self.seen.words.push(name);
        }
    }
}

/// (file, name) pairs a scan found.
type Found = Vec<(String, String)>;

/// (file, public function naming `Value`) and (file, round-trip word) over the files in `src`.
fn scan(src: &Path) -> (Found, Found) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let (mut value_fns, mut words) = (Vec::new(), Vec::new());
    for path in files {
        let rel = path
            .strip_prefix(src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        if rel.ends_with("_tests.rs") || rel.ends_with("/tests.rs") || rel == "booted.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut walker = Walker { seen: Seen::default() };
        walker.visit_file(&ast);
        value_fns.extend(walker.seen.value_fns.into_iter().map(|f| (rel.clone(), f)));
        words.extend(walker.seen.words.into_iter().map(|w| (rel.clone(), w)));
    }
    (value_fns, words)
}

/// The breaches of `found` against an allowance that only shrinks.
fn ratchet(what: &str, found: &[(String, String)], allowed: &[&[(&str, &str)]]) -> Vec<String> {
    let listed = |file: &str, name: &str| {
        allowed
            .iter()
            .flat_map(|l| l.iter())
            .any(|(f, n)| *f == file && *n == name)
    };
    let mut out: Vec<String> = found
        .iter()
        .filter(|(f, n)| !listed(f, n))
        .map(|(f, n)| format!("{f}: `{n}` {what}"))
        .collect();
    for (f, n) in allowed.iter().flat_map(|l| l.iter()) {
        if !found.iter().any(|(ff, nn)| ff == f && nn == n) {
            out.push(format!(
                "{f}: `{n}` is listed but no longer found; remove it from the list"
            ));
        }
    }
    out
}

fn kernel_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn public_kernel_functions_name_value_only_for_free_json() {
    let (value_fns, _) = scan(&kernel_src());
    let out = ratchet(
        "is public and takes or returns `Value`: give it typed requests and replies (or, for \
         free JSON, list it in FREE_JSON with why)",
        &value_fns,
        &[FREE_JSON, NOT_YET_TYPED],
    );
    assert!(out.is_empty(), "{}", out.join("\n"));
}

#[test]
fn the_kernel_names_no_round_trip_shaping() {
    let (_, words) = scan(&kernel_src());
    let out = ratchet(
        "shapes the store's round trips: ask the unit of work in the kernel's words",
        &words,
        &[ROUND_TRIP_WORDS_LEFT],
    );
    assert!(out.is_empty(), "{}", out.join("\n"));
}

/// The scan finds both kinds of breach and passes over tests (so the tests above can fail).
#[test]
fn the_scan_sees_value_and_round_trip_words() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(
        dir.path().join("a.rs"),
        "pub fn open(v: &Value) -> u8 { 0 }\npub(crate) fn inner(v: Value) {}\n\
         pub fn parse(v: &Value) -> Result<u8, E> { 0 }\npub fn parse_back(v: u8) -> Value { v }\n\
         fn f(tx: &mut Tx) { tx.insert_edge_with_unit(1); }\n\
         #[cfg(test)]\nmod tests { pub fn t() -> Value { todo!() } fn g() { reserve_ids(); } }\n",
    )
    .expect("written");
    let (value_fns, words) = scan(dir.path());
    assert_eq!(
        value_fns,
        vec![
            ("a.rs".to_string(), "open".to_string()),
            ("a.rs".to_string(), "parse_back".to_string())
        ]
    );
    assert_eq!(words, vec![("a.rs".to_string(), "insert_edge_with_unit".to_string())]);
    assert_eq!(ratchet("x", &value_fns, &[]).len(), 2);
    assert!(ratchet("x", &value_fns, &[&[("a.rs", "open"), ("a.rs", "parse_back")]]).is_empty());
    assert_eq!(
        ratchet("x", &[], &[&[("a.rs", "open")]]).len(),
        1,
        "a stale entry is a breach"
    );
}
