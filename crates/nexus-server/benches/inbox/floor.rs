//! `NEXUS_BENCH_SQL_FLOOR=1` (PostgreSQL): the inbox's writes without the kernel, HTTP or
//! round trips. After the same setup (8 runners, `TASKS` runs of one dispatched `echo` row),
//! 8 sessions of their own settle the rows by SQL alone, each task in two simple queries of
//! prepared statements: the claim (the principal version, the run lock, the row, the answerer,
//! the claim's update, its event and the run's sequence, `COMMIT`) and the commit (the same
//! reads, the row completed, the dependents' probe, the quiet-run read, the run completed, two
//! events, the sequence, `COMMIT`, then a notice in a transaction of its own, as the kernel
//! sends it). What the kernel writes for a settled task, in
//! the fewest round trips: what PostgreSQL itself allows this machine for that work, to set
//! beside the raw SKIP LOCKED loop.
//!
//! Two shapes measure write sets the kernel does not have, which would change the spec:
//! `noseq` takes each event's sequence from the run's last event (`events`' primary key)
//! instead of storing it on `runs` (no run update for the claim's event), and `lean` also
//! writes no `task_claimed` event (runs.md §11).

use std::time::{Duration, Instant};

use nexus_store::testing::{OutsideSession, TestStore};

const PREPARE: &str = "\
PREPARE f_version AS SELECT version FROM principal_version WHERE id = 1; \
PREPARE f_lock (BIGINT) AS SELECT * FROM runs WHERE id = $1 FOR UPDATE; \
PREPARE f_task (BIGINT, TEXT) AS SELECT * FROM tasks WHERE run_id = $1 AND key = $2; \
PREPARE f_member (BIGINT) AS SELECT * FROM members WHERE id = (SELECT answering_member_id FROM runs WHERE id = $1); \
PREPARE f_claim (BIGINT, TEXT, BIGINT) AS UPDATE tasks SET claim_token = $2, claimed_at = $3, \
  claimant_id = addressed_executor_id, await_started_at = $3, deadline_at = $3 + 600000 \
  WHERE id = $1 AND status = 'dispatched' AND claimed_at IS NULL; \
PREPARE f_event (BIGINT, TEXT, BIGINT, TEXT, TEXT, BIGINT) AS INSERT INTO events (run_id, sequence, type, at, task_key, data) \
  SELECT id, last_event_sequence + $6, $2, $3, $4, $5 FROM runs WHERE id = $1; \
PREPARE f_sequence (BIGINT, BIGINT) AS UPDATE runs SET last_event_sequence = last_event_sequence + $2 WHERE id = $1; \
PREPARE f_settle (BIGINT, TEXT, BIGINT, TEXT) AS UPDATE tasks SET status = 'completed', content = $2, settled_at = $3 \
  WHERE id = $1 AND status = 'dispatched' AND claim_token = $4; \
PREPARE f_probe (BIGINT, BIGINT) AS SELECT e.task_id, a.awaiting FROM (SELECT EXISTS (SELECT 1 FROM tasks \
  WHERE run_id = $1 AND kind = 'await_task' AND status = 'running') AS awaiting) a \
  LEFT JOIN task_edges e ON e.depends_on_id = $2 AND NOT a.awaiting; \
PREPARE f_quiet (BIGINT) AS SELECT id, key, status FROM tasks WHERE run_id = $1 AND NOT EXISTS \
  (SELECT 1 FROM tasks o WHERE o.run_id = $1 AND o.status IN ('waiting', 'needs_approval', 'running', 'dispatched', 'awaiting_input')); \
PREPARE f_end (BIGINT, BIGINT) AS UPDATE runs SET status = 'completed', ended_at = $2 WHERE id = $1; \
PREPARE f_notify (TEXT) AS SELECT pg_notify('nexus_floor', $1); \
PREPARE f_event_max (BIGINT, TEXT, BIGINT, TEXT, TEXT) AS INSERT INTO events (run_id, sequence, type, at, task_key, data) \
  SELECT $1, COALESCE((SELECT sequence FROM events WHERE run_id = $1 ORDER BY sequence DESC LIMIT 1), 0) + 1, $2, $3, $4, $5";

/// What each task's two simple queries hold.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The kernel's reads and writes (`NEXUS_BENCH_SQL_FLOOR=1`).
    Kernel,
    /// The row's two updates alone, as the raw loop's job (`NEXUS_BENCH_SQL_FLOOR=updates`):
    /// what `tasks` itself costs.
    Updates,
    /// The kernel's shape without the notice (`NEXUS_BENCH_SQL_FLOOR=silent`): what `NOTIFY`
    /// costs.
    Silent,
    /// The sequence read from `events` instead of stored on `runs` (`noseq`).
    NoSeq,
    /// `noseq` and no `task_claimed` event (`lean`).
    Lean,
}

