#[test]
fn scratch_size() {
    let mut total = 0;
    let mut kern = 0;
    for t in crate::registry::entries() {
        kern += crate::jcs::len(t.definition());
    }
    let f = serde_json::json!({"type": "function", "function": {"name": "tool_0001",
            "description": "Does thing number 1 to a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "A path."},
                "limit": {"type": "integer", "minimum": 1}}, "required": ["path"]}}, "route": {"kind": "runner", "runner_executor_public_id": "0190a000-0000-7000-8000-000000000001", "tool_name": "served_1"}});
    total += crate::jcs::len(&f);
    let start = std::time::Instant::now();
    let mut n = 0;
    for _ in 0..10000 {
        n += crate::declaration::canonical_len(std::hint::black_box(&f));
    }
    println!(
        "kernel defs {kern} bytes, one function {total} bytes; 10000 canonical_len {:?} ({n})",
        start.elapsed()
    );
}
