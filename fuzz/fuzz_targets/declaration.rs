//! The declaration grammar and render (declarations.md §2–§4): arbitrary JSON → validate,
//! render, sort. Properties: the render is byte-stable (a second call gives the same bytes),
//! a rendered set validates to itself (render is a fixed point), and the canonical sort of a
//! sorted set is itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nexus_core::declaration::{validate_and_render, validate_configuration, validate_declaration};
use serde_json::Value;

fn bytes(v: &[Value]) -> String {
    serde_json::to_string(v).expect("values serialize")
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Value::Array(entries) = &value {
        let first = validate_and_render(entries, "/tools");
        let again = validate_and_render(entries, "/tools");
        match (&first, &again) {
            (Ok(a), Ok(b)) => assert_eq!(bytes(a), bytes(b), "render is not deterministic"),
            (Err(a), Err(b)) => assert_eq!(a, b, "refusal is not deterministic"),
            _ => panic!("validate_and_render disagrees with itself"),
        }
        if let Ok(rendered) = first {
            let twice = validate_and_render(&rendered, "/tools").expect("a rendered set validates");
            assert_eq!(bytes(&twice), bytes(&rendered), "render is not a fixed point");
        }
    }
    if let Ok(sorted) = validate_declaration(&value, "/tools") {
        let again = validate_declaration(&Value::Array(sorted.clone()), "/tools").expect("a stored set validates");
        assert_eq!(bytes(&again), bytes(&sorted), "the stored declaration is not a fixed point");
    }
    if let Ok(configuration) = validate_configuration(&value) {
        let stored = configuration.to_stored_json();
        let back = validate_configuration(&stored).expect("a stored configuration validates");
        assert_eq!(
            back.to_stored_json().to_string(),
            stored.to_string(),
            "the stored configuration is not a fixed point"
        );
    }
});
