//! `nexus contracts generate | check`: the contract pack, rendered by the catalog's renderer.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use nexus_core::contracts::{TOOLS_PACK_PATH, tools_pack};

#[derive(Debug, clap::Subcommand)]
pub enum ContractsCommand {
    /// Write contracts/nexus/v1/tools.json under ROOT.
    Generate {
        #[arg(long, default_value = ".")]
        root: PathBuf,
    },
    /// Fail when the committed pack differs from the registry's render.
    Check {
        #[arg(long, default_value = ".")]
        root: PathBuf,
    },
}

pub fn run(cmd: ContractsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ContractsCommand::Generate { root } => {
            let path = root.join(TOOLS_PACK_PATH);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, tools_pack()).with_context(|| format!("writing {}", path.display()))?;
            println!("wrote {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        ContractsCommand::Check { root } => {
            let path = root.join(TOOLS_PACK_PATH);
            let committed = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            if committed == tools_pack() {
                println!("{} matches the registry", path.display());
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!(
                    "{} has drifted from the registry; run `nexus contracts generate`",
                    path.display()
                );
                Ok(ExitCode::FAILURE)
            }
        }
    }
}
