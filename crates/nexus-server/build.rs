//! The console's files are embedded by `rust-embed`'s derive, which reads `console/` when the
//! crate compiles: rebuild when any file there is added, changed or removed.
fn main() {
    println!("cargo:rerun-if-changed=console");
}
