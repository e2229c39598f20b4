//! The driver's own tests: binding, naming, decoding, recompiles, error classes.

use super::*;

fn conn() -> Connection {
    let c = Connection::open_in_memory().unwrap();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT NOT NULL, b INTEGER, c BLOB)")
        .unwrap();
    c
}

fn block<T>(f: Ready<T>) -> T {
    f.into_inner()
}

/// The names cache files a text under its address: a different text at the same address
/// and length (a dynamic text reusing a freed buffer) is named afresh, not served the
/// earlier text's names.
#[test]
fn a_text_at_a_reused_address_is_named_afresh() {
    let mut c = conn();
    let mut text = String::from("SELECT 1 AS left_, 2 AS right");
    let address = text.as_ptr();
    let r = block(query(&text).fetch_one(&mut c)).unwrap();
    assert_eq!(r.names.iter().map(|n| &**n).collect::<Vec<_>>(), ["left_", "right"]);
    text.replace_range(12..17, "first");
    assert_eq!(text.as_ptr(), address, "the same buffer");
    let r = block(query(&text).fetch_one(&mut c)).unwrap();
    assert_eq!(r.names.iter().map(|n| &**n).collect::<Vec<_>>(), ["first", "right"]);
    let r = block(query(&text).fetch_one(&mut c)).unwrap();
    assert_eq!(r.names.iter().map(|n| &**n).collect::<Vec<_>>(), ["first", "right"]);
}

/// The parameter order a text binds by is remembered per text, like its names: the same
/// text binds each execution's own arguments, and a different text at the same address
/// and length (a reused buffer) is worked out afresh.
#[test]
fn remembered_bind_slots_follow_the_text() {
    let mut c = conn();
    let mut text = String::from("SELECT $2 AS x, $1 AS y");
    let address = text.as_ptr();
    let read = |c: &mut Connection, text: &str, a: i64, b: i64| {
        let r = block(query(text).bind(a).bind(b).fetch_one(c)).unwrap();
        (r.int("x").unwrap(), r.int("y").unwrap())
    };
    assert_eq!(read(&mut c, &text, 1, 2), (2, 1));
    assert_eq!(read(&mut c, &text, 3, 4), (4, 3), "the same text, other arguments");
    text.replace_range(7..9, "$1");
    text.replace_range(16..18, "$2");
    assert_eq!(text.as_ptr(), address, "the same buffer");
    assert_eq!(text, "SELECT $1 AS x, $2 AS y");
    assert_eq!(read(&mut c, &text, 1, 2), (1, 2));
}

#[test]
fn placeholders_bind_by_number_not_position() {
    let mut c = conn();
    // `$2` appears first: SQLite numbers it 1, the driver still gives it the 2nd argument.
    let done = block(
        query("INSERT INTO t (b, a) VALUES ($2, $1)")
            .bind("text")
            .bind(7_i64)
            .execute(&mut c),
    )
    .unwrap();
    assert_eq!(done.rows_affected(), 1);
    let r = block(
        query("SELECT a, b FROM t WHERE b = $1 AND a = $1 || ''")
            .bind(7_i64)
            .fetch_optional(&mut c),
    );
    assert!(r.unwrap().is_none(), "a repeated $1 is one value");
    let r = block(query("SELECT a, b FROM t WHERE b = $1").bind(7_i64).fetch_one(&mut c)).unwrap();
    assert_eq!(r.text("a").unwrap(), "text");
    assert_eq!(r.int("b").unwrap(), 7);
}

#[test]
fn a_cast_limit_never_recompiles_and_a_bare_one_does() {
    let mut c = conn();
    let run = |c: &mut Connection, sql: &str| {
        for n in 1..=5_i64 {
            block(query(sql).bind(n).fetch_all(c)).unwrap();
        }
        c.prepare_cached(sql)
            .unwrap()
            .get_status(rusqlite::StatementStatus::RePrepare)
    };
    assert_eq!(run(&mut c, "SELECT id FROM t ORDER BY id LIMIT CAST($1 AS BIGINT)"), 0);
    // The reason for the rule (and for the debug check, which this bypasses).
    let mut stmt = c.prepare_cached("SELECT id FROM t ORDER BY id LIMIT $1").unwrap();
    for n in 1..=5_i64 {
        stmt.raw_bind_parameter(1, n).unwrap();
        let mut rows = stmt.raw_query();
        while rows.next().unwrap().is_some() {}
    }
    assert!(stmt.get_status(rusqlite::StatementStatus::RePrepare) >= 4);
}

#[test]
fn rows_decode_by_name_and_type() {
    let mut c = conn();
    block(
        query("INSERT INTO t (a, b, c) VALUES ($1, $2, $3)")
            .bind("x")
            .bind(None::<i64>)
            .bind(vec![1_u8, 2])
            .execute(&mut c),
    )
    .unwrap();
    let r = block(query("SELECT * FROM t").fetch_one(&mut c)).unwrap();
    assert_eq!(r.opt_int("b").unwrap(), None);
    assert_eq!(r.bytes("c").unwrap(), vec![1, 2]);
    assert!(
        matches!(r.int("b"), Err(StoreError::Corrupt(_))),
        "NULL is not an integer"
    );
    assert!(matches!(r.int("nope"), Err(StoreError::Corrupt(_))));
    assert!(
        matches!(r.int("a"), Err(StoreError::Corrupt(_))),
        "TEXT is not an integer"
    );
}

