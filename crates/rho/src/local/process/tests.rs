use std::time::Instant;

use nexus_sdk::runner::Outcome;

use super::*;
use crate::local::tests::{TestRoot, text_of};
use crate::local::text::MAX_TEXT;

fn id_of(result: &ToolResult) -> String {
    assert!(!result.is_error, "{}", text_of(result));
    result.structured_content.as_ref().unwrap()["process_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn run_to_end(p: &Processes, t: &TestRoot, input: Value) -> ToolResult {
    let id = id_of(&p.start(&t.root, &input));
    p.read(&json!({"process_id": id, "wait_ms": 10_000}), &CancellationToken::new())
        .await
}

/// Whether `pid` is gone (or a zombie nobody reaped yet).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn output_and_exit_code_come_back_with_titles() {
    let t = TestRoot::new();
    let p = Processes::new(None);
    let started = p.start(&t.root, &json!({"command": "echo out; echo err >&2; exit 3"}));
    assert_eq!(
        started.title.as_deref(),
        Some("start_process echo out; echo err >&2; exit 3")
    );
    let id = id_of(&started);
    assert_eq!(id, "p1");
    let r = p
        .read(&json!({"process_id": id, "wait_ms": 10_000}), &CancellationToken::new())
        .await;
    assert_eq!(text_of(&r), "out\nerr\n[p1 exited with code 3]");
    assert_eq!(r.title.as_deref(), Some("read_process p1"));
    assert_eq!(
        r.structured_content,
        Some(json!({"process_id": "p1", "status": "exited", "exit_code": 3, "signal": null}))
    );
    // Output is returned once.
    let again = p.read(&json!({"process_id": "p1"}), &CancellationToken::new()).await;
    assert_eq!(text_of(&again), "[p1 exited with code 3]");
}

#[tokio::test]
async fn cwd_and_env_apply_and_the_bearer_variable_is_hidden() {
    let t = TestRoot::new();
    t.file("sub/marker", "");
    assert!(std::env::var("HOME").is_ok(), "the test needs HOME set");
    let p = Processes::new(Some("HOME".into()));
    let r = run_to_end(
        &p,
        &t,
        json!({"command": "ls; echo \"[$GREETING][$HOME]\"", "cwd": "sub", "env": {"GREETING": "hi"}}),
    )
    .await;
    assert_eq!(text_of(&r), "marker\n[hi][]\n[p1 exited with code 0]");
}

#[tokio::test]
async fn a_cwd_outside_the_root_or_a_blank_command_is_refused() {
    let t = TestRoot::new();
    t.file("f", "");
    let p = Processes::new(None);
    for (input, needle) in [
        (json!({"command": "ls", "cwd": ".."}), "leaves the root"),
        (json!({"command": "ls", "cwd": "/"}), "outside the root"),
        (json!({"command": "ls", "cwd": "f"}), "not a folder"),
        (json!({"command": "  "}), "empty"),
        (json!({"cmd": "ls"}), "invalid input"),
    ] {
        let r = p.start(&t.root, &input);
        assert!(r.is_error && text_of(&r).contains(needle), "{input}: {}", text_of(&r));
        assert!(r.title.is_some());
    }
}

#[tokio::test]
async fn reading_a_running_process_returns_what_is_there() {
    let t = TestRoot::new();
    let p = Processes::new(None);
    let id = id_of(&p.start(&t.root, &json!({"command": "printf 'ready> '; sleep 30"})));
    let started = Instant::now();
    let r = p
        .read(&json!({"process_id": id, "wait_ms": 300}), &CancellationToken::new())
        .await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(text_of(&r), "ready> \n[p1 is running]");
    assert_eq!(r.structured_content.as_ref().unwrap()["status"], "running");
    let r = p.read(&json!({"process_id": id}), &CancellationToken::new()).await;
    assert_eq!(text_of(&r), "[no new output; p1 is running]");
    let stopped = p.stop(&json!({"process_id": id}), &CancellationToken::new()).await;
    assert_eq!(text_of(&stopped), "sent SIGTERM to p1\n[p1 was killed by signal 15]");
    assert_eq!(stopped.title.as_deref(), Some("stop_process p1"));
}

