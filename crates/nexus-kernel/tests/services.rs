//! The kernel by area (docs/decisions/240-kernel-services.md): an area's public doors are
//! methods of its service (`kernel.runs()`, `kernel.uploads()`, ...), so outside `kernel.rs`
//! (the accessors, the constructors, the clock) no `impl Kernel` method is `pub`; the internals
//! every area shares stay on `Kernel` as `pub(crate)`.

use std::path::Path;

mod source;
use source::{is_test, rust_files};

/// `file: method` for every `pub` method of an `impl Kernel` block in `text`.
fn public_kernel_methods(rel: &str, text: &str) -> Vec<String> {
    let ast = syn::parse_file(text).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let mut out = Vec::new();
    for item in &ast.items {
        let syn::Item::Impl(i) = item else { continue };
        let syn::Type::Path(p) = &*i.self_ty else { continue };
        if i.trait_.is_some() || !p.path.is_ident("Kernel") || is_test(&i.attrs) {
            continue;
        }
        for it in &i.items {
            if let syn::ImplItem::Fn(f) = it
                && matches!(f.vis, syn::Visibility::Public(_))
            {
                out.push(format!("{rel}: {}", f.sig.ident));
            }
        }
    }
    out
}

#[test]
fn doors_are_service_methods_not_kernel_methods() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 40, "the kernel's files were not found");
    let mut found = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .into_owned();
        if rel != "kernel.rs" {
            found.extend(public_kernel_methods(
                &rel,
                &std::fs::read_to_string(&path).expect("readable"),
            ));
        }
    }
    assert!(
        found.is_empty(),
        "public `impl Kernel` methods outside kernel.rs (make them doors of the area's service, or pub(crate) internals):\n{}",
        found.join("\n")
    );
}

/// The check sees a public `impl Kernel` method, and not a service's or a crate-private one.
#[test]
fn the_check_sees_a_public_kernel_method() {
    let text = "impl Kernel { pub async fn list_runs(&self) {} pub(crate) fn emit(&self) {} }\n\
                impl Runs<'_> { pub fn get_run(&self) {} }\n\
                impl Clone for Kernel { fn clone(&self) -> Self { todo!() } }\n\
                #[cfg(test)]\nimpl Kernel { pub fn helper(&self) {} }\n";
    assert_eq!(
        public_kernel_methods("runs/read.rs", text),
        vec!["runs/read.rs: list_runs".to_string()]
    );
}