#[test]
fn cached_column_names_follow_a_schema_change() {
    let mut c = conn();
    block(query("INSERT INTO t (a) VALUES ($1)").bind("x").execute(&mut c)).unwrap();
    let r = block(query("SELECT * FROM t").fetch_one(&mut c)).unwrap();
    assert!(matches!(r.text("d"), Err(StoreError::Corrupt(_))));
    c.execute_batch("ALTER TABLE t ADD COLUMN d TEXT NOT NULL DEFAULT 'new'")
        .unwrap();
    let r = block(query("SELECT * FROM t").fetch_one(&mut c)).unwrap();
    assert_eq!(r.text("d").unwrap(), "new");
    assert_eq!(r.text("a").unwrap(), "x");
}

/// Names are remembered per statement text, except where the text takes its columns from
/// the schema (`*`): a rename keeps the column count, and the row still carries the new name.
#[test]
fn remembered_names_never_outlive_a_schema_change() {
    let mut c = conn();
    block(
        query("INSERT INTO t (a, b) VALUES ($1, $2)")
            .bind("x")
            .bind(1_i64)
            .execute(&mut c),
    )
    .unwrap();
    for _ in 0..2 {
        let r = block(query("SELECT a, b AS n FROM t").fetch_one(&mut c)).unwrap();
        assert_eq!((r.text("a").unwrap(), r.int("n").unwrap()), ("x".into(), 1));
    }
    let r = block(query("SELECT * FROM t").fetch_one(&mut c)).unwrap();
    assert_eq!(r.int("b").unwrap(), 1);
    c.execute_batch("ALTER TABLE t RENAME COLUMN b TO bb").unwrap();
    let r = block(query("SELECT * FROM t").fetch_one(&mut c)).unwrap();
    assert_eq!(r.int("bb").unwrap(), 1);
    assert!(matches!(r.int("b"), Err(StoreError::Corrupt(_))));
}

#[test]
fn fetch_one_without_a_row_is_an_error_and_scalars_read_the_first_column() {
    let mut c = conn();
    let e = block(query("SELECT * FROM t").fetch_one(&mut c)).unwrap_err();
    assert!(matches!(e, rusqlite::Error::QueryReturnedNoRows));
    for a in ["p", "q", "r"] {
        block(query("INSERT INTO t (a) VALUES ($1)").bind(a).execute(&mut c)).unwrap();
    }
    let all: Vec<String> = block(query_scalar("SELECT a FROM t ORDER BY a DESC").fetch_all(&mut c)).unwrap();
    assert_eq!(all, ["r", "q", "p"]);
    let one: Option<i64> = block(
        query_scalar("SELECT id FROM t WHERE a = $1")
            .bind("q")
            .fetch_optional(&mut c),
    )
    .unwrap();
    assert_eq!(one, Some(2));
    let changed = block(query("UPDATE t SET b = 1 WHERE a <> $1").bind("p").execute(&mut c)).unwrap();
    assert_eq!(changed.rows_affected(), 2);
}

#[test]
fn too_few_arguments_and_foreign_placeholders_are_errors_not_nulls() {
    let mut c = conn();
    let e = block(query("INSERT INTO t (a, b) VALUES ($1, $2)").bind("x").execute(&mut c)).unwrap_err();
    assert!(matches!(e, rusqlite::Error::InvalidParameterCount(1, 2)), "{e:?}");
    let e = block(query("SELECT * FROM t WHERE a = :name").bind("x").fetch_all(&mut c)).unwrap_err();
    assert!(matches!(e, rusqlite::Error::InvalidParameterName(_)), "{e:?}");
}

#[test]
fn constraint_failures_are_classified() {
    let mut c = conn();
    c.execute_batch(
        "PRAGMA foreign_keys = ON; CREATE TABLE u (k TEXT UNIQUE); \
         CREATE TABLE f (t_id INTEGER REFERENCES t (id));",
    )
    .unwrap();
    block(query("INSERT INTO u (k) VALUES ($1)").bind("k").execute(&mut c)).unwrap();
    let e = block(query("INSERT INTO u (k) VALUES ($1)").bind("k").execute(&mut c)).unwrap_err();
    assert!(is_unique_violation(&e) && !is_foreign_key_violation(&e));
    assert!(message(&e).contains("UNIQUE constraint failed: u.k"), "{}", message(&e));
    let e = block(query("INSERT INTO f (t_id) VALUES ($1)").bind(99_i64).execute(&mut c)).unwrap_err();
    assert!(is_foreign_key_violation(&e) && !is_unique_violation(&e));
}
