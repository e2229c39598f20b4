//! `nexus login`: checks a bearer against the server and saves it as a profile (the bearer is
//! read from `--token`, `NEXUS_TOKEN` or one line of stdin, and never printed).

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;

use nexus_sdk::Client;
use nexus_sdk::member::Page;
use serde_json::json;

use super::output::print_json;
use super::profile::{self, Profile};
use super::{ConnFlags, ENV_TOKEN, ENV_URL, ENV_WORKSPACE, Failure, Outcome};

/// What `nexus login` asks a person at a terminal when no bearer was given.
pub const PROMPT: &str = "paste a member bearer, then Enter:";

pub async fn run(flags: &ConnFlags) -> Outcome {
    let name = profile::name(flags.profile.as_deref());
    let url = flags
        .url
        .clone()
        .or_else(|| std::env::var(ENV_URL).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| format!("http://{}", crate::config::DEFAULT_LISTEN));
    let token = match flags
        .token
        .clone()
        .or_else(|| std::env::var(ENV_TOKEN).ok().filter(|v| !v.is_empty()))
    {
        Some(token) => token,
        None => {
            // A prompt is for a person: a bearer piped in gets none.
            if !flags.json && std::io::stdin().is_terminal() {
                eprintln!("{PROMPT}");
            }
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            line.trim().to_string()
        }
    };
    if token.is_empty() {
        return Err(Failure::local(
            "not_logged_in",
            format!("no bearer was given: pass --token, set {ENV_TOKEN}, or give it on stdin"),
        ));
    }
    let workspace = flags
        .workspace
        .clone()
        .or_else(|| std::env::var(ENV_WORKSPACE).ok().filter(|v| !v.is_empty()));
    let client = Client::new(&url, &token);
    let read = client.profile().await?;
    if let Some(ws) = &workspace {
        // Proves read standing in the workspace before it is saved.
        client.workspace(ws).runs(None, &Page::first().limit(1)).await?;
    }
    let member = &read.member;
    let path = profile::save(
        &name,
        Profile {
            url: url.clone(),
            token,
            workspace: workspace.clone(),
        },
    )?;
    if flags.json {
        print_json(&json!({
            "profile": name, "path": path, "url": url, "workspace": workspace,
            "member_public_id": member.public_id,
        }));
    } else {
        let who = if member.handle.is_empty() {
            &member.public_id
        } else {
            &member.handle
        };
        println!(
            "logged in to {url} as {who}; profile `{name}` saved to {}",
            path.display()
        );
        if workspace.is_none() {
            println!("no workspace saved: pass --workspace to the verbs or log in again with it");
        }
    }
    Ok(ExitCode::SUCCESS)
}
