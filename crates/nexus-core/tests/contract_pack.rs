//! Drift test (registry.md §8): the committed contract pack equals the registry's render, byte
//! for byte. Regenerate with `nexus contracts generate`.

#[test]
fn committed_pack_matches_the_registry() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../contracts/nexus/v1/tools.json");
    let committed = std::fs::read_to_string(path).expect("contracts/nexus/v1/tools.json is committed");
    assert!(
        committed == nexus_core::contracts::tools_pack(),
        "contracts/nexus/v1/tools.json has drifted from the registry; run `nexus contracts generate`"
    );
}

#[test]
fn pack_listing_fixture_holds_exactly_delegate_task_as_served() {
    let pack: serde_json::Value = serde_json::from_str(&nexus_core::contracts::tools_pack()).unwrap();
    assert_eq!(pack["listing_envelope"], serde_json::json!(["tools"]));
    assert_eq!(
        pack["entry_keys"],
        serde_json::json!(["canonical_name", "name", "effect_profile", "definition", "template"])
    );
    assert_eq!(pack["unknown_field_behavior"], "ignore");
    let tools = pack["valid_listing_fixture"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    let served = nexus_core::registry::catalog();
    let delegate = served["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "delegate_task")
        .unwrap();
    assert_eq!(&tools[0], delegate);
}
