//! The step grammar (runs.md §4): arbitrary JSON → `parse_steps`. Properties: the parse is
//! deterministic; accepted steps keep request order, minted keys are distinct, and every
//! `after` names an earlier step of the request or an existing row; every fault's path is
//! under `steps`. (A repeated authored key passes the grammar: the kernel refuses it, 409
//! `duplicate_task_key`, with the run's existing keys.)
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use nexus_core::steps::{StepsContext, parse_steps};
use serde_json::Value;

fn existing(k: &str) -> bool {
    k.starts_with("old")
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    // The body itself, or its `steps` member (the door's shape).
    let steps = match &value {
        Value::Object(m) if m.contains_key("steps") => &m["steps"],
        v => v,
    };
    let ctx = StepsContext {
        revision: 7,
        existing_keys: &existing,
    };
    let first = parse_steps(steps, &ctx);
    assert_eq!(first, parse_steps(steps, &ctx), "parse_steps is not deterministic");
    match first {
        Ok(parsed) => {
            let mut seen: HashSet<&str> = HashSet::new();
            let mut minted: HashSet<&str> = HashSet::new();
            let mut last = None;
            for step in &parsed {
                assert!(last.is_none_or(|l| l < step.index), "steps out of request order");
                last = Some(step.index);
                for a in &step.after {
                    assert!(seen.contains(a.as_str()) || existing(a), "after {a:?} names no earlier step");
                }
                seen.insert(&step.key);
                if !step.authored_key {
                    assert!(step.key.starts_with("s7-"), "minted key {:?}", step.key);
                    assert!(minted.insert(&step.key), "minted key {:?} twice", step.key);
                }
            }
        }
        Err(e) => {
            assert!(!e.steps.is_empty());
            for fault in &e.steps {
                assert!(fault.path.starts_with("steps"), "fault path {:?}", fault.path);
            }
            let _ = e.to_json();
        }
    }
});
