//! `tool_search` (`nexus.tools.search`, kernel-tools.md §11): a search over the calling
//! execution's frozen declaration and skill catalog. It never reads a later announcement and
//! never adds a tool.

use nexus_core::search::SearchIndex;
use nexus_store::{FrozenHead, TaskKind, Tx};
use serde_json::Value;

use super::params::{self, Nulls, Params};
use super::search_cache::SearchCache;
use super::{KernelToolOutcome, ToolContext};
use crate::error::KernelResult;
use crate::runs::FrozenContext;

const QUERY_BYTES: usize = 1_024;
const LIMIT_DEFAULT: usize = 5;
const LIMIT_MAX: i64 = 20;

/// `tool_search {query, limit=5}` (unknown keys are ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
struct SearchInput {
    /// Trimmed.
    query: String,
    limit: usize,
}

impl SearchInput {
    fn parse(input: &Value) -> Result<Self, KernelToolOutcome> {
        let p = Params::lenient("tool_search", input);
        let query = match p.typed("query", Nulls::Refused, Value::as_str) {
            Ok(Some(query)) => query,
            Ok(None) => {
                return Err(params::invalid(
                    "`query` is required; pass the words to look for or a tool's exact name",
                ));
            }
            Err(other) => {
                return Err(params::invalid(&format!(
                    "`query` must be a string, got {other}; pass the words to look for"
                )));
            }
        };
        if query.trim().is_empty() {
            return Err(params::invalid("`query` is blank; pass at least one word to look for"));
        }
        if query.len() > QUERY_BYTES {
            return Err(params::invalid(&format!(
                "`query` is {} bytes, more than the {QUERY_BYTES}-byte bound; pass a shorter query",
                query.len()
            )));
        }
        let limit = p
            .typed("limit", Nulls::Refused, params::int_in(1, LIMIT_MAX))
            .map_err(|v| {
                params::invalid(&format!(
                    "`limit` must be an integer from 1 to {LIMIT_MAX}, got {v}; pass a value in range or omit it"
                ))
            })?;
        Ok(Self {
            query: query.trim().to_string(),
            limit: limit.map_or(LIMIT_DEFAULT, |n| n as usize),
        })
    }
}

/// The cache's `tool_search` entry points live here, beside the handler, so the cache (state
/// the kernel holds) names no handler.
impl SearchCache {
    /// Runs `tool_search` with `input` over the declaring round (`(task id, stored
    /// frozen_context)`; `None`: no declaring round or no frozen context, so nothing to
    /// search), through this cache: the handler's whole per-call work once the kernel has read
    /// the round row.
    pub fn tool_search(&self, input: &Value, round: Option<(i64, &str)>) -> KernelToolOutcome {
        run_frozen(self, input, round)
    }

    /// Runs `tool_search` with `input` for a call declared by task row `declaring` (the
    /// calling row's `declaring_task_id`), reading in `tx` what the cache needs: the heads of
    /// the rows up to the model round (never their frozen bytes) and, only on a miss or for a
    /// round without a stored digest, the round's `frozen_context`. The kernel's whole
    /// per-call path for `tool_search`. `known`: a head already read in `tx` after its lock
    /// (`Tx::lock` of a `LockReads::Evaluation`), used instead of reading it again.
    pub async fn tool_search_declared(
        &self,
        tx: &mut Tx,
        input: &Value,
        declaring: Option<i64>,
        known: Option<FrozenHead>,
    ) -> KernelResult<KernelToolOutcome> {
        run_declared(self, tx, input, declaring, known).await
    }
}

/// Runs `tool_search` over a parsed frozen declaration and skills, building the index for this
/// call (the kernel's evaluation goes through [`run_frozen`] and its cache instead).
pub(crate) fn run(input: &Value, ctx: &ToolContext<'_>) -> KernelToolOutcome {
    let SearchInput { query, limit } = match SearchInput::parse(input) {
        Ok(q) => q,
        Err(e) => return e,
    };
    let index = SearchIndex::new(ctx.tool_definitions, ctx.skills);
    KernelToolOutcome::text(index.search_text(&query, limit))
}

