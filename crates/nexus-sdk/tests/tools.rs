//! The canonical-name constants match the registry.

use nexus_sdk::tools;

#[test]
fn all_equals_the_registry_in_order() {
    let registry: Vec<&str> = nexus_core::registry::entries().iter().map(|t| t.canonical).collect();
    assert_eq!(tools::ALL.to_vec(), registry);
}

#[test]
fn named_constants_resolve_to_their_wire_names() {
    let pairs = [
        (tools::SKILL, "skill"),
        (tools::DELEGATE_TASK, "delegate_task"),
        (tools::TOOL_SEARCH, "tool_search"),
        (tools::TOOL_CALL, "tool_call"),
        (tools::RUNNERS_LIST, "runners_list"),
        (tools::MEMORY_READ, "memory_read"),
        (tools::SESSION_SEARCH, "session_search"),
        (tools::SESSION_READ, "session_read"),
    ];
    for (canonical, wire) in pairs {
        let entry = nexus_core::registry::resolve_canonical(canonical).expect(canonical);
        assert_eq!(entry.wire, wire);
    }
    assert_eq!(tools::SKILL, "nexus.skill.load");
    assert_eq!(tools::DELEGATE_TASK, "nexus.graph.delegate_task");
}
