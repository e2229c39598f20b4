//! Every shipped recut anchor of `delegate_task` is present in the contract pack fixture's
//! template (registry.md §8, declarations.md §13).

use nexus_sdk::adaptations::Presets;
use nexus_sdk::{Catalog, tools};
use serde_json::Value;

const PACK: &str = "../../contracts/nexus/v1/tools.json";

#[test]
fn delegate_task_recut_anchors_are_in_the_contract_pack() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PACK);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("read {}: {e} (run `nexus contracts generate`)", path.display()));
    let pack: Value = serde_json::from_str(&text).expect("the pack is JSON");
    let entry = &pack["valid_listing_fixture"]["tools"][0];
    assert_eq!(entry["canonical_name"], tools::DELEGATE_TASK);
    let template = entry["template"].as_str().expect("the fixture carries a template");

    let recuts: Vec<_> = Presets::shipped()
        .aliases()
        .filter(|a| a.canonical == tools::DELEGATE_TASK)
        .filter_map(|a| a.recut.as_ref())
        .collect();
    assert!(!recuts.is_empty(), "the claude preset recuts delegate_task");
    for recut in recuts {
        assert!(template.contains(&recut.anchor), "anchor moved: {:?}", recut.anchor);
    }

    // The fixture listing is a catalog the SDK reads and applies.
    let listing: Catalog = serde_json::from_value(pack["valid_listing_fixture"].clone()).unwrap();
    let out = nexus_sdk::adaptations::apply(&listing, &["claude"], &[]).unwrap();
    assert_eq!(out.len(), 1, "only Agent: ask and skill are not in the fixture");
    assert_eq!(out[0]["name"], "Agent");
}