/// Settles every dispatched row by SQL alone over 8 sessions; each task's claim-sent →
/// commit-answered time.
pub async fn run(ts: &TestStore, sessions: usize, shape: Shape) -> Vec<Duration> {
    let mut first = OutsideSession::open(ts).await.expect("PostgreSQL");
    let rows = first
        .fetch_ints("SELECT run_id, id FROM tasks WHERE status = 'dispatched' ORDER BY id")
        .await;
    let mut shares: Vec<Vec<(i64, i64)>> = vec![Vec::new(); sessions];
    for (i, r) in rows.iter().enumerate() {
        shares[i % sessions].push((r[0], r[1]));
    }
    let mut handles = Vec::with_capacity(sessions);
    for share in shares {
        let mut s = OutsideSession::open(ts).await.expect("PostgreSQL");
        s.execute(PREPARE).await.expect("the floor's statements prepare");
        handles.push(tokio::spawn(async move {
            let mut times = Vec::with_capacity(share.len());
            for (run, task) in share {
                let start = Instant::now();
                let now = 1_800_000_000_000i64;
                let token = format!("tok-{task}");
                if shape == Shape::Updates {
                    s.execute(&format!("BEGIN; EXECUTE f_claim({task}, '{token}', {now}); COMMIT"))
                        .await
                        .expect("the claim");
                    let content = "'[{\"type\":\"text\",\"text\":\"ok\"}]'";
                    s.execute(&format!(
                        "BEGIN; EXECUTE f_settle({task}, {content}, {now}, '{token}'); COMMIT"
                    ))
                    .await
                    .expect("the commit");
                    times.push(start.elapsed());
                    continue;
                }
                let (claim_event, commit_events) = events(shape, run, now);
                s.execute(&format!(
                    "BEGIN; EXECUTE f_version; EXECUTE f_lock({run}); EXECUTE f_task({run}, 't'); \
                     EXECUTE f_member({run}); EXECUTE f_claim({task}, '{token}', {now}); {claim_event} COMMIT"
                ))
                .await
                .expect("the claim");
                let notify = if shape == Shape::Silent {
                    String::new()
                } else {
                    format!("EXECUTE f_notify('{run}');")
                };
                s.execute(&format!(
                    "BEGIN; EXECUTE f_version; EXECUTE f_lock({run}); EXECUTE f_task({run}, 't'); \
                     EXECUTE f_settle({task}, '[{{\"type\":\"text\",\"text\":\"ok\"}}]', {now}, '{token}'); \
                     EXECUTE f_probe({run}, {task}); EXECUTE f_quiet({run}); EXECUTE f_end({run}, {now}); \
                     {commit_events} COMMIT; {notify}"
                ))
                .await
                .expect("the commit");
                times.push(start.elapsed());
            }
            times
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.expect("a floor session"));
    }
    let left = first
        .fetch_ints("SELECT count(*) FROM tasks WHERE status <> 'completed'")
        .await;
    assert_eq!(left[0][0], 0, "the floor settled every row");
    all
}

/// The claim's and the commit's event statements in `shape` (not `Updates`): the kernel's, each
/// sequence stored on `runs`; or (`NoSeq`, `Lean`) each taken from the run's last event, and
/// (`Lean`) no claim event.
fn events(shape: Shape, run: i64, now: i64) -> (String, String) {
    let claimed = "'{\"executor_public_id\":\"x\"}'";
    match shape {
        Shape::NoSeq | Shape::Lean => {
            let claim = if shape == Shape::Lean {
                String::new()
            } else {
                format!("EXECUTE f_event_max({run}, 'task_claimed', {now}, 't', {claimed});")
            };
            let commit = format!(
                "EXECUTE f_event_max({run}, 'task_completed', {now}, 't', '{{}}'); \
                 EXECUTE f_event_max({run}, 'run_completed', {now}, NULL, '{{}}');"
            );
            (claim, commit)
        }
        _ => (
            format!("EXECUTE f_event({run}, 'task_claimed', {now}, 't', {claimed}, 1); EXECUTE f_sequence({run}, 1);"),
            format!(
                "EXECUTE f_event({run}, 'task_completed', {now}, 't', '{{}}', 1); \
                 EXECUTE f_event({run}, 'run_completed', {now}, NULL, '{{}}', 2); EXECUTE f_sequence({run}, 2);"
            ),
        ),
    }
}
