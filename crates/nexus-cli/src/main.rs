//! `nexus`: serve, migrate, admin, contracts, tools; the member verbs (login, run, runs,
//! approvals, conversations, runners, agent) over the SDK; and `demo`.

mod admin;
mod config;
mod contracts;
mod demo;
mod logs;
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
    #[command(after_help = config::settings_help())]
    Serve(serve::ServeArgs),
    /// Apply pending migrations and exit.
    #[command(after_help = config::settings_help())]
    Migrate(config::StoreFlags),
    /// Operator verbs: bootstrap, members, runners, credentials.
    #[command(subcommand)]
    Admin(admin::AdminCommand),
    /// The contract pack: generate or check contracts/nexus/v1/tools.json and openapi.json.
    #[command(subcommand)]
    Contracts(contracts::ContractsCommand),
    /// The kernel tool catalog, offline.
    #[command(subcommand)]
    Tools(tools::ToolsCommand),
    /// Check a member bearer (--token, NEXUS_TOKEN, or one line on stdin) and save it as a
    /// profile (URL, bearer, workspace).
    Login(member::ConnFlags),
    /// Create a run, start it and follow it live (exit 0 completed, 3 canceled, 4 needs
    /// attention, 1 refused or failed).
    Run(RunCmd),
    /// The workspace's runs: list (what `nexus runs` alone does), show, transcript, graph, stop.
    Runs(RunsCmd),
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

/// `nexus runs [VERB]`: with no verb, `list`.
#[derive(clap::Args)]
struct RunsCmd {
    #[command(flatten)]
    conn: member::ConnFlags,
    #[command(subcommand)]
    command: Option<member::runs::RunsCommand>,
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
            Command::Runs(RunsCmd { conn, command }) => {
                let command = command.unwrap_or_default();
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn long_help(path: &[&str]) -> String {
        let mut cmd = Cli::command();
        let mut at = &mut cmd;
        for name in path {
            at = at.find_subcommand_mut(name).unwrap_or_else(|| panic!("no {name}"));
        }
        at.render_long_help().to_string()
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// `nexus --help` names every file `nexus contracts generate` writes.
    #[test]
    fn contracts_help_names_every_file_it_writes() {
        let help = long_help(&[]);
        for (path, _) in contracts::pack() {
            let file = path.rsplit('/').next().unwrap();
            assert!(help.contains(file), "`nexus --help` does not name {file}:\n{help}");
        }
    }

    /// `nexus serve --help` shows the defaults, every variable that overrides a setting, and
    /// the log's.
    #[test]
    fn serve_help_shows_defaults_and_environment() {
        let help = long_help(&["serve"]);
        for needle in [
            config::DEFAULT_DATA_DIR,
            config::DEFAULT_LISTEN,
            config::ENV_DATA_DIR,
            config::ENV_DATABASE_URL,
            config::ENV_LISTEN,
            config::ENV_NODE_ID,
            logs::ENV_LOG,
            logs::DEFAULT_FILTER,
            "NO_COLOR",
        ] {
            assert!(help.contains(needle), "`nexus serve --help` lacks {needle}:\n{help}");
        }
    }

    /// `nexus runs` alone parses, as `nexus runs list`, and the help says so.
    #[test]
    fn runs_alone_is_list() {
        let cli = Cli::try_parse_from(["nexus", "runs"]).unwrap_or_else(|e| panic!("{e}"));
        let Command::Runs(RunsCmd { command, .. }) = cli.command else {
            panic!("not runs");
        };
        assert!(matches!(
            command.unwrap_or_default(),
            member::runs::RunsCommand::List {
                status: None,
                limit: None,
                after: None
            }
        ));
        assert!(long_help(&[]).contains("list (what `nexus runs` alone does)"));
    }
}
