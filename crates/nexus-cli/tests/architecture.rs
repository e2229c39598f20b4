//! The member verbs and the demo's client side speak the public API through the SDK only:
//! their files name no HTTP client and no server-side crate (the demo's `server.rs` runs the
//! kernel and is the one exception).

const SERVER_SIDE: [&str; 5] = [
    "reqwest",
    "nexus_kernel",
    "nexus_server",
    "nexus_store",
    "nexus_providers",
];

fn offenders(text: &str) -> Vec<&'static str> {
    SERVER_SIDE.into_iter().filter(|name| text.contains(name)).collect()
}

#[test]
fn the_member_verbs_and_the_demo_client_use_the_sdk_only() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<_> = std::fs::read_dir(src.join("member"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.extend(["agent.rs", "sample.rs", "mod.rs"].map(|f| src.join("demo").join(f)));
    assert!(files.len() > 10, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            offenders(&text).is_empty(),
            "{} names {:?}",
            file.display(),
            offenders(&text)
        );
    }
}

/// The check sees a server-side name when one is there (so the test above can fail).
#[test]
fn the_check_sees_a_kernel_call() {
    assert_eq!(offenders("use nexus_kernel::Kernel;"), vec!["nexus_kernel"]);
}
