//! Whom a conversation asks (docs/decisions/040-conversation-answerer-in-the-cli.md).
//! `nexus conversations create` without `--answerer` picks the workspace's one agent for a
//! person (an agent's own conversation is answered by the agent), and `say --wait` refuses up
//! front when a person answers, since no reply will come to wait for.

use nexus_sdk::{MemberKind, Workspace, WorkspaceMember};

use super::{Ctx, Failure};

/// `--answerer` naming the caller: a conversation only the caller answers.
pub const ME: &str = "me";

/// The `answering_user_public_id` to create with (`None`: the caller, the server's default).
/// `flag` is `me`, a member id, or a handle; absent, a person's conversation goes to the
/// workspace's one agent (said on stderr), and zero or several agents are refused.
pub async fn for_create(ctx: &Ctx, ws: &Workspace, flag: Option<&str>) -> Result<Option<String>, Failure> {
    match flag {
        Some(ME) => Ok(None),
        Some(id) if is_uuid(id) => Ok(Some(id.to_string())),
        Some(handle) => {
            let members = ws.members(None).await?;
            match members.iter().find(|m| m.member.handle == handle) {
                Some(m) => Ok(Some(m.member.public_id.clone())),
                None => Err(Failure::local(
                    "answerer_not_found",
                    format!("no member `{handle}` in this workspace; members: {}", listed(&members)),
                )),
            }
        }
        None => {
            if ctx.client.profile().await?.member.kind == MemberKind::Agent {
                return Ok(None);
            }
            let agents: Vec<WorkspaceMember> = ws
                .members(Some(MemberKind::Agent))
                .await?
                .into_iter()
                .filter(|m| m.standing == "write")
                .collect();
            match agents.as_slice() {
                [one] => {
                    if !ctx.json {
                        eprintln!("answered by agent {} ({})", one.member.handle, one.member.public_id);
                    }
                    Ok(Some(one.member.public_id.clone()))
                }
                [] => Err(Failure::local(
                    "answerer_required",
                    "no agent can answer in this workspace: pass --answerer (a member's id or handle, \
                     or `me` for a conversation only you answer)",
                )),
                several => Err(Failure::local(
                    "answerer_required",
                    format!(
                        "{} agents can answer here: {}; pick one with --answerer",
                        several.len(),
                        listed(several)
                    ),
                )),
            }
        }
    }
}

/// Refuses `say --wait` on a conversation a person answers: no reply turn will open.
pub async fn require_agent(ctx: &Ctx, ws: &Workspace, conversation: &str) -> Result<(), Failure> {
    let read = ws.conversation(conversation).get().await?;
    let Some(answerer) = read.answering_user_public_id else {
        return Ok(());
    };
    let me = ctx.client.profile().await?.member;
    let who = if me.public_id == answerer {
        Some((me.kind, me.handle))
    } else {
        let members = ws.members(None).await?;
        members
            .into_iter()
            .find(|m| m.member.public_id == answerer)
            .map(|m| (m.member.kind, m.member.handle))
    };
    match who {
        Some((MemberKind::Human, handle)) => Err(Failure::local(
            "no_reply",
            format!(
                "conversation {conversation} is answered by a person ({handle}), so no reply will come \
                 to wait for: send without --wait, or start one an agent answers with \
                 `nexus conversations create` (it picks the workspace's agent)"
            ),
        )),
        _ => Ok(()),
    }
}

/// `handle (kind, id)`, comma-separated.
fn listed(members: &[WorkspaceMember]) -> String {
    let all: Vec<String> = members
        .iter()
        .map(|m| format!("{} ({}, {})", m.member.handle, m.member.kind, m.member.public_id))
        .collect();
    if all.is_empty() { "none".into() } else { all.join(", ") }
}

fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.char_indices().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}
