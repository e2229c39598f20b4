//! PostgreSQL's plans for the statements a round, the inbox page and the sweep run against
//! `tasks`: each reaches its rows through an index condition, so its cost does not grow with
//! the rows every earlier run left in the table.
//!
//! With `enable_seqscan` off the planner still reads the whole table where no index condition
//! can serve a statement: as a sequential scan, or as an index scan without a condition (a walk
//! of the whole primary key in `ORDER BY id` order). Either is a statement that reads every task
//! ever stored. Plans are generic (`force_generic_plan`): the kernel prepares its statements
//! once per connection and runs them with any parameters.

use serde_json::Value;
use sqlx::AssertSqlSafe;

use crate::Store;
use crate::sql;

/// The generic plan of `sql`, prepared with parameters of `types` and run with `args`.
async fn generic_plan(c: &mut sqlx::PgConnection, sql: &str, types: &str, args: &str) -> Value {
    sqlx::raw_sql(AssertSqlSafe(format!("PREPARE probe ({types}) AS {sql}")))
        .execute(&mut *c)
        .await
        .unwrap();
    let plan: Value = sqlx::query_scalar(AssertSqlSafe(format!("EXPLAIN (FORMAT JSON) EXECUTE probe ({args})")))
        .fetch_one(&mut *c)
        .await
        .unwrap();
    sqlx::raw_sql("DEALLOCATE probe").execute(&mut *c).await.unwrap();
    plan
}

/// The plan nodes that read `tasks` without an index condition.
fn whole_table_reads(node: &Value, out: &mut Vec<String>) {
    if node["Relation Name"] == "tasks" {
        let kind = node["Node Type"].as_str().unwrap_or_default();
        let conditioned = node.get("Index Cond").is_some() || kind == "Bitmap Heap Scan";
        if !conditioned {
            out.push(kind.to_string());
        }
    }
    for child in node["Plans"].as_array().into_iter().flatten() {
        whole_table_reads(child, out);
    }
}

/// A round's task reads, and the inbox's and the sweep's selections.
#[tokio::test]
async fn task_reads_of_a_round_the_inbox_and_the_sweep_use_an_index() {
    let Some(ts) = crate::testing::postgres().await else {
        return;
    };
    let Store::Postgres(s) = &ts.store else { unreachable!() };
    let mut c = s.pool().acquire().await.unwrap();
    sqlx::raw_sql("SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan")
        .execute(&mut *c)
        .await
        .unwrap();
    // `USED_TASK_KEYS`: the run, then its key slots.
    let used_key_types = format!("bigint{}", ", text".repeat(sql::KEY_PROBE_SLOTS));
    let used_key_args: String = std::iter::once("1".to_string())
        .chain((0..sql::KEY_PROBE_SLOTS).map(|i| format!("'k{i}'")))
        .collect::<Vec<_>>()
        .join(", ");
    for (name, sql, types, args) in [
        ("TASK_NEIGHBOURHOOD", sql::TASK_NEIGHBOURHOOD, "bigint, bigint", "1, 1"),
        ("TASK_AND_DEPS", sql::TASK_AND_DEPS, "bigint", "1"),
        (
            "EDGES_INTO_UNLESS_AWAITING",
            sql::EDGES_INTO_UNLESS_AWAITING,
            "bigint, bigint",
            "1, 1",
        ),
        ("TASK_BY_ID", sql::TASK_BY_ID, "bigint", "1"),
        ("ROUND_FOR_REPLY", sql::ROUND_FOR_REPLY, "bigint", "1"),
        ("TASK_BY_KEY", sql::TASK_BY_KEY, "bigint, text", "1, 'k'"),
        (
            "TASK_BY_RUN_PUBLIC_ID_AND_KEY_PG",
            sql::TASK_BY_RUN_PUBLIC_ID_AND_KEY_PG,
            "uuid, text",
            "'00000000-0000-7000-8000-000000000000', 'k'",
        ),
        ("TASKS_DECLARED_BY", sql::TASKS_DECLARED_BY, "bigint, bigint", "1, 1"),
        ("TASK_FROZEN_HEAD_PG", sql::TASK_FROZEN_HEAD_PG, "bigint", "1"),
        ("TASK_KEYS_OF_RUN", sql::TASK_KEYS_OF_RUN, "bigint", "1"),
        (
            "USED_TASK_KEYS",
            sql::USED_TASK_KEYS,
            used_key_types.as_str(),
            used_key_args.as_str(),
        ),
        ("INBOX_PAGE", sql::INBOX_PAGE, "bigint, bigint, bigint", "1, 0, 50"),
        (
            "EXPIRED_PARKS_PG",
            sql::EXPIRED_PARKS_PG,
            "bigint, bigint, bigint",
            "1, 0, 50",
        ),
    ] {
        let plan = generic_plan(&mut c, sql, types, args).await;
        let mut whole = Vec::new();
        whole_table_reads(&plan[0]["Plan"], &mut whole);
        assert!(whole.is_empty(), "{name} reads every task ({whole:?}):\n{plan:#}");
    }
}
