//! `nexus`: serve, migrate, admin, contracts, tools; the member verbs (login, run, runs,
//! approvals, conversations, runners, agent) over the SDK; and `demo`.

mod admin;
mod config;
mod contracts;
mod demo;
mod member;
mod serve;
mod tools;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The process allocator: mimalloc. Under the inbox load glibc's malloc and free were about
/// 18 % of the process's CPU (docs/decisions/119-futures-and-allocation.md). SQLite keeps its own
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
    /// Check a member bearer and save it as a profile (URL, bearer, workspace).
    Login(member::ConnFlags),
    /// Create a run, start it and follow it live (exit 0 completed, 3 canceled, 4 needs
    /// attention, 1 refused or failed).
    Run(RunCmd),
    /// The workspace's runs: list, show, transcript, graph, stop.
    Runs(Member<member::runs::RunsCommand>),
    /// Calls held for approval: list, approve, deny.
    Approvals(Member<member::approvals::ApprovalsCommand>),
    /// Conversations: list, show, create, say, turns, children, cancel, archive.
    Conversations(Member<member::conversations::ConversationsCommand>),
    /// The runners you may use, with their presence: list.
    Runners(Member<member::runners::RunnersCommand>),
    /// The calling agent's configuration (its default model, instructions, tools): show,
    /// configure.
    Agent(Member<member::agent::AgentCommand>),
    /// Show the whole system on a temporary server: a runner, an agent, an approval.
    Demo(demo::DemoArgs),
}

/// A member verb group: the connection flags and the verb.
#[derive(clap::Args)]
struct Member<C: Subcommand> {
    #[command(flatten)]
    conn: member::ConnFlags,
    #[command(subcommand)]
    command: C,
}

#[derive(clap::Args)]
struct RunCmd {
    #[command(flatten)]
    conn: member::ConnFlags,
    #[command(flatten)]
    args: member::run::RunArgs,
}

/// Resolves the connection, runs the verb, prints a failure: the exit status.
async fn member_verb<F, Fut>(conn: &member::ConnFlags, verb: F) -> ExitCode
where
    F: FnOnce(member::Ctx) -> Fut,
    Fut: std::future::Future<Output = member::Outcome>,
{
    let outcome = match member::Ctx::resolve(conn) {
        Ok(ctx) => verb(ctx).await,
        Err(failure) => Err(failure),
    };
    member::finish(outcome, conn.json)
}

fn main() -> ExitCode {
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
            Command::Login(conn) => Ok(member::finish(member::login::run(&conn).await, conn.json)),
            Command::Run(RunCmd { conn, args }) => {
                Ok(member_verb(&conn, |ctx| async move { member::run::run(&ctx, &args).await }).await)
            }
            Command::Runs(Member { conn, command }) => {
                Ok(member_verb(&conn, |ctx| async move { member::runs::run(&ctx, &command).await }).await)
            }
            Command::Approvals(Member { conn, command }) => {
                Ok(member_verb(&conn, |ctx| async move { member::approvals::run(&ctx, &command).await }).await)
            }
            Command::Conversations(Member { conn, command }) => {
                Ok(member_verb(
                    &conn,
                    |ctx| async move { member::conversations::run(&ctx, &command).await },
                )
                .await)
            }
            Command::Runners(Member { conn, command }) => {
                Ok(member_verb(&conn, |ctx| async move { member::runners::run(&ctx, &command).await }).await)
            }
            Command::Agent(Member { conn, command }) => {
                Ok(member_verb(&conn, |ctx| async move { member::agent::run(&ctx, &command).await }).await)
            }
            Command::Demo(args) => demo::run(args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
