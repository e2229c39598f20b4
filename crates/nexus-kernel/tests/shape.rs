//! The code's shape, checked over the kernel's and the store's source (docs/dev/style.md):
//! no function longer than [`MAX_FN_LINES`] lines outside tests. (A function written inside a
//! `macro_rules!` body is not seen: the store's operation macros are to go.)
//!
//! A function still over the bound is named in [`LONG_ALLOWED`], with its length today; the list
//! only shrinks: a named function that got short (or went) fails the test until its line is
//! removed, and a function that grew past its recorded length fails too.

use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

mod source;
use source::{is_test, rust_files};

/// The longest a function may be, from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 80;

/// Functions still over the bound: (crate, file under `src/`, function, lines today).
const LONG_ALLOWED: &[(&str, &str, &str, usize)] = &[];

/// A function found over the bound: where, its name and its length.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Long {
    krate: String,
    file: String,
    name: String,
    lines: usize,
}

/// Collects the functions of one file that exceed the bound.
struct Finder<'a> {
    krate: &'a str,
    file: &'a str,
    found: Vec<Long>,
}

impl Finder<'_> {
    fn check(&mut self, name: &syn::Ident, sig: &syn::Signature, block: &syn::Block) {
        let first = sig.fn_token.span().start().line;
        let last = block.span().end().line;
        let lines = last + 1 - first;
        if lines > MAX_FN_LINES {
            self.found.push(Long {
                krate: self.krate.to_string(),
                file: self.file.to_string(),
                name: name.to_string(),
                lines,
            });
        }
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test(&f.attrs) {
            self.check(&f.sig.ident, &f.sig, &f.block);
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test(&f.attrs) {
            self.check(&f.sig.ident, &f.sig, &f.block);
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default
            && !is_test(&f.attrs)
        {
            self.check(&f.sig.ident, &f.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// Whether a file is test code by its name (`tests.rs`, `*_tests.rs`, a `tests/` folder).
fn is_test_file(rel: &str) -> bool {
    rel == "tests.rs" || rel.ends_with("/tests.rs") || rel.ends_with("_tests.rs") || rel.contains("tests/")
}

/// Every function over the bound in the `src/` folder of `krate`, found under `src`.
fn long_functions(krate: &str, src: &Path) -> Vec<Long> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        if is_test_file(&rel) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut finder = Finder {
            krate,
            file: &rel,
            found: Vec::new(),
        };
        finder.visit_file(&ast);
        found.extend(finder.found);
    }
    found
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name).join("src")
}

/// What the found functions break against the allowance: new long functions, grown ones, and
/// allowances that no longer name a long function.
fn breaches(found: &[Long], allowed: &[(&str, &str, &str, usize)]) -> Vec<String> {
    let mut out = Vec::new();
    for f in found {
        match allowed
            .iter()
            .find(|(k, file, name, _)| *k == f.krate && *file == f.file && *name == f.name)
        {
            None => out.push(format!(
                "{} {}: `{}` is {} lines (at most {MAX_FN_LINES}); split it into named steps",
                f.krate, f.file, f.name, f.lines
            )),
            Some((_, _, _, was)) if f.lines > *was => out.push(format!(
                "{} {}: `{}` grew to {} lines (allowed {was} while it is split)",
                f.krate, f.file, f.name, f.lines
            )),
            Some(_) => {}
        }
    }
    for (k, file, name, _) in allowed {
        if !found
            .iter()
            .any(|f| f.krate == *k && f.file == *file && f.name == *name)
        {
            out.push(format!(
                "{k} {file}: `{name}` is no longer over {MAX_FN_LINES} lines; remove it from LONG_ALLOWED"
            ));
        }
    }
    out
}

#[test]
fn no_function_over_the_bound_in_the_kernel_and_the_store() {
    let mut found = long_functions("nexus-kernel", &crate_src("nexus-kernel"));
    found.extend(long_functions("nexus-store", &crate_src("nexus-store")));
    let out = breaches(&found, LONG_ALLOWED);
    assert!(out.is_empty(), "{}", out.join("\n"));
}

/// The finder measures a function and passes over tests (so the test above can fail).
#[test]
fn the_finder_sees_a_long_function_and_skips_tests() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let body = "    let _ = 1;\n".repeat(MAX_FN_LINES);
    let text = format!(
        "fn short() {{}}\nfn long() {{\n{body}}}\n#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{body}    }}\n}}\n"
    );
    std::fs::write(dir.path().join("a.rs"), text).expect("written");
    std::fs::write(dir.path().join("b_tests.rs"), format!("fn long() {{\n{body}}}\n")).expect("written");
    let found = long_functions("k", dir.path());
    assert_eq!(
        found,
        vec![Long {
            krate: "k".into(),
            file: "a.rs".into(),
            name: "long".into(),
            lines: MAX_FN_LINES + 2,
        }]
    );
    assert!(breaches(&found, &[("k", "a.rs", "long", MAX_FN_LINES + 2)]).is_empty());
    assert_eq!(breaches(&found, &[]).len(), 1, "an unlisted long function is a breach");
    assert_eq!(
        breaches(&[], &[("k", "a.rs", "long", 90)]).len(),
        1,
        "a stale allowance is a breach"
    );
}
