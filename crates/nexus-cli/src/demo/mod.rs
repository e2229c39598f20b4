//! `nexus demo`: the whole system on one machine. A kernel on a temporary data dir, a runner
//! (rho, in-process) on a sample folder, and an agent that reads and searches the files,
//! finds the deferred `edit` with `tool_search`, calls it through `tool_call`, is held for
//! approval (the demo approves, showing the effect profile), edits a file and answers. The
//! transcript prints as it goes; the console URL and a ready bearer print first.

mod agent;
mod sample;
mod server;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use nexus_sdk::Client;

use crate::member::follow::{self, OnHold, View};
use crate::member::run::exit_for;
use crate::member::runs::print_transcript;

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// End after the answer instead of serving until Ctrl-C.
    #[arg(long)]
    pub exit: bool,
    /// The address to serve on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub listen: String,
    /// The model, `provider/model` (default: a real model when ANTHROPIC_API_KEY or
    /// OPENAI_API_KEY is set, else the bundled script `scripted/demo`).
    #[arg(long)]
    pub model: Option<String>,
    /// Use this PostgreSQL database instead of a SQLite file in the temporary dir.
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
    /// Keep the temporary dir (printed) instead of deleting it at the end.
    #[arg(long)]
    pub keep: bool,
}

pub async fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    crate::logs::init_if_asked();
    let tmp = tempfile::Builder::new().prefix("nexus-demo-").tempdir()?;
    let data_dir = tmp.path().join("data");
    let project = tmp.path().join("project");
    let model = agent::choose(args.model.as_deref(), |k| {
        std::env::var_os(k).is_some_and(|v| !v.is_empty())
    });

    let server = server::start(
        &data_dir,
        args.database_url.as_deref(),
        &args.listen,
        &server::settings_toml(&model.providers),
    )
    .await?;
    std::fs::write(data_dir.join("scripts").join("demo.jsonl"), agent::SCRIPT)?;
    let boot = &server.boot;
    let client = Client::new(&server.base, &boot.human.member_token);
    sample::write(&project)?;
    let (rho, runner) = sample::start_rho(
        &server.base,
        &project,
        &boot.runner.executor_public_id,
        &boot.runner.transport_token,
        &client,
    )
    .await?;

    println!("Nexus demo");
    println!("  server     {} (data in {})", server.base, tmp.path().display());
    println!("  runner     rho {} serving {}", runner.public_id, project.display());
    println!("  model      {} ({})", model.model, model.why);
    // The console's ready sign-in: the fragment never leaves the browser, and the console
    // moves the bearer into the tab's storage and out of the address bar.
    println!(
        "  console    {}/console/#/signin?ws={}&token={}",
        server.base, boot.workspace_public_id, boot.human.member_token
    );
    println!("             (opens signed in, in that tab only)");
    println!("  sign in    or paste this bearer (a throwaway demo member's):");
    println!("             {}", boot.human.member_token);
    println!(
        "  or a shell export NEXUS_URL={} NEXUS_WORKSPACE={} NEXUS_TOKEN=<the bearer above>",
        server.base, boot.workspace_public_id
    );
    println!();

    let ended = tokio::select! {
        ended = work(&client, &boot.workspace_public_id, &model.model, &runner, &project) => ended?,
        _ = tokio::signal::ctrl_c() => {
            println!("\ninterrupted");
            rho.stop().await?;
            server.stop().await?;
            return Ok(ExitCode::from(130));
        }
    };
    if !args.exit {
        println!(
            "Serving until Ctrl-C: open the console link above ({}/console).",
            server.base
        );
        let _ = tokio::signal::ctrl_c().await;
    }
    rho.stop().await?;
    server.stop().await?;
    if args.keep {
        let kept: PathBuf = tmp.keep();
        println!("kept {}", kept.display());
    }
    Ok(exit_for(&ended.status))
}

/// The agent's run, followed and approved as it goes, then its transcript and the edited file.
async fn work(
    client: &Client,
    workspace: &str,
    model: &str,
    runner: &nexus_sdk::member::ExecutorInfo,
    project: &std::path::Path,
) -> anyhow::Result<nexus_sdk::member::Run> {
    let ws = client.workspace(workspace);
    let (run, _) = ws
        .start_run(&agent::run(model, runner)?)
        .await
        .context("starting the agent's run")?;
    println!("user:\n  {}\n", agent::PROMPT);
    let view = View {
        out: Box::new(std::io::stdout()),
        on_hold: OnHold::Approve,
    };
    let ended = follow::follow(&run, view).await?;
    println!();
    println!("── transcript of run {} ({})", ended.public_id, ended.status);
    print_transcript(&run.transcript(false).await?);
    let notes = std::fs::read_to_string(project.join(sample::NOTES)).unwrap_or_default();
    println!("\n── {} now reads:\n{notes}", sample::NOTES);
    if notes.contains(sample::TODO_LINE) {
        println!("(the TODO is still open: the agent did not edit it)");
    }
    Ok(ended)
}
