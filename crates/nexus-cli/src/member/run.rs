//! `nexus run`: creates a run from flags (one model step) or from a JSON file of the
//! `POST W/runs` body, starts it, and follows it live. The exit status says how it ended
//! (0 completed, 3 canceled, 4 needs attention, 1 a refusal or failure).

use std::path::PathBuf;
use std::process::ExitCode;

use nexus_sdk::member::{ApprovalMode, NewRun, RunStatus, Step};
use serde::Deserialize;
use serde_json::Value;

use super::follow::{self, View};
use super::output::{EXIT_CANCELED, EXIT_NEEDS_ATTENTION, print_json};
use super::{Ctx, Failure, Outcome};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The prompt of the run's one model step.
    #[arg(conflicts_with = "file")]
    pub prompt: Option<String>,
    /// A JSON file (`-` for stdin) holding the `POST W/runs` body: `{run: {steps,
    /// approval_mode, approval_rules?, default_runner_executor_public_id?}}` or the inner object.
    #[arg(long, short = 'f', value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The model, `provider/model` (for example `scripted/echo`, `anthropic/claude-sonnet-4-5`).
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// The round's instructions.
    #[arg(long)]
    pub instructions: Option<String>,
    /// bypass (grant every model call no deny rule matches), ask (hold every model call no
    /// allow rule grants, for a person) or rules (grant only what an allow rule matches).
    #[arg(long, value_parser = ["bypass", "ask", "rules"], default_value = "ask")]
    pub approval_mode: String,
    #[arg(long, value_name = "JSON", help = APPROVAL_RULES_HELP.0, long_help = approval_rules_long_help())]
    pub approval_rules: Option<String>,
    /// Kernel tools to declare, by canonical name (comma-separated), e.g. nexus.tools.search;
    /// `nexus tools list` shows them all.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub kernel_tools: Vec<String>,
    /// A runner to import tools from; also the run's default runner.
    #[arg(long, value_name = "EXECUTOR_ID")]
    pub runner: Option<String>,
    /// Only these of the runner's tools (comma-separated served names).
    #[arg(long, value_delimiter = ',', value_name = "NAMES", requires = "runner")]
    pub runner_tools: Vec<String>,
    /// Sent as the Idempotency-Key: repeating the command replays the create.
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// Create and start, print the run's id (or with --json the create answer), do not follow.
    #[arg(long)]
    pub detach: bool,
}

/// `--approval-rules`: the short help, and an example the long help shows (a valid rule list).
const APPROVAL_RULES_HELP: (&str, &str) = (
    "approval_rules as a JSON array of rules (docs/spec/approvals.md §2; --help shows the format)",
    r#"[{"tool":"read|glob|grep","verdict":"allow"},{"tool":"start_process","path":"command","match":"rm *","verdict":"deny","reason":"no deletions"},{"tool":"*","verdict":"ask"}]"#,
);

fn approval_rules_long_help() -> String {
    format!(
        "approval_rules as a JSON array of rules, checked against every tool call of the run \
         (docs/spec/approvals.md §2). Each rule is an object: \"tool\" (required: a glob over the \
         tool's name, `*` any run, `?` one character, alternatives joined by `|`), \"verdict\" \
         (required: allow, ask or deny), \"path\" (a dotted key path into the call's input), \
         \"match\" (a glob over the text at path), \"reason\" (shown on a deny) and \"origin\" \
         (model, the default, author or kernel). Of the rules that match, deny wins, then ask, \
         then allow; approvals.md §3 says what each mode does with a match or with none. \
         Example:\n  \
         --approval-mode rules --approval-rules '{}'",
        APPROVAL_RULES_HELP.1
    )
}

/// A file's run body (the inner object of `{run: …}`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRun {
    steps: Vec<Value>,
    approval_mode: String,
    #[serde(default)]
    approval_rules: Option<Value>,
    #[serde(default)]
    default_runner_executor_public_id: Option<String>,
}

