//! `rho [--config FILE]`: the reference runner (executor.md §14).

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use rho::RhoConfig;

/// Serves a folder, its skills and any MCP server to a Nexus kernel.
#[derive(Parser)]
#[command(version, after_long_help = rho::config::help(), after_help = "`rho --help` describes the config file and its keys.")]
struct Args {
    /// The config file (`rho --help` lists its keys).
    #[arg(long, default_value = "rho.toml")]
    config: PathBuf,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "rho=info".into()))
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = RhoConfig::load(&args.config)?;
    let bearer = std::env::var(&config.bearer_env)
        .with_context(|| format!("the environment variable {} (bearer_env) is not set", config.bearer_env))?;
    rho::serve(&config, &bearer, shutdown_signal()).await
}

/// Ctrl-C or SIGTERM: stop claiming, let running calls commit, exit.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
