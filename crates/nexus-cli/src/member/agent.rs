//! `nexus agent show|configure`: the calling agent's profile configuration (declarations.md
//! §12.2–§12.3), read and changed with the agent's own bearer. `configure` changes only the
//! fields it is given: it reads the configuration, sets them, and writes the whole back.

use std::process::ExitCode;

use nexus_sdk::Profile;
use nexus_sdk::member::ApprovalMode;

use super::output::print_json;
use super::{Ctx, Failure, Outcome};

#[derive(Debug, clap::Subcommand)]
pub enum AgentCommand {
    /// The calling agent and its configuration.
    Show,
    /// Changes the calling agent's configuration: the fields given; the others are kept.
    Configure {
        /// The model of its turns when an input names none: `<instance>/<model>`.
        #[arg(long, value_name = "MODEL")]
        default_model: Option<String>,
        /// The system text of its turns.
        #[arg(long)]
        instructions: Option<String>,
        /// The approval mode of its turns (required once it declares tools).
        #[arg(long, value_parser = ["bypass", "ask", "rules"])]
        approval_mode: Option<String>,
        /// Kernel tools its turns declare, by canonical name (comma-separated).
        #[arg(long, value_delimiter = ',', value_name = "NAMES")]
        kernel_tools: Option<Vec<String>>,
        /// Runners its turns import tools from, by id (comma-separated).
        #[arg(long, value_delimiter = ',', value_name = "EXECUTOR_IDS")]
        runners: Option<Vec<String>>,
    },
}

pub async fn run(ctx: &Ctx, cmd: &AgentCommand) -> Outcome {
    let profile = ctx.client.profile().await?;
    let Some(mut config) = profile.configuration.clone() else {
        return Err(Failure::local(
            "not_agent",
            format!(
                "{} is a person: `nexus agent` needs an agent's bearer (e.g. NEXUS_TOKEN=<the \
                 bootstrap's agent.member_token>)",
                profile.member.handle
            ),
        ));
    };
    let profile = match cmd {
        AgentCommand::Show => profile,
        AgentCommand::Configure {
            default_model,
            instructions,
            approval_mode,
            kernel_tools,
            runners,
        } => {
            set(&mut config.default_model, default_model);
            set(&mut config.instructions, instructions);
            set(&mut config.kernel_tools, kernel_tools);
            set(&mut config.runner_executor_public_ids, runners);
            if let Some(mode) = approval_mode {
                config.approval_mode = Some(ApprovalMode::from(mode.as_str()));
            }
            ctx.client.put_configuration(&config).await?
        }
    };
    if ctx.json {
        print_json(&profile);
    } else {
        print_profile(&profile);
    }
    Ok(ExitCode::SUCCESS)
}

fn set<T: Clone>(field: &mut Option<T>, given: &Option<T>) {
    if let Some(value) = given {
        *field = Some(value.clone());
    }
}

fn print_profile(profile: &Profile) {
    println!("agent {} ({})", profile.member.handle, profile.member.public_id);
    let Some(c) = &profile.configuration else {
        return;
    };
    let show = |name: &str, value: Option<String>| {
        println!("  {name:<15}{}", value.unwrap_or_else(|| "-".into()));
    };
    show("default_model", c.default_model.clone());
    show("approval_mode", c.approval_mode.as_ref().map(ToString::to_string));
    show("kernel_tools", c.kernel_tools.as_ref().map(|t| t.join(", ")));
    show("runners", c.runner_executor_public_ids.as_ref().map(|r| r.join(", ")));
    show("instructions", c.instructions.clone());
}
