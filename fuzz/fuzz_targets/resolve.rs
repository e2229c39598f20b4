//! Alias call resolution (declarations.md §5): `{"tools": [...], "name": "...", "args": ...}`.
//! Properties: `resolve_call` and a prepared `Resolver` agree; an undeclared name passes its
//! arguments through unchanged; for an alias whose arguments use only its own parameter names
//! (or keys it neither maps nor omits), `express_through_alias` inverts the input mapping.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nexus_core::declaration::{Resolver, express_through_alias, resolve_call, validate_declaration};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Object(input)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let tools = input.get("tools").cloned().unwrap_or(Value::Null);
    let name = input.get("name").and_then(Value::as_str).unwrap_or("");
    let args = input.get("args").cloned().unwrap_or(Value::Null);

    // Raw, unvalidated entries: resolution must not panic on anything stored.
    if let Value::Array(raw) = &tools {
        let a = resolve_call(raw, name, &args);
        assert_eq!(a, Resolver::new(raw).resolve(name, &args));
        let _ = express_through_alias(raw, name, &args);
    }

    let Ok(decl) = validate_declaration(&tools, "/tools") else {
        return;
    };
    let call = resolve_call(&decl, name, &args);
    assert_eq!(call, Resolver::new(&decl).resolve(name, &args), "Resolver disagrees");
    let Some(index) = call.entry else {
        assert_eq!(call.tool_name, name);
        assert_eq!(call.tool_input, args, "an undeclared call's input changed");
        assert!(call.tool_alias.is_none() && call.route.is_none());
        return;
    };
    let entry = &decl[index];
    if entry.get("canonical").is_none() || call.route.is_some() {
        return;
    }
    // An alias: check the inverse mapping on the arguments it maps back exactly.
    assert_eq!(call.tool_alias.as_deref(), Some(name));
    let back = express_through_alias(&decl, name, &call.tool_input).expect("an alias expresses");
    let Value::Object(a) = &args else {
        assert_eq!(back, args, "a non-object input is not kept");
        return;
    };
    let params = entry.get("params").and_then(Value::as_object);
    let is_param = |k: &str| params.is_some_and(|p| p.contains_key(k));
    let is_target = |k: &str| params.is_some_and(|p| p.values().any(|s| s.get("maps_to").and_then(Value::as_str) == Some(k)));
    let omitted = |k: &str| {
        entry
            .get("omit")
            .and_then(Value::as_array)
            .is_some_and(|o| o.iter().any(|v| v.as_str() == Some(k)))
    };
    if a.keys().all(|k| is_param(k) || (!omitted(k) && !is_target(k))) {
        assert_eq!(back, args, "express_through_alias does not invert the alias mapping");
    }
});
