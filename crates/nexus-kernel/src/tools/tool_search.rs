//! `tool_search` (`nexus.tools.search`, kernel-tools.md §11): a search over the calling
//! execution's frozen declaration and skill catalog. It never reads a later announcement and
//! never adds a tool.

use nexus_core::bounds;
use nexus_core::declaration::{self, callable_of};
use serde_json::{Map, Value, json};

use super::{KernelToolOutcome, ToolContext};

const QUERY_BYTES: usize = 1_024;
const LIMIT_DEFAULT: usize = 5;
const LIMIT_MAX: u64 = 20;

/// One searchable callable of the frozen declaration.
struct Candidate {
    name: String,
    /// The wire-form definition, as provider projection would offer it.
    definition: Value,
    route: Option<Value>,
    skills: Vec<Value>,
    /// Case-folded searched fields, separated by newlines so no term spans two fields.
    haystack: String,
}

fn parse_input(input: &Value) -> Result<(String, usize), Box<KernelToolOutcome>> {
    let query = match input.get("query") {
        None => {
            return Err(Box::new(KernelToolOutcome::error(
                "parameter_invalid",
                "`query` is required; pass the words to look for or a tool's exact name",
            )));
        }
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(Box::new(KernelToolOutcome::error(
                "parameter_invalid",
                &format!("`query` must be a string, got {other}; pass the words to look for"),
            )));
        }
    };
    let trimmed = query.trim();
    if trimmed.is_empty() {
        return Err(Box::new(KernelToolOutcome::error(
            "parameter_invalid",
            "`query` is blank; pass at least one word to look for",
        )));
    }
    if query.len() > QUERY_BYTES {
        return Err(Box::new(KernelToolOutcome::error(
            "parameter_invalid",
            &format!(
                "`query` is {} bytes, more than the {QUERY_BYTES}-byte bound; pass a shorter query",
                query.len()
            ),
        )));
    }
    let limit = match input.get("limit") {
        None => LIMIT_DEFAULT,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=LIMIT_MAX).contains(&n) => n as usize,
            _ => {
                return Err(Box::new(KernelToolOutcome::error(
                    "parameter_invalid",
                    &format!(
                        "`limit` must be an integer from 1 to {LIMIT_MAX}, got {v}; pass a value in range or omit it"
                    ),
                )));
            }
        },
    };
    Ok((trimmed.to_string(), limit))
}

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The wire form of every entry, one per stored entry: provider projection with deferral and
/// skill omission disabled (so every callable has its definition).
fn definitions(declaration: &[Value]) -> Vec<Value> {
    let stripped: Vec<Value> = declaration
        .iter()
        .map(|e| match e {
            Value::Object(m) if m.contains_key("defer_loading") => {
                let mut m = m.clone();
                m.shift_remove("defer_loading");
                Value::Object(m)
            }
            other => other.clone(),
        })
        .collect();
    let every_callable: Vec<Value> = declaration
        .iter()
        .filter_map(callable_of)
        .map(|c| json!({"callable": c}))
        .collect();
    let projected = declaration::project(&stripped, &every_callable);
    debug_assert_eq!(projected.len(), declaration.len());
    projected
}

fn candidates(ctx: &ToolContext<'_>) -> Vec<Candidate> {
    let defs = definitions(ctx.tool_definitions);
    let mut out = Vec::new();
    for (i, entry) in ctx.tool_definitions.iter().enumerate() {
        let Some(name) = callable_of(entry) else { continue };
        let definition = defs.get(i).cloned().unwrap_or_else(|| entry.clone());
        let description = definition
            .pointer("/function/description")
            .and_then(Value::as_str)
            .unwrap_or("");
        let route = entry.get("route").filter(|r| r.is_object()).cloned();
        let skills: Vec<Value> = ctx
            .skills
            .iter()
            .filter(|s| str_field(s, "callable") == name)
            .map(|s| {
                let mut m = Map::new();
                for key in ["name", "description", "source", "executor_public_id"] {
                    if let Some(v) = s.get(key) {
                        m.insert(key.into(), v.clone());
                    }
                }
                Value::Object(m)
            })
            .collect();
        let mut fields: Vec<&str> = vec![name, description];
        if let Some(r) = &route {
            fields.push(str_field(r, "runner_executor_public_id"));
            fields.push(str_field(r, "tool_name"));
        }
        for s in &skills {
            fields.push(str_field(s, "name"));
            fields.push(str_field(s, "description"));
        }
        let haystack = fields.join("\n").to_lowercase();
        out.push(Candidate {
            name: name.to_string(),
            definition,
            route,
            skills,
            haystack,
        });
    }
    out
}

