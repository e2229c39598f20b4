//! `nexus contracts generate | check`: the contract pack — the kernel tools as the catalog's
//! renderer writes them, and the API's OpenAPI document as the server builds it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use nexus_core::contracts::{TOOLS_PACK_PATH, tools_pack};

/// Where the OpenAPI document is committed, under the repository root.
pub const OPENAPI_PATH: &str = "contracts/nexus/v1/openapi.json";

#[derive(Debug, clap::Subcommand)]
pub enum ContractsCommand {
    /// Write contracts/nexus/v1/tools.json and openapi.json under ROOT.
    Generate {
        #[arg(long, default_value = ".")]
        root: PathBuf,
    },
    /// Fail when a committed file differs from what this build renders.
    Check {
        #[arg(long, default_value = ".")]
        root: PathBuf,
    },
}

/// Every committed contract file and its render by this build.
pub(crate) fn pack() -> [(&'static str, String); 2] {
    [
        (TOOLS_PACK_PATH, tools_pack()),
        (OPENAPI_PATH, nexus_server::openapi::document_text().to_string()),
    ]
}

pub fn run(cmd: ContractsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ContractsCommand::Generate { root } => {
            for (relative, text) in pack() {
                let path = root.join(relative);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
                println!("wrote {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        ContractsCommand::Check { root } => {
            let mut code = ExitCode::SUCCESS;
            for (relative, text) in pack() {
                let path = root.join(relative);
                let committed =
                    std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
                if committed == text {
                    println!("{} matches this build", path.display());
                } else {
                    eprintln!(
                        "{} has drifted from this build; run `nexus contracts generate`",
                        path.display()
                    );
                    code = ExitCode::FAILURE;
                }
            }
            Ok(code)
        }
    }
}
