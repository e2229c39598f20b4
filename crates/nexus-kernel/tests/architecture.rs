//! Architecture checks over the kernel's own source (ARCHITECTURE.md, "nexus-kernel").
//!
//! No file-level import circle: a file that names an item of another file (a `use crate::…` /
//! `use super::…`, or a path such as `crate::runs::settle::SettleError` in code) depends on the
//! file that *defines* the item; a `pub use` re-export is followed to the definition and is not
//! a dependency of the re-exporting file. No file may depend on itself through others. Test
//! modules (`#[cfg(test)] mod …`) are left out: they may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// One source file: its module path (`["runs", "settle"]`), its items and its paths.
struct SourceFile {
    rel: String,
    module: Vec<String>,
    /// Names defined here (types, functions, consts, macros, inline modules).
    defined: BTreeSet<String>,
    /// `pub use` re-exports: name → the absolute path it names.
    reexports: BTreeMap<String, Vec<String>>,
    /// Every path this file names, made absolute (`crate` dropped).
    paths: Vec<Vec<String>>,
    /// Modules whose every item this file imports (`use x::*`).
    globs: Vec<Vec<String>>,
}

fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("a file name");
    match last.as_str() {
        "lib.rs" | "mod.rs" => {}
        other => parts.push(other.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// Makes `segments` absolute from `module` (the module the path is written in).
/// `crate::`, `super::`, `self::` and bare paths (edition 2018: relative to the module).
fn absolute(module: &[String], segments: &[String]) -> Option<Vec<String>> {
    let mut out: Vec<String> = module.to_vec();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            out.clear();
            rest = &rest[1..];
        }
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                out.pop()?;
                rest = &rest[1..];
            }
        }
        Some("self") => rest = &rest[1..],
        // Relative to this module (a child module, or a name from elsewhere: an outside
        // crate's path resolves to no file of this crate, or to this file).
        Some(_) => {}
        None => return None,
    }
    out.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(out)
}

struct Collector<'a> {
    module: &'a [String],
    file: SourceFile,
}

impl Collector<'_> {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, public: bool) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, public);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.use_leaf(prefix, &n.ident.to_string(), &n.ident.to_string(), public),
            syn::UseTree::Rename(r) => self.use_leaf(prefix, &r.ident.to_string(), &r.rename.to_string(), public),
            syn::UseTree::Glob(_) => {
                if let Some(abs) = absolute(self.module, prefix) {
                    self.file.globs.push(abs);
                }
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, public);
                }
            }
        }
    }

    fn use_leaf(&mut self, prefix: &[String], name: &str, alias: &str, public: bool) {
        let mut segments = prefix.to_vec();
        segments.push(name.to_string());
        let Some(abs) = absolute(self.module, &segments) else {
            return;
        };
        if public {
            self.file.reexports.insert(alias.to_string(), abs);
        } else {
            self.file.paths.push(abs);
        }
    }
}

fn is_test_module(m: &syn::ItemMod) -> bool {
    m.attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().contains("test"))
    })
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let name = match item {
            syn::Item::Struct(i) => Some(i.ident.to_string()),
            syn::Item::Enum(i) => Some(i.ident.to_string()),
            syn::Item::Fn(i) => Some(i.sig.ident.to_string()),
            syn::Item::Const(i) => Some(i.ident.to_string()),
            syn::Item::Static(i) => Some(i.ident.to_string()),
            syn::Item::Trait(i) => Some(i.ident.to_string()),
            syn::Item::Type(i) => Some(i.ident.to_string()),
            syn::Item::Macro(i) => i.ident.as_ref().map(|i| i.to_string()),
            syn::Item::Mod(m) if m.content.is_some() => Some(m.ident.to_string()),
            _ => None,
        };
        if let Some(n) = name {
            self.file.defined.insert(n);
        }
        match item {
            syn::Item::Mod(m) if is_test_module(m) => {}
            syn::Item::Use(u) => {
                let public = !matches!(u.vis, syn::Visibility::Inherited);
                self.use_tree(&mut Vec::new(), &u.tree, public);
            }
            _ => syn::visit::visit_item(self, item),
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1
            && let Some(abs) = absolute(self.module, &segments)
        {
            self.file.paths.push(abs);
        }
        syn::visit::visit_path(self, path);
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn parse_crate(src: &Path) -> Vec<SourceFile> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    files
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).expect("readable source");
            let module = module_of(src, path);
            let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let rel = path
                .strip_prefix(src)
                .expect("under src")
                .to_string_lossy()
                .into_owned();
            // A file that is itself a test module's body (`#[cfg(test)] mod tests;`) is left out.
            if module.last().is_some_and(|m| m == "tests") {
                return None;
            }
            let mut c = Collector {
                module: &module,
                file: SourceFile {
                    rel,
                    module: module.clone(),
                    defined: BTreeSet::new(),
                    reexports: BTreeMap::new(),
                    paths: Vec::new(),
                    globs: Vec::new(),
                },
            };
            c.visit_file(&ast);
            Some(c.file)
        })
        .collect()
}