/// Runs `tool_search` over the declaring round (`(task id, stored frozen_context)`; `None`: no
/// declaring round or no frozen context, so nothing to search), through the kernel's index
/// cache: the bytes are parsed only on a miss.
pub(crate) fn run_frozen(cache: &SearchCache, input: &Value, round: Option<(i64, &str)>) -> KernelToolOutcome {
    let SearchInput { query, limit } = match SearchInput::parse(input) {
        Ok(q) => q,
        Err(e) => return e,
    };
    let Some((row, frozen)) = round else {
        return KernelToolOutcome::text(SearchIndex::new(&[], &[]).search_text(&query, limit));
    };
    let (index, _) = cache.index_of(Some(row), frozen, build);
    KernelToolOutcome::text(index.search_text(&query, limit))
}

/// Runs `tool_search` for a call declared by task row `declaring` (see
/// [`SearchCache::tool_search_declared`]): the declaring model round is found by the rows'
/// heads; a round with a stored digest is looked up by it (a hit reads no frozen bytes; a miss
/// reads them to build), one without (written before migration 0006) by its bytes.
pub(crate) async fn run_declared(
    cache: &SearchCache,
    tx: &mut Tx,
    input: &Value,
    declaring: Option<i64>,
    known: Option<FrozenHead>,
) -> KernelResult<KernelToolOutcome> {
    let SearchInput { query, limit } = match SearchInput::parse(input) {
        Ok(q) => q,
        Err(e) => return Ok(e),
    };
    let index = match declaring_head(tx, declaring, known).await? {
        None => None,
        Some(FrozenHead {
            id,
            frozen_digest: Some(digest),
            ..
        }) => cache
            .index_by_digest(id, &digest, || tx.task_frozen_context(id), build)
            .await?
            .map(|(index, _)| index),
        Some(head) => match tx.task_frozen_context(head.id).await? {
            Some(frozen) => Some(cache.index_of(Some(head.id), &frozen, build).0),
            None => None,
        },
    };
    Ok(KernelToolOutcome::text(match index {
        Some(index) => index.search_text(&query, limit),
        None => SearchIndex::new(&[], &[]).search_text(&query, limit),
    }))
}

/// The head of the model round whose frozen context a call declared by `declaring` runs under
/// (a `tool_call` child's declaring row is the wrapper row: followed up to its round), as
/// [`super::tool_call::declaring_round`] finds it, without reading any frozen bytes. `known`: a
/// head the caller read already in this unit, under its run lock, used when it names a row on
/// the way.
pub(super) async fn declaring_head(
    tx: &mut Tx,
    mut declaring: Option<i64>,
    mut known: Option<FrozenHead>,
) -> KernelResult<Option<FrozenHead>> {
    for _ in 0..64 {
        let Some(id) = declaring else { break };
        let h = match known.take_if(|k| k.id == id) {
            Some(h) => h,
            None => match tx.task_frozen_head(id).await? {
                Some(h) => h,
                None => break,
            },
        };
        if h.kind == TaskKind::Model {
            return Ok(Some(h));
        }
        declaring = h.declaring_task_id;
    }
    Ok(None)
}

/// The index of a stored frozen context, parsed as the evaluation parses it
/// ([`FrozenContext::of`]: an unreadable context is an empty one).
pub(super) fn build(frozen: &str) -> SearchIndex<'static> {
    let f: FrozenContext = serde_json::from_str(frozen).unwrap_or_default();
    SearchIndex::owned(f.tool_definitions, f.skills)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
    fn parse_trims_and_defaults() {
        let q = SearchInput::parse(&json!({"query": "  mac read ", "other": 1})).unwrap();
        assert_eq!((q.query.as_str(), q.limit), ("mac read", LIMIT_DEFAULT));
        // The bound is on the query as given, spaces included.
        let padded = format!("{}a", " ".repeat(QUERY_BYTES));
        assert!(SearchInput::parse(&json!({"query": padded})).is_err());
        let out = SearchInput::parse(&json!({"query": null})).unwrap_err();
        assert!(
            out.content
                .as_str()
                .unwrap()
                .starts_with("parameter_invalid: `query` must be a string, got null")
        );
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
            json!({"query": "a", "limit": null}),
            json!({"query": "a".repeat(QUERY_BYTES + 1)}),
        ] {
            let out = run(&input, &ctx);
            assert!(out.is_error);
            assert!(out.content.as_str().unwrap().starts_with("parameter_invalid: "));
        }
    }
}
