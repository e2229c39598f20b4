//! The history search (`session_search`, kernel-tools.md §10) at the store, over 100,000 stored
//! turns: p50 / p99 of one search, with the kernel's parameters (`nexus_core::bounds`: limit
//! 20, the newest `HISTORY_SEARCH_CANDIDATES` matches of each source ranked, each hit's text up
//! to the indexed characters). The issue's
//! target: p99 ≤ 10 ms on each engine.
//!
//! The corpus is deterministic: 1,000 conversations of one workspace, 100 turns each (a user
//! turn of 8–40 words, then an assistant turn of 40–250), words drawn from a vocabulary of 3,000
//! made-up words under a Zipf law (the k-th most common word has weight 1/k), in sentences
//! (capitalized, ended by `.`, `,` inside), titles of 3–6 words. Queries are drawn from the same
//! vocabulary by class: `common` words are ranks 20–200 (each in roughly 4–35 % of turns),
//! `rare` ranks 1,500–3,000 (under 1 %); `very common` (ranks 0–9, in nearly every turn) is
//! measured apart, beside the mix.
//!
//! `cargo bench -p nexus-store --bench history_search`
//! `NEXUS_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench -p nexus-store --bench history_search`
//! (`HISTORY_BENCH_SKIP_SQLITE=1` measures PostgreSQL alone; `HISTORY_BENCH_HOLD=1` keeps the
//! seeded PostgreSQL schema for an hour after measuring, for `EXPLAIN` by hand;
//! `HISTORY_BENCH_SEEDED_URL=postgres://…?schema=<held schema>` measures that store again
//! without seeding, so two builds can alternate over the same rows.) PostgreSQL's tables are
//! `ANALYZE`d after the load, as autovacuum would have them on a live store.

use std::time::{Duration, Instant};

use nexus_core::bounds;
use nexus_store::testing::{self, TestStore};
use nexus_store::*;
use uuid::Uuid;

const CONVERSATIONS: usize = 1_000;
const TURNS_PER_CONVERSATION: usize = 100;
const VOCABULARY: usize = 3_000;
const QUERIES_PER_CLASS: usize = 400;
const NOW: i64 = 1_700_000_000_000;

/// splitmix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "zen", "dor", "pel", "qua", "bri", "sto", "fan", "gul", "hex",
    "jor", "mek", "nox", "tri", "wen", "yal", "ost",
];

struct Corpus {
    words: Vec<String>,
    /// Cumulative Zipf weights.
    cumulative: Vec<f64>,
}

