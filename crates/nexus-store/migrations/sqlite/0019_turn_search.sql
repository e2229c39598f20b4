-- 0019 turn search (SQLite dialect). Keep in step with migrations/postgres/0019_turn_search.sql.
--
-- The full-text index of conversation history (kernel-tools.md §10, issue 25): turn text
-- (`turns.content`, a user turn's input or an assistant turn's reply) and conversation titles.
-- Each dialect keeps its own machinery under the same names, `turns_fts` and
-- `conversations_fts`; the parity test checks that both names exist in both dialects and
-- compares nothing inside them (tests/parity.rs).
--
-- Here they are contentless FTS5 tables (`content = ''`, rows deletable), keyed by the turn's or
-- the conversation's id as rowid, holding the first 65,536 characters of the field
-- (`ops/history.rs`, `INDEXED_CHARS`), tokenized by `unicode61` without removing diacritics
-- (words are runs of letters and digits, case folded), which is what the PostgreSQL dialect's
-- `simple` configuration over ASCII-punctuation-as-space text yields. Triggers keep them in
-- step with every insert, update of the text and delete; bm25() ranks from the tables' own
-- statistics, so nothing is read back from `turns` to rank.

CREATE VIRTUAL TABLE turns_fts USING fts5 (
    content,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

CREATE VIRTUAL TABLE conversations_fts USING fts5 (
    title,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

INSERT INTO turns_fts (rowid, content) SELECT id, substr(content, 1, 65536) FROM turns;
INSERT INTO conversations_fts (rowid, title) SELECT id, substr(title, 1, 65536) FROM conversations;

CREATE TRIGGER turns_fts_insert AFTER INSERT ON turns BEGIN
    INSERT INTO turns_fts (rowid, content) VALUES (new.id, substr(new.content, 1, 65536));
END;

CREATE TRIGGER turns_fts_update AFTER UPDATE OF content ON turns BEGIN
    DELETE FROM turns_fts WHERE rowid = old.id;
    INSERT INTO turns_fts (rowid, content) VALUES (new.id, substr(new.content, 1, 65536));
END;

CREATE TRIGGER turns_fts_delete AFTER DELETE ON turns BEGIN
    DELETE FROM turns_fts WHERE rowid = old.id;
END;

CREATE TRIGGER conversations_fts_insert AFTER INSERT ON conversations BEGIN
    INSERT INTO conversations_fts (rowid, title) VALUES (new.id, substr(new.title, 1, 65536));
END;

CREATE TRIGGER conversations_fts_update AFTER UPDATE OF title ON conversations BEGIN
    DELETE FROM conversations_fts WHERE rowid = old.id;
    INSERT INTO conversations_fts (rowid, title) VALUES (new.id, substr(new.title, 1, 65536));
END;

CREATE TRIGGER conversations_fts_delete AFTER DELETE ON conversations BEGIN
    DELETE FROM conversations_fts WHERE rowid = old.id;
END;
