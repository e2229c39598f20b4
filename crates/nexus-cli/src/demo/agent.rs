//! The demo's agent: which model answers (a real one when a key is set, else the bundled
//! script), and the run it is given: eager `read`/`glob`/`grep` on the runner, `tool_search`
//! and `tool_call`, and the runner's `edit` deferred, so it is found by search, called through
//! the wrapper, and held for approval.

use nexus_sdk::member::{ApprovalMode, ExecutorInfo, NewRun, Step};
use serde_json::{Value, json};

/// The bundled script, written to `<data dir>/scripts/demo.jsonl`.
pub const SCRIPT: &str = include_str!("script.jsonl");

/// The eager runner tools (the agent's reading and searching).
const EAGER: [&str; 3] = ["read", "glob", "grep"];
/// The runner tool left deferred, reached through `tool_search` and `tool_call`.
const DEFERRED: &str = "edit";

/// The prompt, for a real model and as the script's user turn.
pub const PROMPT: &str = "You work in a small project folder served by a runner. \
1) Use glob and grep to find the open TODO. \
2) Read the file it is in, and the code it names. \
3) Editing is a deferred tool: find it with tool_search (query \"edit\"), then call it through tool_call \
to tick the TODO in notes.md (replace `- [ ] TODO: say hello in greet.py` with \
`- [x] say hello in greet.py`). A person approves the edit. \
4) Answer in two sentences: what you found and what you changed.";

/// Who answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// The model ref.
    pub model: String,
    /// How it was chosen, for the banner.
    pub why: String,
    /// `[providers.*]` tables to write: (instance, kind, base_url, api key variable).
    pub providers: Vec<(&'static str, &'static str, &'static str, &'static str)>,
}

const ANTHROPIC: (&str, &str, &str, &str) = (
    "anthropic",
    "anthropic",
    "https://api.anthropic.com",
    "ANTHROPIC_API_KEY",
);
const OPENAI: (&str, &str, &str, &str) = ("openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY");

/// The model: `--model`, else Anthropic or OpenAI when its key is set (`set` reads the
/// environment), else the bundled script.
pub fn choose(flag: Option<&str>, set: impl Fn(&str) -> bool) -> Model {
    let providers: Vec<_> = [ANTHROPIC, OPENAI].into_iter().filter(|p| set(p.3)).collect();
    if let Some(model) = flag {
        return Model {
            model: model.to_string(),
            why: "chosen with --model".into(),
            providers,
        };
    }
    let (model, why) = if set(ANTHROPIC.3) {
        ("anthropic/claude-sonnet-4-5", "a real model: ANTHROPIC_API_KEY is set")
    } else if set(OPENAI.3) {
        ("openai/gpt-4.1", "a real model: OPENAI_API_KEY is set")
    } else {
        (
            "scripted/demo",
            "the bundled script; set ANTHROPIC_API_KEY or OPENAI_API_KEY for a real model",
        )
    };
    Model {
        model: model.into(),
        why: why.into(),
        providers,
    }
}

/// A runner-routed, eager declaration of the served tool `name` (declarations.md §2 shape 2).
fn routed(runner: &ExecutorInfo, name: &str) -> Option<Value> {
    let tool = runner.served_tools.iter().find(|t| t.name == name)?;
    Some(json!({
        "type": "function",
        "function": {"name": name, "description": tool.description, "parameters": tool.input_schema},
        "route": {"kind": "runner", "runner_executor_public_id": runner.public_id, "tool_name": name},
    }))
}

/// The run: one model step under `ask`, where rules grant reading, searching and the
/// wrapper, so the deferred edit is the one call held for a person.
pub fn run(model: &str, runner: &ExecutorInfo) -> anyhow::Result<NewRun> {
    let mut tools = Vec::new();
    for name in EAGER {
        tools.push(routed(runner, name).ok_or_else(|| anyhow::anyhow!("the runner does not serve `{name}`"))?);
    }
    let step = Step::model(PROMPT)
        .model(model)
        .tools(tools)
        .kernel_tools(["nexus.tools.search", "nexus.tools.call"])
        .runners([runner.public_id.clone()])
        .runner_tool_names([DEFERRED]);
    let rules = json!([{"tool": "read|glob|grep|tool_search|tool_call", "verdict": "allow"}]);
    Ok(NewRun::new(ApprovalMode::Ask)
        .approval_rules(rules)
        .default_runner(&runner.public_id)
        .step(step))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_in_the_environment_picks_a_real_model() {
        let none = choose(None, |_| false);
        assert_eq!(none.model, "scripted/demo");
        assert!(none.providers.is_empty());
        let anthropic = choose(None, |k| k == "ANTHROPIC_API_KEY");
        assert_eq!(anthropic.model, "anthropic/claude-sonnet-4-5");
        assert_eq!(anthropic.providers, vec![ANTHROPIC]);
        assert_eq!(choose(None, |k| k == "OPENAI_API_KEY").model, "openai/gpt-4.1");
        assert_eq!(choose(Some("scripted/echo"), |_| true).model, "scripted/echo");
    }

    #[test]
    fn the_bundled_script_is_json_lines_naming_the_sample_todo() {
        let replies: Vec<Value> = SCRIPT
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("//"))
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
        assert_eq!(replies.len(), 5);
        assert!(SCRIPT.contains(super::super::sample::TODO_LINE));
        assert!(PROMPT.contains(super::super::sample::TODO_LINE.trim_start_matches("- [ ] TODO: ")));
    }
}
