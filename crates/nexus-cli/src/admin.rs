//! `nexus admin …`: operator verbs over the kernel. Each prints JSON with `--json`, otherwise
//! readable lines. Tokens are printed once; only their hashes are stored.

use std::process::ExitCode;

use nexus_kernel::Kernel;
use nexus_kernel::admin::MemberSpec;
use nexus_store::prelude::*;
use nexus_store::{AssignmentScope, MemberKind, Standing};
use serde_json::{Value, json};

use crate::config::{self, StoreFlags};
use crate::serve::open_store;

#[derive(Debug, clap::Subcommand)]
pub enum AdminCommand {
    /// Ready a store for first use (idempotent; fresh tokens every run).
    Bootstrap {
        #[command(flatten)]
        store: StoreFlags,
        /// Print exactly one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Members (humans and agents).
    #[command(subcommand)]
    Member(MemberCommand),
    /// Executors (runners; an agent's agent_application address comes with the agent).
    #[command(subcommand)]
    Executor(ExecutorCommand),
    /// Credentials.
    #[command(subcommand)]
    Token(TokenCommand),
}

#[derive(Debug, clap::Subcommand)]
pub enum MemberCommand {
    /// Create a member and print its bearer(s). An agent also gets its agent_application
    /// address and that address's transport bearer.
    Create {
        #[command(flatten)]
        store: StoreFlags,
        #[arg(long, value_parser = ["human", "agent"])]
        kind: String,
        #[arg(long)]
        handle: String,
        #[arg(long)]
        display_name: Option<String>,
        /// An agent's controlling human (handle or public id).
        #[arg(long)]
        steward: Option<String>,
        /// Standing in the default workspace.
        #[arg(long, value_parser = ["write", "read", "none"], default_value = "write")]
        standing: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum ExecutorCommand {
    /// Register a runner and print its transport bearer.
    Create {
        #[command(flatten)]
        store: StoreFlags,
        #[arg(long, value_parser = ["runner"], default_value = "runner")]
        kind: String,
        /// Registration identifier, also the display name.
        #[arg(long)]
        name: String,
        #[arg(long, value_parser = ["user_private", "account_wide"], default_value = "user_private")]
        scope: String,
        /// The managing human (handle or public id).
        #[arg(long)]
        manager: String,
        #[arg(long)]
        json: bool,
    },
    /// Advance the executor's credential epoch (fencing every older transport bearer) and
    /// print a new bearer.
    Repair {
        #[command(flatten)]
        store: StoreFlags,
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Revoke the executor.
    Revoke {
        #[command(flatten)]
        store: StoreFlags,
        id: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum TokenCommand {
    /// Mint a bearer for a member or an executor.
    Create {
        #[command(flatten)]
        store: StoreFlags,
        #[arg(long, conflicts_with = "executor")]
        member: Option<String>,
        #[arg(long)]
        executor: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Revoke one credential (by its id or the whole bearer).
    Revoke {
        #[command(flatten)]
        store: StoreFlags,
        credential: String,
        #[arg(long)]
        json: bool,
    },
}

async fn kernel(flags: &StoreFlags) -> anyhow::Result<Kernel> {
    let resolved = config::resolve(flags, None)?;
    let store = open_store(&resolved, false).await?;
    store.migrate().await?;
    Ok(Kernel::builder(store).providers(resolved.providers()?).build())
}

fn print(value: &Value, json: bool) {
    if json {
        println!("{}", serde_json::to_string(value).expect("JSON output serializes"));
    } else {
        print_lines("", value);
    }
}

fn print_lines(prefix: &str, value: &Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                print_lines(&key, v);
            }
        }
        Value::String(s) => println!("{prefix}: {s}"),
        other => println!("{prefix}: {other}"),
    }
}

pub async fn run(cmd: AdminCommand) -> anyhow::Result<ExitCode> {
    let (value, json) = match cmd {
        AdminCommand::Bootstrap { store, json } => (
            serde_json::to_value(kernel(&store).await?.admin().bootstrap().await?)?,
            json,
        ),
        AdminCommand::Member(MemberCommand::Create {
            store,
            kind,
            handle,
            display_name,
            steward,
            standing,
            json,
        }) => {
            let kernel = kernel(&store).await?;
            let created = kernel
                .admin()
                .create_member(MemberSpec {
                    kind: MemberKind::parse(&kind).expect("clap restricts --kind"),
                    handle,
                    display_name,
                    steward,
                    standing: Standing::parse(&standing),
                })
                .await?;
            let mut out = json!({
                "public_id": created.member.public_id,
                "kind": created.member.kind.as_str(),
                "member_token": created.member_token,
            });
            if let Some((executor, token)) = created.executor {
                out["executor_public_id"] = json!(executor.public_id);
                out["transport_token"] = json!(token);
            }
            (out, json)
        }
        AdminCommand::Executor(ExecutorCommand::Create {
            store,
            kind: _,
            name,
            scope,
            manager,
            json,
        }) => {
            let scope = AssignmentScope::parse(&scope).expect("clap restricts --scope");
            let (runner, token) = kernel(&store)
                .await?
                .admin()
                .create_runner(&name, scope, &manager)
                .await?;
            (
                json!({"executor_public_id": runner.public_id, "transport_token": token}),
                json,
            )
        }
        AdminCommand::Executor(ExecutorCommand::Repair { store, id, json }) => {
            let (executor, token) = kernel(&store).await?.admin().repair_executor(&id).await?;
            (
                json!({
                    "executor_public_id": executor.public_id,
                    "credential_epoch": executor.credential_epoch,
                    "transport_token": token,
                }),
                json,
            )
        }
        AdminCommand::Executor(ExecutorCommand::Revoke { store, id, json }) => {
            let executor = kernel(&store).await?.admin().revoke_executor(&id).await?;
            (
                json!({"executor_public_id": executor.public_id, "status": executor.status}),
                json,
            )
        }
        AdminCommand::Token(TokenCommand::Create {
            store,
            member,
            executor,
            json,
        }) => {
            let token = kernel(&store)
                .await?
                .admin()
                .create_token(member.as_deref(), executor.as_deref())
                .await?;
            (json!({"token": token}), json)
        }
        AdminCommand::Token(TokenCommand::Revoke {
            store,
            credential,
            json,
        }) => {
            let id = kernel(&store).await?.admin().revoke_token(&credential).await?;
            (json!({"credential_public_id": id, "revoked": true}), json)
        }
    };
    print(&value, json);
    Ok(ExitCode::SUCCESS)
}
