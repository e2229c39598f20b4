//! The statements a unit of work sends in a simple query (its opening, its buffered writes, its
//! `COMMIT`), prepared once per connection and then run with `EXECUTE`.
//!
//! A simple query carries no parameters, so these statements used to go out with their values
//! inlined as literals: every one was parsed, analyzed and planned again on every execution. On a
//! 2-core machine that planning was nearly a quarter of the server's CPU per settled inbox task
//! (≈ 90 µs for a lookup by primary key on `tasks`, whose partial indexes the planner weighs each
//! time: docs/decisions/133-postgres-prepared-unit-statements.md). Now each statement keeps its
//! `$1`, `$2`, … parameters as a template; the first time a connection sends a template it goes out
//! as `PREPARE nx_<id> AS <template>` at the head of the same simple query, and every time as
//! `EXECUTE nx_<id>(<literals>)`, so the server plans it once per connection (a generic plan, as
//! for the statements sqlx prepares) and still in one round trip.
//!
//! - Templates are numbered per process ([`Registry`]); a connection remembers which it has
//!   prepared ([`PreparedSet`]). A prepared statement outlives the transaction it was made in
//!   (`PREPARE` is not rolled back), so the set stays true across rollbacks.
//! - A simple query that carried a `PREPARE` and did not answer leaves the connection's set in
//!   doubt (a failure may have come before the `PREPARE` ran, and a future dropped before the
//!   query went out sent nothing): that connection is closed rather than kept (`conns.rs`).
//! - Past [`TEMPLATES_MAX`] distinct templates in a process (never in the kernel's own paths),
//!   a statement goes out with its values inlined, as before.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The most templates a process numbers; later ones are sent with their values inlined.
pub(crate) const TEMPLATES_MAX: usize = 512;

/// One statement of a simple query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stmt {
    /// A template with parameters `$1`, `$2`, … and their values as SQL literals (integers,
    /// `NULL`, `TRUE` / `FALSE`, or escape strings from `push_literal`).
    Template {
        text: Cow<'static, str>,
        literals: Vec<String>,
    },
    /// A statement sent as it is.
    Text(String),
}

/// A value as the SQL literal a template's `EXECUTE` carries ([`Stmt::Template`]): an integer,
/// `TRUE` / `FALSE`, `NULL`, or an escape string (`push_literal`; the caller has refused
/// U+0000 with the text guard).
pub(crate) trait Literal {
    fn literal(&self) -> String;
}

impl Literal for i64 {
    fn literal(&self) -> String {
        self.to_string()
    }
}

impl Literal for bool {
    fn literal(&self) -> String {
        (if *self { "TRUE" } else { "FALSE" }).to_string()
    }
}

impl Literal for str {
    fn literal(&self) -> String {
        let mut out = String::with_capacity(self.len() + 3);
        super::push_literal(&mut out, self);
        out
    }
}

impl Literal for String {
    fn literal(&self) -> String {
        self.as_str().literal()
    }
}

impl<T: Literal + ?Sized> Literal for &T {
    fn literal(&self) -> String {
        (**self).literal()
    }
}

impl Literal for [u8] {
    /// `bytea`'s hex input, in an escape string.
    fn literal(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(2 * self.len() + 7);
        out.push_str("E'\\\\x");
        for b in self {
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
        out.push('\'');
        out
    }
}

impl<T: Literal> Literal for Option<T> {
    fn literal(&self) -> String {
        match self {
            Some(v) => v.literal(),
            None => "NULL".to_string(),
        }
    }
}

impl Stmt {
    pub(crate) fn new(text: impl Into<Cow<'static, str>>, literals: Vec<String>) -> Self {
        Stmt::Template {
            text: text.into(),
            literals,
        }
    }

