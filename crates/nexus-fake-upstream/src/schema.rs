//! The published OpenAI Chat Completions schema as a test oracle, for every crate's tests (the
//! adapter's bodies, the fake upstream's canned replies, the kernel's end-to-end requests).
//!
//! `contracts/reference/openai-chat-completions.schema.json` is a subset of OpenAI's OpenAPI
//! document, made plain JSON Schema 2020-12. As its `$comment` says, a body is validated by
//! using the whole document as the root schema with `"$ref": "#/components/schemas/<Name>"`
//! added at its top; that is all this module does (`jsonschema`, built without default
//! features so nothing is fetched over the network, does the checking, formats included).
//!
//! ```no_run
//! use nexus_fake_upstream::schema::{self, REQUEST, RESPONSE};
//! schema::assert_valid(RESPONSE, &serde_json::json!({ /* a canned reply */ }));
//! schema::assert_valid_bytes(REQUEST, br#"{"model":"m","messages":[]}"#);
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

/// A request body (`POST /chat/completions`).
pub const REQUEST: &str = "CreateChatCompletionRequest";
/// A non-streaming reply body.
pub const RESPONSE: &str = "CreateChatCompletionResponse";
/// One `data:` chunk of a streaming reply (not `[DONE]`, not an `{"error": …}` chunk).
pub const STREAM_CHUNK: &str = "CreateChatCompletionStreamResponse";

/// The schema document (this crate sits two levels below the workspace root).
pub const SCHEMA_FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../contracts/reference/openai-chat-completions.schema.json"
);

fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let text = std::fs::read_to_string(SCHEMA_FILE).unwrap_or_else(|e| panic!("read {SCHEMA_FILE}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {SCHEMA_FILE}: {e}"))
    })
}

/// The validator of `components/schemas/<name>` (built once per name).
pub fn validator(name: &str) -> Arc<jsonschema::Validator> {
    static VALIDATORS: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let mut validators = VALIDATORS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    validators
        .entry(name.to_string())
        .or_insert_with(|| {
            let mut root = document().clone();
            assert!(
                root["components"]["schemas"].get(name).is_some(),
                "{SCHEMA_FILE} has no components/schemas/{name}"
            );
            root["$ref"] = Value::String(format!("#/components/schemas/{name}"));
            let validator = jsonschema::draft202012::options()
                .should_validate_formats(true)
                .build(&root)
                .unwrap_or_else(|e| panic!("the schema of {name} does not build: {e}"));
            Arc::new(validator)
        })
        .clone()
}

/// Every way `instance` fails `components/schemas/<name>`, one line each (empty: valid).
pub fn errors(name: &str, instance: &Value) -> Vec<String> {
    let validator = validator(name);
    validator
        .iter_errors(instance)
        .map(|e| format!("at {:?}: {e}", e.instance_path().to_string()))
        .collect()
}

/// Panics, listing the errors, unless `instance` is a valid `<name>`.
#[track_caller]
pub fn assert_valid(name: &str, instance: &Value) {
    let errors = errors(name, instance);
    assert!(
        errors.is_empty(),
        "not a valid {name}:\n{}\n{}",
        errors.join("\n"),
        serde_json::to_string_pretty(instance).unwrap_or_default()
    );
}

/// [`assert_valid`] of JSON bytes (which must parse).
#[track_caller]
pub fn assert_valid_bytes(name: &str, bytes: &[u8]) {
    let instance: Value =
        serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)));
    assert_valid(name, &instance);
}
