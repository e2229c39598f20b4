//! The executor announcement (executor.md §4): arbitrary JSON → the twelve checks and the
//! reduced, sorted stored form. Properties: deterministic, and the stored form announced
//! again validates to itself (the reduction is a fixed point).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nexus_kernel::executor::announce;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let Ok(body) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let first = announce::parse(&body);
    match (&first, &announce::parse(&body)) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!((a.code, &a.path, &a.detail), (b.code, &b.path, &b.detail)),
        _ => panic!("parse disagrees with itself"),
    }
    if let Ok(v) = first {
        let again = json!({"tools": v.served_tools, "environment": v.environment, "documents": v.served_documents});
        let back = announce::parse(&again).expect("a stored announcement validates");
        assert_eq!(back, v, "the stored announcement is not a fixed point");
    }
});
