//! Builders for the common authored steps (runs.md §4). A step is JSON: anything these builders
//! do not cover can be written as a `serde_json::Value` and passed where a step is taken.

use serde_json::{Map, Value};

use crate::common::open_words;

open_words! {
    /// A step's `on_failure` policy (runs.md §6).
    pub enum OnFailure {
        /// Skip not-yet-started descendants.
        Propagate = "propagate",
        /// The failure satisfies dependents, which read it.
        Absorb = "absorb",
        /// Like `propagate`, and mark the run for attention.
        Halt = "halt",
    }
}

open_words! {
    /// A step's transcript visibility.
    pub enum Visibility {
        /// Shown.
        Visible = "visible",
        /// Shown by its title.
        Collapsed = "collapsed",
        /// Left out unless asked for.
        Hidden = "hidden",
    }
}

/// Constructors of the common steps; each returns a builder that turns into the step's JSON
/// with `Value::from` (or wherever `impl Into<Value>` is taken).
#[derive(Debug, Clone, Copy)]
pub struct Step;

impl Step {
    /// A `model` step reading `prompt`.
    pub fn model(prompt: impl Into<String>) -> ModelStep {
        let mut body = Map::new();
        body.insert("prompt".into(), Value::String(prompt.into()));
        ModelStep {
            common: Common::default(),
            body,
        }
    }

    /// A `tool` step for `name` routed to a runner: the run's default runner unless
    /// [`ToolStep::runner`] names one. `input` is the tool's input object.
    pub fn runner_tool(name: impl Into<String>, input: Value) -> ToolStep {
        let mut route = Map::new();
        route.insert("kind".into(), Value::String("runner".into()));
        let mut step = Step::tool(name, input);
        step.body.insert("route".into(), Value::Object(route));
        step
    }

    /// A `tool` step for `name` with no route: addressed when it becomes ready.
    pub fn tool(name: impl Into<String>, input: Value) -> ToolStep {
        let mut body = Map::new();
        body.insert("name".into(), Value::String(name.into()));
        body.insert("input".into(), input);
        ToolStep {
            common: Common::default(),
            body,
        }
    }

    /// An `ask` step: a tokened await answered through the resolution route.
    pub fn ask(prompt: impl Into<String>) -> AskStep {
        let mut body = Map::new();
        body.insert("prompt".into(), Value::String(prompt.into()));
        AskStep {
            common: Common::default(),
            body,
        }
    }
}

/// The fields every verb takes.
#[derive(Debug, Clone, Default, PartialEq)]
struct Common {
    key: Option<String>,
    after: Vec<String>,
    on_failure: Option<OnFailure>,
    visibility: Option<Visibility>,
}

impl Common {
    fn into_step(self, verb: &str, body: Map<String, Value>) -> Value {
        let mut step = Map::new();
        if let Some(key) = self.key {
            step.insert("key".into(), Value::String(key));
        }
        if !self.after.is_empty() {
            step.insert("after".into(), strings(self.after));
        }
        if let Some(policy) = self.on_failure {
            step.insert("on_failure".into(), Value::String(policy.to_string()));
        }
        if let Some(visibility) = self.visibility {
            step.insert("visibility".into(), Value::String(visibility.to_string()));
        }
        step.insert(verb.into(), Value::Object(body));
        Value::Object(step)
    }
}

fn strings<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Value {
    Value::Array(items.into_iter().map(|s| Value::String(s.into())).collect())
}

/// The common-field setters, shared by every step builder.
macro_rules! common_setters {
    ($builder:ident) => {
        impl $builder {
            /// The step's key (`[A-Za-z0-9][A-Za-z0-9_-]{0,63}`); minted when absent.
            pub fn key(mut self, key: impl Into<String>) -> Self {
                self.common.key = Some(key.into());
                self
            }

            /// Extra dependencies: earlier rows' keys.
            pub fn after<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
                self.common.after.extend(keys.into_iter().map(Into::into));
                self
            }

            /// The step's failure policy.
            pub fn on_failure(mut self, policy: OnFailure) -> Self {
                self.common.on_failure = Some(policy);
                self
            }

            /// The step's transcript visibility.
            pub fn visibility(mut self, visibility: Visibility) -> Self {
                self.common.visibility = Some(visibility);
                self
            }
        }
    };
}

/// A `model` step under construction.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelStep {
    common: Common,
    body: Map<String, Value>,
}

common_setters!(ModelStep);

impl ModelStep {
    fn set(mut self, name: &str, value: Value) -> Self {
        self.body.insert(name.into(), value);
        self
    }

    /// The model, `"provider/model"` (required unless the declaring agent has a default).
    pub fn model(self, model: impl Into<String>) -> Self {
        self.set("model", Value::String(model.into()))
    }

    /// The model with options: `{model, reasoning_effort?, max_output_tokens?}`.
    pub fn model_with(self, model: Value) -> Self {
        self.set("model", model)
    }