fn entry_json(c: &Candidate) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::String(c.name.clone()));
    m.insert("definition".into(), c.definition.clone());
    if let Some(r) = &c.route {
        m.insert("route".into(), r.clone());
    }
    m.insert("skills".into(), Value::Array(c.skills.clone()));
    Value::Object(m)
}

/// Runs `tool_search` over the frozen declaration and skills.
pub(crate) fn run(input: &Value, ctx: &ToolContext<'_>) -> KernelToolOutcome {
    let (query, limit) = match parse_input(input) {
        Ok(q) => q,
        Err(e) => return *e,
    };
    let all = candidates(ctx);
    let matches: Vec<&Candidate> = match all.iter().find(|c| c.name == query) {
        Some(exact) => vec![exact],
        None => {
            let folded = query.to_lowercase();
            let terms: Vec<&str> = folded.split_whitespace().collect();
            all.iter()
                .filter(|c| terms.iter().all(|t| c.haystack.contains(t)))
                .collect()
        }
    };
    // `{"tools":[` + entries joined by `,` + `],"truncated":false}` (the longer flag).
    let frame = r#"{"tools":[],"truncated":false}"#.len();
    let mut used = frame;
    let mut kept: Vec<Value> = Vec::new();
    let mut truncated = false;
    for c in matches {
        if kept.len() == limit {
            truncated = true;
            break;
        }
        let entry = entry_json(c);
        let len = serde_json::to_string(&entry).expect("json").len() + usize::from(!kept.is_empty());
        if used + len > bounds::TOOL_SEARCH_OUTPUT {
            truncated = true;
            continue;
        }
        used += len;
        kept.push(entry);
    }
    KernelToolOutcome::json_text(&json!({"tools": kept, "truncated": truncated}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl() -> Vec<Value> {
        vec![
            json!({"type":"function","function":{"name":"alpha","description":"Reads the Alpha file.","parameters":{"type":"object"}}}),
            json!({"type":"function","function":{"name":"mac_read","description":"Read a file on the mac.","parameters":{"type":"object"}},
                   "route":{"kind":"runner","runner_executor_public_id":"0190aaaa-0000-7000-8000-000000000001","tool_name":"read"},
                   "defer_loading":true}),
            json!({"type":"web_search_20250305","name":"web_search"}),
        ]
    }

    fn run_with(input: Value) -> Value {
        let d = decl();
        let skills = vec![];
        let env = json!({});
        let out = run(
            &input,
            &ToolContext {
                tool_definitions: &d,
                environment: &env,
                skills: &skills,
                callable: "tool_search",
            },
        );
        assert!(!out.is_error, "{:?}", out.content);
        serde_json::from_str(out.content.as_str().unwrap()).unwrap()
    }

    #[test]
    fn exact_name_returns_that_entry_with_strict_false() {
        let v = run_with(json!({"query": "mac_read"}));
        assert_eq!(v["truncated"], json!(false));
        let tools = v["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0]["name"], "mac_read");
        assert_eq!(tools[0]["definition"]["function"]["strict"], json!(false));
        assert!(tools[0]["definition"].get("route").is_none());
        assert_eq!(tools[0]["route"]["tool_name"], "read");
        assert_eq!(tools[0]["skills"], json!([]));
    }

    #[test]
    fn terms_match_case_folded_in_declaration_order() {
        let v = run_with(json!({"query": "FILE read"}));
        let names: Vec<&str> = v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["alpha", "mac_read"]);
        let v = run_with(json!({"query": "0190aaaa"}));
        assert_eq!(v["tools"].as_array().unwrap().len(), 1);
        let v = run_with(json!({"query": "file", "limit": 1}));
        assert_eq!(v["tools"].as_array().unwrap().len(), 1);
        assert_eq!(v["truncated"], json!(true));
        let v = run_with(json!({"query": "web_search"}));
        assert_eq!(v["tools"], json!([]));
    }

    #[test]
    fn bad_input_is_parameter_invalid() {
        let d = decl();
        let env = json!({});
        let ctx = ToolContext {
            tool_definitions: &d,
            environment: &env,
            skills: &[],
            callable: "tool_search",
        };
        for input in [
            json!({}),
            json!({"query": "  "}),
            json!({"query": 3}),
            json!({"query": "a", "limit": 0}),
            json!({"query": "a", "limit": 21}),
        ] {
            let out = run(&input, &ctx);
            assert!(out.is_error);
            assert!(out.content.as_str().unwrap().starts_with("parameter_invalid: "));
        }
    }
}
