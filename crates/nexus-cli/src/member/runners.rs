//! `nexus runners list`: the runners the caller may use (executor.md §3), with their presence
//! and tools.

use std::process::ExitCode;

use serde_json::json;

use super::output::print_json;
use super::{Ctx, Outcome};

#[derive(Debug, clap::Subcommand)]
pub enum RunnersCommand {
    /// The runners eligible for you: id, name, presence (`online` when connected to this
    /// server) and how many tools each announced.
    List,
}

pub async fn run(ctx: &Ctx, cmd: &RunnersCommand) -> Outcome {
    match cmd {
        RunnersCommand::List => {
            let runners = ctx.client.runners().await?;
            if ctx.json {
                print_json(&json!({"executors": runners}));
            } else {
                if runners.is_empty() {
                    println!("no runner is eligible for you");
                }
                for r in &runners {
                    println!(
                        "{}  {}  {}  {} tools",
                        r.public_id,
                        r.display_name,
                        r.presence,
                        r.served_tools.len()
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