    /// The round's instructions.
    pub fn instructions(self, text: impl Into<String>) -> Self {
        self.set("instructions", Value::String(text.into()))
    }

    /// An explicit tools declaration (declarations.md); each entry an object.
    pub fn tools(self, tools: Vec<Value>) -> Self {
        self.set("tools", Value::Array(tools))
    }

    /// Kernel tools to declare, by canonical name (the SDK's `nexus_sdk::tools` names them).
    pub fn kernel_tools<S: Into<String>>(self, names: impl IntoIterator<Item = S>) -> Self {
        self.set("kernel_tools", strings(names))
    }

    /// Runners whose announced tools are imported.
    pub fn runners<S: Into<String>>(self, ids: impl IntoIterator<Item = S>) -> Self {
        self.set("runner_executor_public_ids", strings(ids))
    }

    /// Narrows the runner imports to these tool names.
    pub fn runner_tool_names<S: Into<String>>(self, names: impl IntoIterator<Item = S>) -> Self {
        self.set("runner_tool_names", strings(names))
    }

    /// Upload ids attached to the prompt.
    pub fn attachments<S: Into<String>>(self, upload_ids: impl IntoIterator<Item = S>) -> Self {
        self.set("attachments", strings(upload_ids))
    }

    /// Earlier rows whose results the round reads.
    pub fn results<S: Into<String>>(self, keys: impl IntoIterator<Item = S>) -> Self {
        self.set("results", strings(keys))
    }

    /// The `on_failure` of the round's tool calls (default `absorb`).
    pub fn fan_on_failure(self, policy: OnFailure) -> Self {
        self.set("fan_on_failure", Value::String(policy.to_string()))
    }
}

impl From<ModelStep> for Value {
    fn from(step: ModelStep) -> Value {
        step.common.into_step("model", step.body)
    }
}

/// A `tool` step under construction.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStep {
    common: Common,
    body: Map<String, Value>,
}

common_setters!(ToolStep);

impl ToolStep {
    /// Routes the call to this runner (instead of the run's default runner).
    pub fn runner(mut self, executor_public_id: impl Into<String>) -> Self {
        let mut route = Map::new();
        route.insert("kind".into(), Value::String("runner".into()));
        route.insert(
            "runner_executor_public_id".into(),
            Value::String(executor_public_id.into()),
        );
        self.body.insert("route".into(), Value::Object(route));
        self
    }

    /// The park budget, in milliseconds.
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.body.insert("timeout_ms".into(), Value::from(ms));
        self
    }
}

impl From<ToolStep> for Value {
    fn from(step: ToolStep) -> Value {
        step.common.into_step("tool", step.body)
    }
}

/// An `ask` step under construction.
#[derive(Debug, Clone, PartialEq)]
pub struct AskStep {
    common: Common,
    body: Map<String, Value>,
}

common_setters!(AskStep);

impl AskStep {
    /// The choices offered (at most 32).
    pub fn options<S: Into<String>>(mut self, options: impl IntoIterator<Item = S>) -> Self {
        self.body.insert("options".into(), strings(options));
        self
    }

    /// Whether several options may be chosen.
    pub fn multi(mut self, multi: bool) -> Self {
        self.body.insert("multi".into(), Value::Bool(multi));
        self
    }

    /// The park budget, in milliseconds.
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.body.insert("timeout_ms".into(), Value::from(ms));
        self
    }
}

impl From<AskStep> for Value {
    fn from(step: AskStep) -> Value {
        step.common.into_step("ask", step.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builders_write_the_step_grammar() {
        let model: Value = Step::model("Look.")
            .model("scripted/look")
            .kernel_tools(["nexus.runners.list"])
            .key("m")
            .on_failure(OnFailure::Absorb)
            .into();
        assert_eq!(
            model,
            json!({"key": "m", "on_failure": "absorb",
                   "model": {"prompt": "Look.", "model": "scripted/look",
                             "kernel_tools": ["nexus.runners.list"]}})
        );
        let tool: Value = Step::runner_tool("read", json!({"path": "a"}))
            .runner("rid")
            .after(["m"])
            .into();
        assert_eq!(
            tool,
            json!({"after": ["m"], "tool": {"name": "read", "input": {"path": "a"},
                   "route": {"kind": "runner", "runner_executor_public_id": "rid"}}})
        );
        let default_route: Value = Step::runner_tool("read", json!({})).into();
        assert_eq!(default_route["tool"]["route"], json!({"kind": "runner"}));
        let ask: Value = Step::ask("Ship?")
            .options(["yes", "no"])
            .visibility(Visibility::Visible)
            .into();
        assert_eq!(
            ask,
            json!({"visibility": "visible", "ask": {"prompt": "Ship?", "options": ["yes", "no"]}})
        );
    }
}
