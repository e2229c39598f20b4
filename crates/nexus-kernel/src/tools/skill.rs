//! `skill` (`nexus.skill.load`, kernel-tools.md §9) when the kernel answers it: a catalog
//! entry whose frozen source is `workspace` or `user` loads `<scope>/skills/<name>` from that
//! source only (the round's frozen memory bindings) and returns the body as plain content; a
//! document absent from the callable's frozen catalog, or gone from its source, is
//! `skill_unknown`.

use nexus_core::results::ToolWord;
use nexus_store::{MemoryScope, Tx};
use serde_json::Value;

use super::params::{self, Nulls, Params};
use super::{KernelToolOutcome, ToolContext};
use crate::error::KernelResult;
use crate::memory::valid_skill_name;

/// `skill {name}`: a name in the skill grammar (unknown keys are ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
struct SkillInput {
    name: String,
}

impl SkillInput {
    fn parse(input: &Value) -> Result<Self, KernelToolOutcome> {
        let name = match Params::lenient("skill", input).typed("name", Nulls::Refused, Value::as_str) {
            Ok(Some(name)) => name,
            Ok(None) => {
                return Err(params::invalid(
                    "`name` is required; pass a skill name from your skills block or a tool_search result",
                ));
            }
            Err(other) => {
                return Err(params::invalid(&format!(
                    "`name` must be a string, got {other}; pass a skill name as listed"
                )));
            }
        };
        if !valid_skill_name(name) {
            return Err(KernelToolOutcome::error(
                ToolWord::SkillNameInvalid,
                &format!(
                    "{name:?} is not a skill name (lowercase letters and digits with single hyphens, at most 64 characters); pass the name exactly as listed"
                ),
            ));
        }
        Ok(Self { name: name.to_string() })
    }
}

/// The frozen catalog entry of `name` for the callable used.
fn catalog_entry<'c>(ctx: &ToolContext<'c>, name: &str) -> Option<&'c Value> {
    ctx.skills.iter().find(|s| {
        s.get("callable").and_then(Value::as_str) == Some(ctx.callable)
            && s.get("name").and_then(Value::as_str) == Some(name)
    })
}

/// Loads a catalog entry whose frozen source is a memory scope. `None`: the entry is not a
/// memory source (or the input is faulty), so [`run`] answers. A document gone from its
/// source falls through to [`run`] too, which answers `skill_unknown` for a listed name.
pub(crate) async fn run_from_memory(
    tx: &mut Tx,
    input: &Value,
    ctx: &ToolContext<'_>,
    memory: &Value,
) -> KernelResult<Option<KernelToolOutcome>> {
    let Ok(SkillInput { name }) = SkillInput::parse(input) else {
        return Ok(None);
    };
    let source = catalog_entry(ctx, &name)
        .and_then(|s| s.get("source"))
        .and_then(Value::as_str);
    let scope = match source {
        Some("workspace") => MemoryScope::Workspace,
        Some("user") => MemoryScope::User,
        _ => return Ok(None),
    };
    let owners = crate::memory::Owners::of_frozen(tx, memory).await?;
    let Some(owner) = owners.of(scope) else {
        return Ok(Some(run(input, ctx)));
    };
    let path = format!("{}/skills/{name}", scope.as_str());
    Ok(Some(match tx.memory_document(scope, owner, &path).await? {
        Some(doc) => KernelToolOutcome::text(doc.content),
        None => run(input, ctx),
    }))
}

/// Runs a kernel-answered `skill` load.
pub(crate) fn run(input: &Value, ctx: &ToolContext<'_>) -> KernelToolOutcome {
    let name = match SkillInput::parse(input) {
        Ok(SkillInput { name }) => name,
        Err(refusal) => return refusal,
    };
    let listed = catalog_entry(ctx, &name).is_some();
    let sentence = if listed {
        format!("the skill {name:?} is no longer held by its source; pick another skill from your catalog")
    } else {
        format!(
            "the skill {name:?} is not in the catalog of `{}`; pick a name listed for this tool in your skills block or a tool_search result",
            ctx.callable
        )
    };
    KernelToolOutcome::error(ToolWord::SkillUnknown, &sentence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_and_unknown_skills() {
        assert!(valid_skill_name("style-guide"));
        assert!(valid_skill_name("a1"));
        assert!(!valid_skill_name("Style"));
        assert!(!valid_skill_name("a--b"));
        assert!(!valid_skill_name("-a"));
        assert!(!valid_skill_name(""));
        let env = json!({});
        let ctx = ToolContext {
            tool_definitions: &[],
            environment: &env,
            skills: &[],
            callable: "skill",
        };
        let out = run(&json!({"name": "nope"}), &ctx);
        assert!(out.is_error);
        assert!(out.content.as_str().unwrap().starts_with("skill_unknown: "));
        let out = run(&json!({"name": "No"}), &ctx);
        assert!(out.content.as_str().unwrap().starts_with("skill_name_invalid: "));
        // `null` is a name of the wrong type, not an absent one.
        let out = SkillInput::parse(&json!({"name": null})).unwrap_err();
        assert!(
            out.content
                .as_str()
                .unwrap()
                .starts_with("parameter_invalid: `name` must be a string, got null")
        );
        let out = SkillInput::parse(&json!("style-guide")).unwrap_err();
        assert!(
            out.content
                .as_str()
                .unwrap()
                .starts_with("parameter_invalid: `name` is required")
        );
    }
}