/// The file that defines what `path` names (following re-exports), if it is in this crate.
fn defining_file(files: &[SourceFile], path: &[String], depth: usize) -> Option<usize> {
    if depth > 16 {
        return None;
    }
    // The longest prefix of `path` that is a file's module.
    let (at, file) = (0..=path.len())
        .rev()
        .find_map(|n| files.iter().position(|f| f.module == path[..n]).map(|i| (n, i)))?;
    let Some(name) = path.get(at) else {
        return Some(file); // the path names the module itself
    };
    let f = &files[file];
    if f.defined.contains(name) {
        return Some(file);
    }
    if let Some(target) = f.reexports.get(name) {
        let mut next = target.clone();
        next.extend(path[at + 1..].iter().cloned());
        return defining_file(files, &next, depth + 1).or(Some(file));
    }
    Some(file)
}

/// Each file's dependencies: the files defining what it names.
fn dependencies(files: &[SourceFile]) -> Vec<BTreeSet<usize>> {
    files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut deps = BTreeSet::new();
            for p in &f.paths {
                if let Some(d) = defining_file(files, p, 0) {
                    deps.insert(d);
                }
            }
            for g in &f.globs {
                if let Some(d) = files.iter().position(|x| &x.module == g) {
                    deps.insert(d);
                }
            }
            deps.remove(&i);
            deps
        })
        .collect()
}

/// Every strongly connected component of more than one file (Tarjan), as relative paths.
fn circles(files: &[SourceFile]) -> Vec<Vec<String>> {
    let deps = dependencies(files);
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn strong(v: usize, deps: &[BTreeSet<usize>], s: &mut State) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &deps[v] {
            match s.index[w] {
                None => {
                    strong(w, deps, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                s.out.push(comp);
            }
        }
    }
    let n = files.len();
    let mut s = State {
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            strong(v, &deps, &mut s);
        }
    }
    s.out
        .into_iter()
        .map(|c| {
            let mut names: Vec<String> = c.into_iter().map(|i| files[i].rel.clone()).collect();
            names.sort();
            names
        })
        .collect()
}

#[test]
fn no_file_level_import_circle_in_the_kernel() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = parse_crate(&src);
    assert!(files.len() > 40, "the kernel's files were not found");
    let found = circles(&files);
    assert!(
        found.is_empty(),
        "file-level import circles (each line is one set of files that reach each other):\n{}",
        found.iter().map(|c| c.join(" ↔ ")).collect::<Vec<_>>().join("\n")
    );
}

/// The checker finds a circle when there is one (so the test above can fail).
#[test]
fn the_checker_sees_a_circle() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let src = dir.path();
    std::fs::write(
        src.join("lib.rs"),
        "pub mod a;\npub mod b;\npub mod c;\npub use a::A;\n",
    )
    .unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A(B);\n").unwrap();
    std::fs::write(src.join("b.rs"), "pub struct B;\nfn f() { let _ = crate::c::g(); }\n").unwrap();
    std::fs::write(src.join("c.rs"), "pub fn g() -> crate::A { todo!() }\n").unwrap();
    let files = parse_crate(src);
    assert_eq!(
        circles(&files),
        vec![vec!["a.rs".to_string(), "b.rs".into(), "c.rs".into()]]
    );
    // Through a re-export only, lib.rs is no part of it; and a one-way chain is no circle.
    std::fs::write(src.join("c.rs"), "pub fn g() {}\n").unwrap();
    assert!(circles(&parse_crate(src)).is_empty());
}
