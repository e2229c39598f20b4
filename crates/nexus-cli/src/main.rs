//! `nexus`: serve, migrate, admin, contracts, tools.

mod admin;
mod config;
mod contracts;
mod serve;
mod tools;

use clap::{Parser, Subcommand};

/// The process allocator: mimalloc. Under the inbox load glibc's malloc and free were about
/// 18 % of the process's CPU (BENCHMARKS.md, "Inbox throughput"). SQLite keeps its own
/// allocator calls (libc's `malloc`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "nexus", version, about = "Nexus: the tool plane of an agent kernel")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP API, the job workers and the sweep.
    Serve(serve::ServeArgs),
    /// Apply pending migrations and exit.
    Migrate(config::StoreFlags),
    /// Operator verbs: bootstrap, members, runners, credentials.
    #[command(subcommand)]
    Admin(admin::AdminCommand),
    /// The contract pack: generate or check contracts/nexus/v1/tools.json.
    #[command(subcommand)]
    Contracts(contracts::ContractsCommand),
    /// The kernel tool catalog, offline.
    #[command(subcommand)]
    Tools(tools::ToolsCommand),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve::run(args).await,
            Command::Migrate(flags) => serve::migrate(flags).await,
            Command::Admin(cmd) => admin::run(cmd).await,
            Command::Contracts(cmd) => contracts::run(cmd),
            Command::Tools(cmd) => tools::run(cmd),
        }
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
