//! Rebuild when a migration is added or edited: `sqlx::migrate!` embeds the files at compile
//! time, and Cargo does not otherwise notice new files in `migrations/`.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
