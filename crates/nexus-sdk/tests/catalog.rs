//! The catalog type reads the route's listing leniently.

use nexus_sdk::{Catalog, tools};
use serde_json::json;

fn catalog() -> Catalog {
    serde_json::from_value(nexus_core::registry::catalog()).expect("the catalog deserializes")
}

#[test]
fn the_served_catalog_deserializes_in_order() {
    let catalog = catalog();
    assert_eq!(catalog.tools.len(), 19);
    assert_eq!(catalog.canonical_names().collect::<Vec<_>>(), tools::ALL.to_vec());
}

#[test]
fn definition_and_template_lookups() {
    let catalog = catalog();
    let served = nexus_core::registry::resolve_canonical(tools::SKILL).unwrap();
    assert_eq!(catalog.definition_for(tools::SKILL), Some(served.definition()));
    assert_eq!(catalog.template_for(tools::SKILL), Some(served.template));
    assert_eq!(catalog.definition_for("skill"), None, "canonical names only");
    assert_eq!(catalog.definition_for("nexus.nope.none"), None);
}

#[test]
fn the_definition_keeps_member_order() {
    let catalog = catalog();
    let ours = serde_json::to_string(catalog.definition_for(tools::DELEGATE_TASK).unwrap()).unwrap();
    let theirs = serde_json::to_string(
        nexus_core::registry::resolve_canonical(tools::DELEGATE_TASK)
            .unwrap()
            .definition(),
    )
    .unwrap();
    assert_eq!(ours, theirs);
}

#[test]
fn unknown_fields_are_ignored_and_missing_ones_default() {
    let listing = json!({"tools":[{"canonical_name":"nexus.graph.wait","name":"wait",
        "definition":{"type":"function"},"future_key":[1,2]}],"etag":"x"});
    let catalog: Catalog = serde_json::from_value(listing).unwrap();
    assert_eq!(catalog.tools[0].name, "wait");
    assert_eq!(catalog.tools[0].template, "");
    assert!(catalog.tools[0].effect_profile.is_null());
}
