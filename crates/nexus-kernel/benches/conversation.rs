//! A 1,000-turn conversation with one tool round per turn (issue 25): the kernel's time per
//! turn at turn 1,000 against turn 10. History replay must not make a conversation quadratic
//! (LangGraph's SQLite checkpointer grows 4 ms → 20 ms per round over 1,000 rounds).
//!
//! Each turn: the input is queued through the kernel's member door, then the engine is driven
//! in-process (`open_due_turns` + `run_jobs_once`, the serve loop's two steps) until the turn's
//! run has ended: the seed round (history replayed, a `runners_list` call), the kernel tool, the
//! continuation (the final reply), the turn's end. The time of a turn is `Instant` from before
//! the input's POST to the pass that ended it. The script is one JSON line per round (2,000),
//! picked by the number of assistant entries in the request, so every turn's request must
//! replay every earlier turn to be answered at all.
//!
//! `cargo bench -p nexus-kernel --bench conversation` (SQLite; `NEXUS_BENCH_TURNS` sets the
//! turn count, default 1,000).

use std::time::{Duration, Instant};

use nexus_kernel::conversations::{CreateConversationRequest, CreateInputRequest};
use nexus_kernel::declarations::NewConfiguration;
use nexus_kernel::{Kernel, MemberPrincipal};
use nexus_store::testing;
use serde_json::json;
use uuid::Uuid;

fn write_script(dir: &std::path::Path, turns: usize) {
    let mut lines = Vec::with_capacity(2 * turns);
    for i in 1..=turns {
        lines.push(
            json!({"text": format!("Turn {i}: looking."), "tool_calls": [
                {"id": format!("c{i}"), "name": "runners_list", "input": {}}
            ]})
            .to_string(),
        );
        lines.push(json!({"text": format!("Turn {i}: here is what I found.")}).to_string());
    }
    std::fs::write(dir.join("chat.jsonl"), lines.join("\n")).expect("write script");
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let turns: usize = std::env::var("NEXUS_BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let ts = testing::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    write_script(dir.path(), turns);
    let kernel = Kernel::builder(ts.store.clone())
        .scripts_dir(dir.path())
        .provider_backoff_ms(vec![0, 0, 0])
        .build();
    let boot = kernel.admin().bootstrap().await.expect("bootstrap");
    let token = boot.agent.member_token.as_str();
    let agent: MemberPrincipal = kernel
        .admin()
        .authenticate_member(Some(&format!("Bearer {token}")))
        .await
        .expect("authenticate");
    let ws = boot.workspace_public_id;
    kernel
        .admin()
        .put_configuration(
            &agent,
            NewConfiguration::parse(&json!({"configuration": {"approval_mode": "bypass",
                "default_model": "scripted/chat", "kernel_tools": ["nexus.runners.list"]}})),
        )
        .await
        .expect("profile");
    let request = CreateConversationRequest::parse(&json!({"conversation": {"title": "Bench"}})).expect("body");
    let made = kernel
        .conversations()
        .create_conversation(&agent, ws, Ok(request), None)
        .await
        .expect("conversation")
        .fresh()
        .expect("a new conversation");
    let c = Uuid::parse_str(&made.conversation.public_id).expect("uuid");

    let mut times = Vec::with_capacity(turns);
    for i in 1..=turns {
        let start = Instant::now();
        kernel
            .conversations()
            .create_input(
                &agent,
                ws,
                c,
                CreateInputRequest::parse(&json!({"input": {"content": format!("Question {i}")}})),
                None,
            )
            .await
            .expect("input");
        loop {
            let opened = kernel.conversations().open_due_turns().await.expect("turns");
            let ran = kernel.runs().run_jobs_once().await.expect("jobs");
            if opened == 0 && ran == 0 {
                break;
            }
        }
        times.push(start.elapsed());
        if i % 100 == 0 {
            eprintln!("turn {i}: {:.2} ms", ms(times[i - 1]));
        }
    }
    // Every turn replied with its own line: the history was replayed in full each time.
    let last = kernel
        .conversations()
        .list_turns(&agent, ws, c, Some(2 * turns as i64 - 2), Some(2))
        .await
        .expect("turns");
    let reply = last.turns[1].content.clone().unwrap_or_default();
    assert_eq!(reply, format!("Turn {turns}: here is what I found."), "{last:?}");

    let window = |from: usize| {
        let mut w: Vec<Duration> = times[from - 1..(from + 9).min(turns)].to_vec();
        w.sort();
        w
    };
    let early = window(10.min(turns));
    let late = window(turns.saturating_sub(9).max(1));
    let (e50, l50) = (percentile(&early, 0.5), percentile(&late, 0.5));
    println!("conversation, SQLite, {turns} turns, one tool round per turn");
    println!("  turns 10-19 p50 {:.3} ms", ms(e50));
    println!("  turns {}-{} p50 {:.3} ms", turns.saturating_sub(9), turns, ms(l50));
    println!("  ratio late/early {:.2}", l50.as_secs_f64() / e50.as_secs_f64());
    let mut all = times.clone();
    all.sort();
    println!(
        "  all turns p50 {:.3} ms, p99 {:.3} ms, total {:.1} s",
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.99)),
        times.iter().sum::<Duration>().as_secs_f64()
    );
    for k in [1, 100, 250, 500, 750, 1000].into_iter().filter(|k| *k <= turns) {
        let w = window(k.max(1));
        println!("  turn {k:>4}: p50 of 10 {:.3} ms", ms(percentile(&w, 0.5)));
    }
}