#[tokio::test]
async fn a_wait_ends_early_when_the_process_exits_or_the_call_is_canceled() {
    let t = TestRoot::new();
    let p = Processes::new(None);
    let id = id_of(&p.start(&t.root, &json!({"command": "sleep 0.2; echo done"})));
    let started = Instant::now();
    let r = p
        .read(&json!({"process_id": id, "wait_ms": 60_000}), &CancellationToken::new())
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(text_of(&r), "done\n[p1 exited with code 0]");

    let id = id_of(&p.start(&t.root, &json!({"command": "sleep 30"})));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let r = p.read(&json!({"process_id": id, "wait_ms": 60_000}), &cancel).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(r.outcome, Outcome::Failed);
    let too_long = p
        .read(
            &json!({"process_id": id, "wait_ms": MAX_WAIT_MS + 1}),
            &CancellationToken::new(),
        )
        .await;
    assert!(too_long.is_error);
}

#[tokio::test]
async fn stop_ends_the_whole_group_and_escalates_to_sigkill() {
    let t = TestRoot::new();
    let p = Processes::new(None);
    // A grandchild in the background: stopping must reach it too.
    let id = id_of(&p.start(&t.root, &json!({"command": "sleep 1000 & echo $!; wait"})));
    let mut printed = String::new();
    for _ in 0..100 {
        let r = p.read(&json!({"process_id": id}), &CancellationToken::new()).await;
        printed.push_str(text_of(&r).lines().next().unwrap());
        if !printed.starts_with('[') {
            break;
        }
        printed.clear();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let grandchild: u32 = printed.trim().parse().unwrap();
    assert!(!dead(grandchild));
    p.stop(&json!({"process_id": id}), &CancellationToken::new()).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !dead(grandchild) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(dead(grandchild), "the background sleep survived stop_process");

    // A process that ignores SIGTERM is killed.
    let id = id_of(&p.start(&t.root, &json!({"command": "trap '' TERM; echo up; sleep 1000"})));
    p.read(&json!({"process_id": id, "wait_ms": 200}), &CancellationToken::new())
        .await;
    let r = p.stop(&json!({"process_id": id}), &CancellationToken::new()).await;
    assert!(text_of(&r).contains("then SIGKILL after 2 s"), "{}", text_of(&r));
    assert!(text_of(&r).ends_with("killed by signal 9]"), "{}", text_of(&r));
    // Stopping again is harmless.
    let again = p.stop(&json!({"process_id": id}), &CancellationToken::new()).await;
    assert!(!again.is_error && text_of(&again).starts_with("p2 had already ended"));
}

#[tokio::test]
async fn unknown_ids_are_errors() {
    let p = Processes::new(None);
    for id in ["p9", "x", ""] {
        let r = p.read(&json!({"process_id": id}), &CancellationToken::new()).await;
        assert!(r.is_error && text_of(&r).contains("unknown process_id"), "{id}");
        let r = p.stop(&json!({"process_id": id}), &CancellationToken::new()).await;
        assert!(r.is_error && text_of(&r).contains("unknown process_id"), "{id}");
    }
}

#[tokio::test]
async fn a_flood_of_output_is_bounded_with_a_note() {
    let t = TestRoot::new();
    let p = Processes::new(None);
    let r = run_to_end(&p, &t, json!({"command": "seq 1 100000"})).await;
    let out = text_of(&r);
    assert!(out.len() <= MAX_TEXT, "{}", out.len());
    assert!(
        out.starts_with('[') && out.contains("lines of earlier output were dropped"),
        "{}",
        &out[..200]
    );
    assert!(out.ends_with("100000\n[p1 exited with code 0]"));
}

#[tokio::test]
async fn at_most_sixteen_run_at_once_and_dropping_the_table_kills_them() {
    let t = TestRoot::new();
    let p = Processes::new(None);
    let mut pids = Vec::new();
    for _ in 0..MAX_RUNNING {
        let id = id_of(&p.start(&t.root, &json!({"command": "sleep 1000"})));
        pids.push(p.find(&id).unwrap().pid);
    }
    let refused = p.start(&t.root, &json!({"command": "sleep 1000"}));
    assert!(refused.is_error && text_of(&refused).contains("at most 16"));
    drop(p);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pids.iter().all(|&pid| dead(pid)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(pids.iter().all(|&pid| dead(pid)));
}
