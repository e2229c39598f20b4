//! Crash recovery of conversations under the real `nexus serve` (runs.md §12,
//! storage-and-scale.md §7): SIGKILL while a turn's model call is in flight, then SIGKILL
//! while a spawned child's reply — the mail its parent waits for — is in flight. After each
//! restart the work resumes from the store alone; at the end every input was consumed once,
//! every turn opened and ended once, and the child's reply reached the parent once, as mail
//! that opened exactly one more turn. On SQLite, and on PostgreSQL when configured.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Server, json_of, nexus, spawn_server};
use nexus_sdk::member::{ApprovalMode, ConversationRef, NewConversation, NewInput, TurnPage};
use nexus_sdk::{Client, Configuration};
use serde_json::{Value, json};

async fn healthy(store_args: &[&str], token: &str) -> (Server, Client) {
    let mut server = spawn_server(store_args);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if Client::new(&server.base, "").healthz().await.is_ok() {
            break;
        }
        if let Some(status) = server.child.try_wait().unwrap() {
            panic!("nexus serve exited early with {status}");
        }
        assert!(Instant::now() < deadline, "nexus serve did not become healthy");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let client = Client::new(&server.base, token);
    (server, client)
}

/// Polls the conversation's turns until `done` holds (panics after `secs`).
async fn turns_until(c: &ConversationRef, secs: u64, done: impl Fn(&TurnPage) -> bool) -> TurnPage {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Ok(page) = c.turns(0, Some(200)).await
            && done(&page)
        {
            return page;
        }
        assert!(
            Instant::now() < deadline,
            "timed out: {:?}",
            c.turns(0, Some(200)).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn write_script(data_dir: &Path) {
    let scripts = data_dir.join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let lines = [
        json!({"delay_ms": 3000, "text": "Spawning.", "tool_calls": [{"id": "s", "name": "spawn",
               "input": {"prompt": "[[thread:kid]] Work", "label": "kid"}}]}),
        json!({"text": "Spawned."}),
        json!({"text": "Read the mail.", "expect": {"last_user_contains": "Kid done."}}),
        json!({"thread": "kid", "delay_ms": 4000, "text": "Kid done."}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(scripts.join("family.jsonl"), text.join("\n")).unwrap();
}

fn roles(page: &TurnPage) -> Vec<(String, String, Option<String>)> {
    page.turns
        .iter()
        .map(|t| {
            (
                t.role.as_str().to_string(),
                t.status.as_str().to_string(),
                t.content.clone(),
            )
        })
        .collect()
}

async fn kill_during_turn_and_mail(store_args: &[&str], data_dir: &Path) {
    let mut boot_args = vec!["admin", "bootstrap"];
    boot_args.extend_from_slice(store_args);
    boot_args.push("--json");
    let boot = json_of(&nexus(&boot_args));
    let token = boot["agent"]["member_token"].as_str().unwrap().to_string();
    let ws_id = boot["workspace_public_id"].as_str().unwrap().to_string();
    write_script(data_dir);

    let (mut server, client) = healthy(store_args, &token).await;
    client
        .put_configuration(&Configuration {
            approval_mode: Some(ApprovalMode::Bypass),
            default_model: Some("scripted/family".into()),
            kernel_tools: Some(vec!["nexus.conversation.spawn".into()]),
            ..Configuration::default()
        })
        .await
        .expect("profile");
    let ws = client.workspace(&ws_id);
    let made = ws
        .create_conversation(&NewConversation::new().title("Crash"))
        .await
        .expect("conversation");
    let id = made.conversation.public_id.clone();
    ws.conversation(&id)
        .create_input(&NewInput::text("Go"))
        .await
        .expect("input");

    // 1. The parent's first round is in flight (3 s): kill.
    let c = ws.conversation(&id);
    turns_until(&c, 20, |p| {
        p.turns.len() == 2 && p.turns[1].status.as_str() == "running"
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.kill_9();
    let (next, client) = healthy(store_args, &token).await;
    server = next;
    let ws = client.workspace(&ws_id);
    let c = ws.conversation(&id);

    // 2. The parent's turn ends; the child's reply is in flight (4 s): kill again.
    turns_until(&c, 60, |p| {
        p.turns.len() >= 2 && p.turns[1].status.as_str() == "completed"
    })
    .await;
    let kids = c.children().await.expect("children");
    assert_eq!(kids.len(), 1, "one child, spawned once: {kids:?}");
    let kid = ws.conversation(&kids[0].public_id);
    turns_until(&kid, 20, |p| {
        p.turns.len() == 2 && p.turns[1].status.as_str() == "running"
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.kill_9();
    let (server, client) = healthy(store_args, &token).await;
    let ws = client.workspace(&ws_id);
    let c = ws.conversation(&id);
    let kid = ws.conversation(&kids[0].public_id);

    // 3. The child replies; its mail opens exactly one more parent turn.
    let done = turns_until(&c, 60, |p| {
        p.turns.len() == 4 && p.turns[3].status.as_str() == "completed"
    })
    .await;
    let got = roles(&done);
    assert_eq!(got[0], ("user".into(), "completed".into(), Some("Go".into())));
    assert_eq!(
        got[1],
        ("assistant".into(), "completed".into(), Some("Spawned.".into()))
    );
    assert_eq!(got[2].0, "user");
    assert!(got[2].2.as_deref().unwrap_or_default().contains("Kid done."), "{got:?}");
    assert_eq!(
        got[3],
        ("assistant".into(), "completed".into(), Some("Read the mail.".into()))
    );
    let kid_turns = kid.turns(0, None).await.unwrap();
    assert_eq!(kid_turns.turns.len(), 2, "{:?}", roles(&kid_turns));
    assert_eq!(kid_turns.turns[1].content.as_deref(), Some("Kid done."));

    // Nothing doubled: each input consumed once, one mail, each turn started and ended once.
    let inputs = c.inputs(&Default::default()).await.unwrap().inputs;
    let kinds: Vec<&str> = inputs.iter().map(|i| i.kind.as_str()).collect();
    assert_eq!(kinds, ["user", "task_result"], "{inputs:?}");
    for i in &inputs {
        assert_eq!(i.state.as_str(), "consumed", "{i:?}");
    }
    let events = c.events(0, Some(500)).await.unwrap().events;
    let count = |t: &str| events.iter().filter(|e| e.kind.as_str() == t).count();
    assert_eq!(count("turn_started"), 4, "{events:?}");
    assert_eq!(count("turn_ended"), 2, "{events:?}");
    assert_eq!(count("child_spawned"), 1, "{events:?}");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.sequence, i as i64 + 1, "gapless: {events:?}");
    }
    drop(server);
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_during_a_turn_and_during_mail_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    kill_during_turn_and_mail(&["--data-dir", &d], dir.path()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_during_a_turn_and_during_mail_on_postgres() {
    let Some(pg) = nexus_store::testing::postgres().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let url = pg.url.clone();
    kill_during_turn_and_mail(&["--data-dir", &d, "--database-url", &url], dir.path()).await;
}
