//! `nexus runs list|show|transcript|graph|stop`.

use std::process::ExitCode;

use nexus_sdk::member::{Page, RunStatus, TaskStatus, Transcript};

use super::output::{print_json, short};
use super::{Ctx, Outcome};

#[derive(Debug, clap::Subcommand)]
pub enum RunsCommand {
    /// The workspace's runs, a page at a time (also `nexus runs` alone).
    List {
        /// Only runs in this status (pending, running, needs_attention, canceling, completed,
        /// canceled).
        #[arg(long)]
        status: Option<String>,
        /// At most this many (the server caps the page).
        #[arg(long)]
        limit: Option<u32>,
        /// The cursor a previous page gave.
        #[arg(long)]
        after: Option<String>,
    },
    /// One run and its usage.
    Show { run: String },
    /// The run as a conversation: prompts, replies and tool rows.
    Transcript {
        run: String,
        /// Include rows authored as hidden.
        #[arg(long)]
        include_hidden: bool,
    },
    /// The run's task graph as Mermaid text (with --json: nodes, edges and the text).
    Graph { run: String },
    /// Stops the run: running work finishes unless --force cancels it at once.
    Stop {
        run: String,
        #[arg(long)]
        force: bool,
    },
}

/// `nexus runs` alone: the first page of every run.
impl Default for RunsCommand {
    fn default() -> Self {
        RunsCommand::List {
            status: None,
            limit: None,
            after: None,
        }
    }
}

pub async fn run(ctx: &Ctx, cmd: &RunsCommand) -> Outcome {
    let ws = ctx.workspace()?;
    match cmd {
        RunsCommand::List { status, limit, after } => {
            let status = status.as_deref().map(RunStatus::from);
            let mut page = Page::first();
            if let Some(limit) = limit {
                page = page.limit(*limit);
            }
            if let Some(after) = after {
                page = page.after(after);
            }
            let runs = ws.runs(status.as_ref(), &page).await?;
            if ctx.json {
                print_json(&runs);
            } else {
                println!("{:<36}  {:<15}  {:<7}  CREATED", "RUN", "STATUS", "MODE");
                for r in &runs.runs {
                    println!(
                        "{:<36}  {:<15}  {:<7}  {}",
                        r.public_id,
                        r.status.as_str(),
                        r.approval_mode.as_str(),
                        r.created_at
                    );
                }
                if let Some(next) = &runs.pagination.next_after {
                    println!("more: --after {next}");
                }
            }
        }
        RunsCommand::Show { run } => {
            let read = ws.run(run).get().await?;
            if ctx.json {
                print_json(&read);
            } else {
                let r = &read.run;
                println!("run        {}", r.public_id);
                println!("status     {}", r.status);
                println!("approval   {}", r.approval_mode);
                println!("created    {}", r.created_at);
                if let Some(at) = &r.ended_at {
                    println!("ended      {at}");
                }
                if let Some(a) = &r.attention {
                    println!("attention  {} on {}", a.reason, a.task_key.as_deref().unwrap_or("?"));
                }
                println!(
                    "usage      {} input, {} output, {} cache read",
                    read.usage.input_tokens, read.usage.output_tokens, read.usage.cache_read_input_tokens
                );
            }
        }
        RunsCommand::Transcript { run, include_hidden } => {
            let transcript = ws.run(run).transcript(*include_hidden).await?;
            if ctx.json {
                print_json(&transcript);
            } else {
                print_transcript(&transcript);
            }
        }
        RunsCommand::Graph { run } => {
            let graph = ws.run(run).graph().await?;
            if ctx.json {
                print_json(&graph);
            } else {
                println!("{}", graph.mermaid.trim_end());
            }
        }
        RunsCommand::Stop { run, force } => {
            let stopped = ws.run(run).stop(*force).await?;
            if ctx.json {
                print_json(&serde_json::json!({"run": stopped}));
            } else {
                println!("run {} {}", stopped.public_id, stopped.status);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prompts and replies in full, each tool row on one line under its heading.
pub fn print_transcript(transcript: &Transcript) {
    for row in &transcript.rows {
        match row.role.as_str() {
            "tool" => {
                let heading = row.heading().unwrap_or_default();
                let mark = match row.status {
                    TaskStatus::Completed if !row.is_error => "✓",
                    TaskStatus::Completed | TaskStatus::Failed | TaskStatus::TimedOut | TaskStatus::Uncertain => "✗",
                    _ => "·",
                };
                let preview = row.output_preview.as_deref().map(|p| short(p, 100)).unwrap_or_default();
                println!("  {mark} {heading} [{}] {preview}", row.status);
            }
            role => {
                let text = row.text.as_deref().unwrap_or_default().trim();
                if text.is_empty() {
                    continue;
                }
                println!("{role}:");
                for line in text.lines() {
                    println!("  {line}");
                }
            }
        }
    }
}
