//! `nexus tools list`: the kernel tool catalog from the compiled-in registry (no server needed).

use std::process::ExitCode;

use nexus_core::registry::{self, ToolClass};

#[derive(Debug, clap::Subcommand)]
pub enum ToolsCommand {
    /// List every live kernel tool in registry order.
    List {
        /// Print the catalog exactly as `GET /agent_api/v1/tools` serves it.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: ToolsCommand) -> anyhow::Result<ExitCode> {
    let ToolsCommand::List { json } = cmd;
    if json {
        println!("{}", serde_json::to_string_pretty(&registry::catalog())?);
    } else {
        println!("{:<30} {:<16} {:<14} effect", "canonical", "wire", "class");
        for tool in registry::entries() {
            let class = match tool.class() {
                ToolClass::Reserved => "reserved",
                ToolClass::Overridable => "overridable",
                ToolClass::SourceRouted => "source-routed",
            };
            println!(
                "{:<30} {:<16} {:<14} {}",
                tool.canonical,
                tool.wire,
                class,
                serde_json::to_string(&tool.effect.to_json())?
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