    /// The statement with its values inlined (what a connection without the template runs).
    pub(crate) fn inlined(&self) -> String {
        match self {
            Stmt::Template { text, literals } => {
                let refs: Vec<&str> = literals.iter().map(String::as_str).collect();
                super::inline_params(text, &refs)
            }
            Stmt::Text(text) => text.clone(),
        }
    }
}

/// The process's templates, numbered in the order first sent.
#[derive(Default)]
struct Registry {
    ids: HashMap<Box<str>, u32>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

/// `text`'s number (`None`: the registry is full).
fn template_id(text: &str) -> Option<u32> {
    let mut registry = registry().lock().expect("template registry");
    if let Some(&id) = registry.ids.get(text) {
        return Some(id);
    }
    if registry.ids.len() >= TEMPLATES_MAX {
        return None;
    }
    let id = registry.ids.len() as u32;
    registry.ids.insert(text.into(), id);
    Some(id)
}

/// The templates one connection has prepared.
#[derive(Debug, Default, Clone)]
pub(crate) struct PreparedSet {
    bits: Vec<u64>,
}

impl PreparedSet {
    fn has(&self, id: u32) -> bool {
        self.bits
            .get(id as usize / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    fn add(&mut self, id: u32) {
        let word = id as usize / 64;
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        self.bits[word] |= 1 << (id % 64);
    }
}

/// A simple query's text, and how many `PREPARE`s lead it (each answers a result set of its
/// own, before the statements').
#[derive(Debug)]
pub(crate) struct Rendered {
    pub text: String,
    pub prepares: usize,
}

/// The simple query running `stmts` in order on a connection that has prepared `set`, led by
/// `head` (`BEGIN`, or nothing) and followed by `tail` (`COMMIT`, or nothing). The templates
/// it prepares are added to `set`; the caller closes the connection if the query then fails.
pub(crate) fn render(stmts: &[Stmt], set: &mut PreparedSet, head: Option<&str>, tail: Option<&str>) -> Rendered {
    let mut prepare = String::new();
    let mut body = String::new();
    let mut prepares = 0;
    let push = |body: &mut String, piece: &str| {
        if !body.is_empty() {
            body.push_str("; ");
        }
        body.push_str(piece);
    };
    if let Some(head) = head {
        push(&mut body, head);
    }
    for stmt in stmts {
        let Stmt::Template { text, literals } = stmt else {
            push(&mut body, &stmt.inlined());
            continue;
        };
        let Some(id) = template_id(text) else {
            push(&mut body, &stmt.inlined());
            continue;
        };
        if !set.has(id) {
            set.add(id);
            prepares += 1;
            prepare.push_str(&format!("PREPARE nx_{id} AS {text}; "));
        }
        let mut execute = format!("EXECUTE nx_{id}");
        if !literals.is_empty() {
            execute.push('(');
            execute.push_str(&literals.join(", "));
            execute.push(')');
        }
        push(&mut body, &execute);
    }
    if let Some(tail) = tail {
        push(&mut body, tail);
    }
    prepare.push_str(&body);
    Rendered {
        text: prepare,
        prepares,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_is_prepared_once_per_connection_then_executed() {
        let stmt = Stmt::new(
            "SELECT a FROM t_prepared_test WHERE id = $1 AND b = $2",
            vec!["7".into(), "E'x'".into()],
        );
        let mut set = PreparedSet::default();
        let first = render(std::slice::from_ref(&stmt), &mut set, Some("BEGIN"), None);
        let id = template_id("SELECT a FROM t_prepared_test WHERE id = $1 AND b = $2").unwrap();
        assert_eq!(first.prepares, 1);
        assert_eq!(
            first.text,
            format!(
                "PREPARE nx_{id} AS SELECT a FROM t_prepared_test WHERE id = $1 AND b = $2; BEGIN; EXECUTE nx_{id}(7, E'x')"
            )
        );
        let again = render(
            &[stmt.clone(), Stmt::Text("SELECT 1".into())],
            &mut set,
            None,
            Some("COMMIT"),
        );
        assert_eq!(again.prepares, 0);
        assert_eq!(again.text, format!("EXECUTE nx_{id}(7, E'x'); SELECT 1; COMMIT"));
        // Another connection prepares it for itself.
        let other = render(&[stmt], &mut PreparedSet::default(), None, None);
        assert_eq!(other.prepares, 1);
    }

    #[test]
    fn a_template_without_parameters_executes_bare() {
        let mut set = PreparedSet::default();
        let r = render(
            &[Stmt::new("SELECT 2 AS t_prepared_bare", vec![])],
            &mut set,
            None,
            None,
        );
        let id = template_id("SELECT 2 AS t_prepared_bare").unwrap();
        assert_eq!(
            r.text,
            format!("PREPARE nx_{id} AS SELECT 2 AS t_prepared_bare; EXECUTE nx_{id}")
        );
    }

    #[test]
    fn the_set_holds_ids_past_one_word() {
        let mut set = PreparedSet::default();
        for id in [0, 63, 64, 200] {
            assert!(!set.has(id));
            set.add(id);
            assert!(set.has(id));
        }
        assert!(!set.has(1) && !set.has(65));
    }

    /// The connection's backend process id, on a fresh unit.
    async fn backend(pool: &super::super::Conns) -> i32 {
        let mut tx = super::super::Transaction::lazy(pool.acquire().await.unwrap());
        let rows = tx
            .begin_with(&Stmt::Text("SELECT CAST(pg_backend_pid() AS TEXT) AS pid".into()))
            .await
            .unwrap();
        let pid: i32 = sqlx::Row::try_get::<String, _>(&rows[0], "pid")
            .unwrap()
            .parse()
            .unwrap();
        tx.commit().await.unwrap();
        pid
    }

    /// A failed query that carried a `PREPARE` closes its connection (a later template of it
    /// may never have been prepared); one that carried none keeps it.
    #[tokio::test]
    async fn a_failed_query_that_prepared_closes_its_connection() {
        let Some(ts) = crate::testing::postgres().await else {
            return;
        };
        let crate::Store::Postgres(s) = &ts.store else {
            unreachable!()
        };
        let pool = &s.pool;
        let good = Stmt::new("SELECT CAST(CAST($1 AS BIGINT) + 1 AS TEXT) AS n", vec!["41".into()]);
        let fails = |stmts: Vec<Stmt>| async move {
            let mut tx = super::super::Transaction::lazy(pool.acquire().await.unwrap());
            assert!(tx.begin_with_sets(&stmts).await.is_err());
            drop(tx);
            // The rollback of a dropped unit runs on a spawned task.
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        };

        let first = backend(pool).await;
        fails(vec![Stmt::Text("SELECT 1 / 0".into())]).await;
        assert_eq!(
            backend(pool).await,
            first,
            "a failure without a PREPARE keeps the connection"
        );

        // The first PREPARE fails, so `good`'s never runs.
        let missing = Stmt::new("SELECT n FROM t_no_such_table WHERE n = $1", vec!["1".into()]);
        fails(vec![missing, good.clone()]).await;
        let next = backend(pool).await;
        assert_ne!(next, first, "the connection in doubt was closed");
        let mut tx = super::super::Transaction::lazy(pool.acquire().await.unwrap());
        let rows = tx.begin_with(&good).await.unwrap();
        assert_eq!(sqlx::Row::try_get::<String, _>(&rows[0], "n").unwrap(), "42");
        tx.rollback().await.unwrap();
        // Prepared statements outlive a rollback: the same connection executes it again.
        let mut tx = super::super::Transaction::lazy(pool.acquire().await.unwrap());
        let rows = tx.begin_with(&good).await.unwrap();
        assert_eq!(sqlx::Row::try_get::<String, _>(&rows[0], "n").unwrap(), "42");
        tx.commit().await.unwrap();
    }
}
