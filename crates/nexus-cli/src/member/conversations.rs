//! `nexus conversations list|show|create|say|turns|children|cancel|archive|unarchive`
//! (runs.md §12).

use std::process::ExitCode;

use nexus_sdk::member::{ApprovalMode, ArchivedFilter, Conversation, DeliveryMode, NewConversation, NewInput, Page};
use serde_json::json;

use super::output::{print_json, short};
use super::{Ctx, Outcome};

#[derive(Debug, clap::Subcommand)]
pub enum ConversationsCommand {
    /// The workspace's top-level conversations, oldest first.
    List {
        /// exclude (the default), include or only archived ones.
        #[arg(long, value_parser = ["exclude", "include", "only"])]
        archived: Option<String>,
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long)]
        after: Option<String>,
    },
    /// One conversation.
    Show { conversation: String },
    /// Starts a conversation.
    Create {
        #[arg(long)]
        title: Option<String>,
        /// Who answers: a member's id or handle, or `me`. An agent answers with replies; a
        /// person's conversation records user turns only. Default: the workspace's agent when
        /// exactly one holds write standing (an agent's own conversations: the agent itself).
        #[arg(long, value_name = "MEMBER")]
        answerer: Option<String>,
        /// The runner its turns import tools from.
        #[arg(long, value_name = "EXECUTOR_ID")]
        runner: Option<String>,
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Sends an input: queued for the next turn, or with --steer into the running one.
    Say {
        conversation: String,
        text: String,
        /// Steer the running turn instead of queueing (queues when idle).
        #[arg(long)]
        steer: bool,
        /// The model of the turn this input opens.
        #[arg(long, short = 'm')]
        model: Option<String>,
        /// Narrow the turn's tools to these names (comma-separated).
        #[arg(long, value_delimiter = ',')]
        tools: Vec<String>,
        /// Tighten the answerer's approval mode (bypass → ask → rules).
        #[arg(long, value_parser = ["bypass", "ask", "rules"])]
        approval_mode: Option<String>,
        /// Wait for the next turn the conversation opens after this input, follow its reply
        /// live, and exit as `nexus run` does (with --json: the reply turn). Refused, before
        /// anything is sent, when a person answers the conversation.
        #[arg(long, conflicts_with_all = ["steer", "deliver_in"])]
        wait: bool,
        /// Deliver later: `30s`, `5m`, `2h`, `1d`.
        #[arg(long, value_name = "DELAY")]
        deliver_in: Option<String>,
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// The timeline: user and assistant turns by position.
    Turns {
        conversation: String,
        /// Turns after this position.
        #[arg(long, default_value_t = 0)]
        after: i64,
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Child conversations (subagents).
    Children { conversation: String },
    /// Stops the running turn.
    Cancel { conversation: String },
    /// Archives it (and its children).
    Archive { conversation: String },
    /// Unarchives it.
    Unarchive { conversation: String },
}

fn print_one(c: &Conversation) {
    let title = c.title.as_deref().unwrap_or("(untitled)");
    let archived = if c.archived { "  archived" } else { "" };
    println!("{}  {}  {title}{archived}", c.public_id, c.created_at);
}

pub async fn run(ctx: &Ctx, cmd: &ConversationsCommand) -> Outcome {
    let ws = ctx.workspace()?;
    match cmd {
        ConversationsCommand::List { archived, limit, after } => {
            let archived = archived.as_deref().map(|a| match a {
                "include" => ArchivedFilter::Include,
                "only" => ArchivedFilter::Only,
                _ => ArchivedFilter::Exclude,
            });
            let mut page = Page::first();
            if let Some(limit) = limit {
                page = page.limit(*limit);
            }
            if let Some(after) = after {
                page = page.after(after);
            }
            let list = ws.conversations(archived, &page).await?;
            if ctx.json {
                print_json(&list);
            } else {
                list.conversations.iter().for_each(print_one);
                if let Some(next) = &list.pagination.next_after {
                    println!("more: --after {next}");
                }
            }
        }
        ConversationsCommand::Show { conversation } => {
            let c = ws.conversation(conversation).get().await?;
            if ctx.json {
                print_json(&json!({"conversation": c}));
            } else {
                print_one(&c);
                if let Some(p) = &c.parent {
                    println!("  child of {} ({})", p.public_id, p.label.as_deref().unwrap_or(""));
                }
                if let Some(answerer) = &c.answering_user_public_id {
                    println!("  answered by {answerer}");
                }
                if let Some(runner) = &c.default_runner_executor_public_id {
                    println!("  runner {runner}");
                }
            }
        }
        ConversationsCommand::Create {
            title,
            answerer,
            runner,
            idempotency_key,
        } => {
            let mut new = NewConversation::new();
            if let Some(t) = title {
                new = new.title(t);
            }
            if let Some(a) = super::answerer::for_create(ctx, &ws, answerer.as_deref()).await? {
                new = new.answerer(a);
            }
            if let Some(r) = runner {
                new = new.default_runner(r);
            }
            if let Some(k) = idempotency_key {
                new = new.idempotency_key(k);
            }
            let created = ws.create_conversation(&new).await?;
            if ctx.json {
                print_json(&created);
            } else {
                println!("{}", created.conversation.public_id);
            }
        }
        ConversationsCommand::Say {
            conversation,
            text,
            steer,
            model,
            tools,
            approval_mode,
            deliver_in,
            idempotency_key,
            wait,
        } => {
            let mut input = NewInput::text(text);
            input = input.delivery_mode(if *steer {
                DeliveryMode::Steer
            } else {
                DeliveryMode::Queue
            });
            if let Some(m) = model {
                input = input.model(m);
            }
            if !tools.is_empty() {
                input = input.tool_names(tools.clone());
            }
            if let Some(mode) = approval_mode {
                input = input.approval_mode(ApprovalMode::from(mode.as_str()));
            }
            if let Some(delay) = deliver_in {
                input = input.deliver_in(delay);
            }
            if let Some(k) = idempotency_key {
                input = input.idempotency_key(k);
            }
            if *wait {
                super::answerer::require_agent(ctx, &ws, conversation).await?;
            }
            let handle = ws.conversation(conversation);
            let created = handle.create_input(&input).await?;
            if *wait {
                if !ctx.json {
                    println!("input {} {}", created.input.public_id, created.input.state);
                }
                return super::reply::wait(ctx, &ws, &handle, &created.input.public_id).await;
            }
            if ctx.json {
                print_json(&created);
            } else {
                println!("input {} {}", created.input.public_id, created.input.state);
            }
        }
        ConversationsCommand::Turns {
            conversation,
            after,
            limit,
        } => {
            let page = ws.conversation(conversation).turns(*after, *limit).await?;
            if ctx.json {
                print_json(&page);
            } else {
                for t in &page.turns {
                    let run = t
                        .run_public_id
                        .as_deref()
                        .map(|r| format!(" run {r}"))
                        .unwrap_or_default();
                    println!("#{} {} [{}]{run}", t.position, t.role, t.status);
                    if let Some(content) = &t.content {
                        println!("  {}", short(content, 300));
                    }
                }
            }
        }
        ConversationsCommand::Children { conversation } => {
            let children = ws.conversation(conversation).children().await?;
            if ctx.json {
                print_json(&json!({"conversations": children}));
            } else {
                children.iter().for_each(print_one);
            }
        }
        ConversationsCommand::Cancel { conversation } => {
            let canceled = ws.conversation(conversation).cancel().await?;
            if ctx.json {
                print_json(&canceled);
            } else {
                match &canceled.canceled_turn_public_id {
                    Some(turn) => println!("canceled turn {turn}"),
                    None => println!("nothing was running"),
                }
            }
        }
        ConversationsCommand::Archive { conversation } | ConversationsCommand::Unarchive { conversation } => {
            let handle = ws.conversation(conversation);
            let c = if matches!(cmd, ConversationsCommand::Archive { .. }) {
                handle.archive().await?
            } else {
                handle.unarchive().await?
            };
            if ctx.json {
                print_json(&json!({"conversation": c}));
            } else {
                print_one(&c);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
