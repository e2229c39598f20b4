//! rho and the SDK are clients of the public API: their `[dependencies]` never name a crate of
//! the server side (the end-to-end tests may serve a kernel as dev-dependencies).

const SERVER_SIDE: [&str; 4] = ["nexus-store", "nexus-kernel", "nexus-server", "nexus-providers"];

/// The names in the `[dependencies]` table of the manifest at `path`.
fn dependencies(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("read the manifest");
    let manifest: toml::Table = toml::from_str(&text).expect("parse the manifest");
    let mut names: Vec<String> = Vec::new();
    if let Some(deps) = manifest.get("dependencies").and_then(|d| d.as_table()) {
        names.extend(deps.keys().cloned());
    }
    if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
        for target in targets.values() {
            if let Some(deps) = target.get("dependencies").and_then(|d| d.as_table()) {
                names.extend(deps.keys().cloned());
            }
        }
    }
    names
}

fn server_side_in(names: &[String]) -> Vec<&String> {
    names.iter().filter(|n| SERVER_SIDE.contains(&n.as_str())).collect()
}

#[test]
fn rho_and_the_sdk_depend_on_no_server_crate() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["rho", "nexus-sdk"] {
        let names = dependencies(&crates.join(krate).join("Cargo.toml"));
        assert!(names.iter().any(|n| n == "tokio"), "{krate}: the manifest was not read");
        assert!(
            server_side_in(&names).is_empty(),
            "{krate} depends on {:?}",
            server_side_in(&names)
        );
    }
}

/// The check sees a server crate when one is there (so the test above can fail).
#[test]
fn the_check_sees_a_server_dependency() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Cargo.toml");
    std::fs::write(
        &path,
        "[dependencies]\ntokio = \"1\"\n[target.'cfg(unix)'.dependencies]\nnexus-kernel = \"0\"\n",
    )
    .unwrap();
    assert_eq!(server_side_in(&dependencies(&path)), vec![&"nexus-kernel".to_string()]);
}
