//! What one store round trip costs, on each engine: a single-row read through the pool, and a
//! small unit of work (begin, one insert, commit). The inbox and round benchmarks are
//! sequences of these, so this is their floor on this machine. Sequential (one caller), so
//! the figure is latency, not contention.
//!
//! `cargo bench -p nexus-store --bench statements`
//! `NEXUS_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench -p nexus-store --bench statements`

use std::time::{Duration, Instant};

use nexus_store::prelude::*;
use nexus_store::testing::{self, TestStore};
use uuid::Uuid;

const N: usize = 2_000;

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn report(engine: &str, what: &str, mut d: Vec<Duration>) {
    d.sort();
    println!(
        "{engine:<10} {what:<34} p50 {:>7.1} µs  p99 {:>7.1} µs  (n = {})",
        pct(&d, 0.5),
        pct(&d, 0.99),
        d.len()
    );
}

async fn bench(ts: TestStore) {
    let s = &ts.store;
    let account = s.ensure_account(Uuid::now_v7(), "bench", 0).await.expect("account");
    let mut reads = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        let found = s.account_by_id(account.id).await.expect("read");
        reads.push(t.elapsed());
        assert!(found.is_some());
    }
    report(ts.dialect, "read one row (pool)", reads);
    let mut units = Vec::with_capacity(N);
    for i in 0..N {
        let t = Instant::now();
        let mut tx = s.begin().await.expect("begin");
        tx.insert_blob(&format!("bench-{i}"), 1, 0).await.expect("insert");
        tx.commit().await.expect("commit");
        units.push(t.elapsed());
    }
    report(ts.dialect, "unit of work: begin, insert, commit", units);
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("store round trips; load average before: {}", load_average());
    rt.block_on(async {
        bench(testing::sqlite().await).await;
        match testing::postgres().await {
            Some(ts) => bench(ts).await,
            None => println!("postgresql skipped: NEXUS_TEST_DATABASE_URL is not set"),
        }
    });
    println!("load average after: {}", load_average());
}