impl Corpus {
    fn new() -> Corpus {
        let mut rng = Rng(7);
        let mut words = Vec::with_capacity(VOCABULARY);
        let mut seen = std::collections::HashSet::new();
        while words.len() < VOCABULARY {
            let n = rng.range(1, 4);
            let w: String = (0..n).map(|_| SYLLABLES[rng.below(SYLLABLES.len())]).collect();
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut total = 0.0;
        let cumulative = (0..VOCABULARY)
            .map(|k| {
                total += 1.0 / (k + 1) as f64;
                total
            })
            .collect();
        Corpus { words, cumulative }
    }

    fn word(&self, rng: &mut Rng) -> &str {
        let target = rng.unit() * self.cumulative[VOCABULARY - 1];
        let k = self.cumulative.partition_point(|c| *c < target).min(VOCABULARY - 1);
        &self.words[k]
    }

    /// `n` words in sentences of 4–16 words.
    fn text(&self, rng: &mut Rng, n: usize) -> String {
        let mut out = String::new();
        let mut left_in_sentence = 0;
        for i in 0..n {
            let w = self.word(rng);
            if left_in_sentence == 0 {
                if i > 0 {
                    out.push_str(". ");
                }
                left_in_sentence = rng.range(4, 16);
                let mut chars = w.chars();
                if let Some(first) = chars.next() {
                    out.extend(first.to_uppercase());
                    out.push_str(chars.as_str());
                }
            } else {
                out.push_str(if rng.below(8) == 0 { ", " } else { " " });
                out.push_str(w);
            }
            left_in_sentence -= 1;
        }
        out.push('.');
        out
    }
}

async fn seed(ts: &TestStore, corpus: &Corpus) -> i64 {
    let s = &ts.store;
    let (_, ws, member) = testing::seed_member(s, NOW).await;
    let mut rng = Rng(11);
    let started = Instant::now();
    for c in 0..CONVERSATIONS {
        let mut tx = s.begin().await.expect("begin");
        let title_words = rng.range(3, 6);
        let title = corpus.text(&mut rng, title_words);
        let conversation = tx
            .insert_conversation(NewConversation {
                public_id: Uuid::now_v7(),
                workspace_id: ws.id,
                created_by_id: member.id,
                answering_member_id: member.id,
                default_runner_id: None,
                title: Some(title),
                parent_id: None,
                spawn_task_id: None,
                label: None,
                reply_route: None,
                created_at: NOW,
            })
            .await
            .expect("conversation");
        for t in 0..TURNS_PER_CONVERSATION {
            let (role, words) = if t % 2 == 0 {
                (TurnRole::User, rng.range(8, 40))
            } else {
                (TurnRole::Assistant, rng.range(40, 250))
            };
            tx.insert_turn(NewTurn {
                public_id: Uuid::now_v7(),
                conversation_id: conversation.id,
                role,
                status: TurnStatus::Completed,
                input_id: None,
                run_id: None,
                content: Some(corpus.text(&mut rng, words)),
                error_key: None,
                created_at: NOW + t as i64,
            })
            .await
            .expect("turn");
        }
        tx.commit().await.expect("commit");
        if (c + 1) % 200 == 0 {
            println!(
                "{:<10} seeded {} turns in {:.1} s",
                ts.dialect,
                (c + 1) * TURNS_PER_CONVERSATION,
                started.elapsed().as_secs_f64()
            );
        }
    }
    ws.id
}

/// Query classes by vocabulary rank: `c` a common word, `r` a rare one, `v` a very common one.
const CLASSES: [(&str, &str); 6] = [
    ("1 common", "c"),
    ("1 rare", "r"),
    ("2 common", "cc"),
    ("common + rare", "cr"),
    ("3: 2 common + rare", "ccr"),
    ("1 very common", "v"),
];

fn query(corpus: &Corpus, rng: &mut Rng, shape: &str) -> String {
    shape
        .chars()
        .map(|k| {
            let rank = match k {
                'c' => rng.range(20, 200),
                'r' => rng.range(1_500, VOCABULARY - 1),
                _ => rng.range(0, 9),
            };
            corpus.words[rank].clone()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn ms(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

async fn measure(s: &Store, dialect: &str, ws: i64, corpus: &Corpus) {
    let mut rng = Rng(23);
    let mut mix = Vec::new();
    for (name, shape) in CLASSES {
        let queries: Vec<String> = (0..QUERIES_PER_CLASS).map(|_| query(corpus, &mut rng, shape)).collect();
        // Warm up: the first 20 queries of the class, once.
        for q in queries.iter().take(20) {
            let terms = SearchTerm::parse_query(q);
            s.search_history(&search(ws, &terms)).await.expect("search");
        }
        let mut times = Vec::with_capacity(queries.len());
        let mut hits = 0usize;
        for q in &queries {
            let terms = SearchTerm::parse_query(q);
            let t = Instant::now();
            let found = s.search_history(&search(ws, &terms)).await.expect("search");
            times.push(t.elapsed());
            hits += found.len();
        }
        if shape != "v" {
            mix.extend(times.iter().copied());
        }
        times.sort();
        println!(
            "{:<10} {name:<20} p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.2} ms  (n = {}, {:.1} hits a page)",
            dialect,
            ms(&times, 0.5),
            ms(&times, 0.99),
            ms(&times, 1.0),
            times.len(),
            hits as f64 / queries.len() as f64
        );
    }
    mix.sort();
    println!(
        "{:<10} {:<20} p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.2} ms  (n = {}; load {})",
        dialect,
        "MIX (all but very common)",
        ms(&mix, 0.5),
        ms(&mix, 0.99),
        ms(&mix, 1.0),
        mix.len(),
        load_average()
    );
}

fn search(ws: i64, terms: &[SearchTerm]) -> HistorySearch<'_> {
    HistorySearch {
        workspace_id: ws,
        terms,
        archived: ArchivedFilter::Exclude,
        include_children: false,
        after: None,
        limit: bounds::HISTORY_SEARCH_DEFAULT_LIMIT as i64,
        candidates: bounds::HISTORY_SEARCH_CANDIDATES as i64,
        text_chars: HISTORY_INDEXED_CHARS as i64,
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

async fn bench(ts: TestStore, corpus: &Corpus) {
    let ws = seed(&ts, corpus).await;
    // PostgreSQL: the statistics autovacuum keeps on a live store (the tables were empty when
    // last analyzed).
    testing::analyze(&ts.store).await.expect("analyze");
    println!("{:<10} seeded; load {}", ts.dialect, load_average());
    measure(&ts.store, ts.dialect, ws, corpus).await;
    if let Some(schema) = ts
        .schema
        .as_deref()
        .filter(|_| std::env::var_os("HISTORY_BENCH_HOLD").is_some())
    {
        println!("holding schema {schema} (workspace {ws}) for an hour; interrupt to drop it");
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let corpus = Corpus::new();
    println!(
        "history search over {} turns, {} candidates; load average before: {}",
        CONVERSATIONS * TURNS_PER_CONVERSATION,
        bounds::HISTORY_SEARCH_CANDIDATES,
        load_average()
    );
    rt.block_on(async {
        if std::env::var_os("HISTORY_BENCH_SKIP_SQLITE").is_none() {
            bench(testing::sqlite().await, &corpus).await;
        }
        if let Ok(url) = std::env::var("HISTORY_BENCH_SEEDED_URL") {
            // A store this bench seeded and held (`HISTORY_BENCH_HOLD`): measured again as it is.
            let store = Store::open(&StoreOptions::new(url))
                .await
                .expect("open the seeded store");
            measure(&store, "postgres", 1, &corpus).await;
            println!("load average after: {}", load_average());
            return;
        }
        match testing::postgres().await {
            Some(ts) => bench(ts, &corpus).await,
            None => println!("postgresql skipped: NEXUS_TEST_DATABASE_URL is not set"),
        }
    });
    println!("load average after: {}", load_average());
}
