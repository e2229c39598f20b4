//! `nexus approvals list|approve|deny`: the workspace's held calls and their adjudication.

use std::process::ExitCode;

use nexus_sdk::member::Page;
use serde_json::json;

use super::output::{badges, compact, print_json, short};
use super::{Ctx, Outcome};

#[derive(Debug, clap::Subcommand)]
pub enum ApprovalsCommand {
    /// Calls held for an approver, oldest first, with their frozen effect profiles.
    List {
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long)]
        after: Option<String>,
    },
    /// Releases a held call.
    Approve { run: String, task: String },
    /// Fails a held call with `approval_denied`; the model reads the reason.
    Deny {
        run: String,
        task: String,
        /// Why (its first 256 bytes become the error's detail).
        #[arg(long)]
        reason: Option<String>,
    },
}

pub async fn run(ctx: &Ctx, cmd: &ApprovalsCommand) -> Outcome {
    let ws = ctx.workspace()?;
    match cmd {
        ApprovalsCommand::List { limit, after } => {
            let mut page = Page::first();
            if let Some(limit) = limit {
                page = page.limit(*limit);
            }
            if let Some(after) = after {
                page = page.after(after);
            }
            let held = ws.approvals(&page).await?;
            if ctx.json {
                print_json(&held);
                return Ok(ExitCode::SUCCESS);
            }
            if held.approvals.is_empty() {
                println!("no call waits for approval");
            }
            for a in &held.approvals {
                let name = a.tool_alias.as_deref().or(a.tool_name.as_deref()).unwrap_or("?");
                println!(
                    "{} {}  {name}  [{}]",
                    a.run_public_id,
                    a.task_key,
                    badges(&a.effect_profile)
                );
                println!("    input: {}", short(&compact(&a.tool_input), 300));
                if let Some(deadline) = &a.deadline_at {
                    println!("    expires {deadline}");
                }
            }
            if let Some(next) = &held.pagination.next_after {
                println!("more: --after {next}");
            }
        }
        ApprovalsCommand::Approve { run, task } => {
            let decided = ws.run(run).approve(task).await?;
            if ctx.json {
                print_json(&json!({"task": decided}));
            } else {
                println!("approved {run} {task} ({})", decided.status);
            }
        }
        ApprovalsCommand::Deny { run, task, reason } => {
            let decided = ws.run(run).deny(task, reason.as_deref()).await?;
            if ctx.json {
                print_json(&json!({"task": decided}));
            } else {
                println!("denied {run} {task} ({})", decided.status);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
