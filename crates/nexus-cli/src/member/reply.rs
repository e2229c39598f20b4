//! `nexus conversations say --wait`: after the input is accepted, waits for the next turn the
//! conversation opens, follows its reply's run with the progress view, and gives the exit
//! status of `nexus run`. A conversation answered by a person opens no reply: that is said,
//! and the wait ends.

use std::process::ExitCode;
use std::time::Duration;

use futures_util::StreamExt;
use nexus_sdk::member::{ConversationEvent, ConversationEventKind, ConversationRef, Turn, Workspace};
use serde_json::Value;

use super::follow::{self, View};
use super::output::print_json;
use super::run::exit_for;
use super::{Ctx, Failure, Outcome};

/// How long after a user turn opens its reply turn must have opened too (both are written in
/// one transaction, so this only bounds a slow feed).
const REPLY_GRACE: Duration = Duration::from_secs(2);

/// Waits for the reply to the input `input_public_id` and follows it.
pub async fn wait(ctx: &Ctx, ws: &Workspace, conversation: &ConversationRef, input_public_id: &str) -> Outcome {
    let mut feed = conversation.events_stream(0).await?;
    let mut accepted = false;
    let mut user_turn = false;
    loop {
        let next = if user_turn {
            match tokio::time::timeout(REPLY_GRACE, feed.next()).await {
                Ok(next) => next,
                Err(_) => return no_reply(ctx),
            }
        } else {
            feed.next().await
        };
        let Some(event) = next else {
            return Err(Failure::local("unreachable", "the conversation's feed closed"));
        };
        let event: ConversationEvent = event?;
        let data = &event.data;
        match event.kind {
            ConversationEventKind::InputAccepted if data["input_public_id"] == input_public_id => accepted = true,
            ConversationEventKind::TurnStarted if accepted && data["role"] == "user" => {
                if user_turn {
                    return no_reply(ctx);
                }
                user_turn = true;
            }
            ConversationEventKind::TurnStarted if user_turn && data["role"] == "assistant" => {
                let run = data["run_public_id"].as_str().unwrap_or_default().to_string();
                let turn = data["turn_public_id"].as_str().unwrap_or_default().to_string();
                return follow_reply(ctx, ws, conversation, &run, &turn).await;
            }
            ConversationEventKind::TurnEnded if user_turn => {
                let key = data["error"]["key"].as_str().unwrap_or("turn_failed");
                return Err(Failure::local(
                    "turn_failed",
                    format!("the reply could not start: {key}"),
                ));
            }
            _ if user_turn => return no_reply(ctx),
            _ => {}
        }
    }
}

fn no_reply(ctx: &Ctx) -> Outcome {
    if ctx.json {
        print_json(&serde_json::json!({"turn": Value::Null}));
    } else {
        println!("no reply: this conversation is answered by a person");
    }
    Ok(ExitCode::SUCCESS)
}

async fn follow_reply(ctx: &Ctx, ws: &Workspace, conversation: &ConversationRef, run: &str, turn: &str) -> Outcome {
    let run = ws.run(run);
    let ended = follow::follow(&run, View::hinting(ctx.json)).await?;
    if ctx.json {
        let reply = find_turn(conversation, turn).await?;
        print_json(&serde_json::json!({"turn": reply}));
    }
    Ok(exit_for(&ended.status))
}

/// The turn `public_id`, read from the timeline's last page.
async fn find_turn(conversation: &ConversationRef, public_id: &str) -> Result<Option<Turn>, Failure> {
    let mut after = 0;
    loop {
        let page = conversation.turns(after, Some(200)).await?;
        if let Some(turn) = page.turns.iter().find(|t| t.public_id == public_id) {
            return Ok(Some(turn.clone()));
        }
        match page.turns.last() {
            Some(last) if page.turns.len() == 200 => after = last.position,
            _ => return Ok(None),
        }
    }
}
