//! The executor announcement (executor.md §4): arbitrary JSON → the twelve checks and the
//! reduced, sorted stored form. Properties: deterministic, and the stored form announced
//! again validates to itself (the reduction is a fixed point).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nexus_kernel::executor::announce::validate;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let Ok(body) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let first = validate(&body);
    match (&first, &validate(&body)) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!((a.code, &a.path, &a.detail), (b.code, &b.path, &b.detail)),
        _ => panic!("validate disagrees with itself"),
    }
    if let Ok(v) = first {
        let again = json!({"tools": v.served_tools, "environment": v.environment, "documents": v.served_documents});
        let back = validate(&again).expect("a stored announcement validates");
        assert_eq!(back, v, "the stored announcement is not a fixed point");
    }
});