fn from_file(path: &PathBuf) -> Result<NewRun, Failure> {
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(path).map_err(|e| Failure::local("io", format!("{}: {e}", path.display())))?
    };
    let mut value: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::local("invalid_argument", format!("{}: not JSON: {e}", path.display())))?;
    if let Some(inner) = value.get_mut("run").map(Value::take) {
        value = inner;
    }
    let file: FileRun = serde_json::from_value(value)
        .map_err(|e| Failure::local("invalid_argument", format!("{}: {e}", path.display())))?;
    let mut run = NewRun::new(ApprovalMode::from(file.approval_mode.as_str()));
    run.steps = file.steps;
    run.approval_rules = file.approval_rules;
    run.default_runner_executor_public_id = file.default_runner_executor_public_id;
    Ok(run)
}

fn from_flags(args: &RunArgs) -> Result<NewRun, Failure> {
    let prompt = args
        .prompt
        .clone()
        .ok_or_else(|| Failure::local("invalid_argument", "give a prompt, or --file with a run body"))?;
    let mut step = Step::model(prompt);
    if let Some(model) = &args.model {
        step = step.model(model);
    }
    if let Some(text) = &args.instructions {
        step = step.instructions(text);
    }
    if !args.kernel_tools.is_empty() {
        step = step.kernel_tools(args.kernel_tools.clone());
    }
    let mut run = NewRun::new(ApprovalMode::from(args.approval_mode.as_str()));
    if let Some(runner) = &args.runner {
        step = step.runners([runner.clone()]);
        if !args.runner_tools.is_empty() {
            step = step.runner_tool_names(args.runner_tools.clone());
        }
        run = run.default_runner(runner);
    }
    if let Some(rules) = &args.approval_rules {
        let rules = serde_json::from_str(rules)
            .map_err(|e| Failure::local("invalid_argument", format!("--approval-rules: not JSON: {e}")))?;
        run = run.approval_rules(rules);
    }
    Ok(run.step(step))
}

/// The exit status for a run that stopped following in `status`.
pub fn exit_for(status: &RunStatus) -> ExitCode {
    match status {
        RunStatus::Completed => ExitCode::SUCCESS,
        RunStatus::Canceled => ExitCode::from(EXIT_CANCELED),
        _ => ExitCode::from(EXIT_NEEDS_ATTENTION),
    }
}

pub async fn run(ctx: &Ctx, args: &RunArgs) -> Outcome {
    let mut new = match &args.file {
        Some(path) => from_file(path)?,
        None => from_flags(args)?,
    };
    if let Some(key) = &args.idempotency_key {
        new = new.idempotency_key(key);
    }
    let ws = ctx.workspace()?;
    let (run, created) = ws.start_run(&new).await?;
    if args.detach {
        if ctx.json {
            print_json(&created);
        } else {
            println!("{}", run.public_id());
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !ctx.json {
        println!("run {} started", run.public_id());
    }
    let ended = follow::follow(&run, View::hinting(ctx.json)).await?;
    let read = run.get().await?;
    if ctx.json {
        print_json(&read);
    } else {
        let u = &read.usage;
        println!(
            "run {} {} ({} input, {} output tokens)",
            ended.public_id, ended.status, u.input_tokens, u.output_tokens
        );
        if let Some(attention) = &ended.attention {
            println!(
                "needs attention: {} on {}",
                attention.reason,
                attention.task_key.as_deref().unwrap_or("?")
            );
        }
    }
    Ok(exit_for(&read.run.status))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `--approval-rules` help points at the spec and shows a rule list the kernel accepts.
    #[test]
    fn the_approval_rules_help_shows_a_valid_example() {
        let example: Value = serde_json::from_str(APPROVAL_RULES_HELP.1).unwrap();
        assert_eq!(nexus_core::approval::parse_rules(&example).unwrap().len(), 3);
        let long = approval_rules_long_help();
        assert!(long.contains(APPROVAL_RULES_HELP.1), "{long}");
        assert!(long.contains("docs/spec/approvals.md"), "{long}");
        assert!(APPROVAL_RULES_HELP.0.contains("docs/spec/approvals.md"));
    }
}
