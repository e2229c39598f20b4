-- 0019 turn search (PostgreSQL dialect). Keep in step with migrations/sqlite/0019_turn_search.sql.
--
-- The full-text index of conversation history (kernel-tools.md §10, issue 25): turn text
-- (`turns.content`, a user turn's input or an assistant turn's reply) and conversation titles.
-- Each dialect keeps its own machinery under the same names, `turns_fts` and
-- `conversations_fts`; the parity test checks that both names exist in both dialects and
-- compares nothing inside them (tests/parity.rs).
--
-- `nexus_fts_document` is the one tsvector of a field: its first 65,536 characters
-- (`ops/history.rs`, `INDEXED_CHARS`; it also keeps a vector well under tsvector's 1 MB limit),
-- the 32 ASCII punctuation characters turned into spaces, then the `simple` configuration (the
-- default parser, lowercased, no stemming, no stop words). Turning punctuation into spaces makes
-- words the runs of letters and digits, as SQLite's `unicode61` tokenizer has them: without it
-- the parser would keep `deploy.sh`, `a@b.com` or `/usr/bin` whole.
--
-- `turns_fts` is a narrow side table rather than a column of `turns`: a search reads one row
-- per candidate to filter and order them, and these rows are a fraction of a turn's. It also
-- carries what the search filters on (the conversation's workspace, whether it is a child,
-- whether it is archived), so the candidates come from this one table: with a join to
-- `conversations`, a stale row estimate can make the planner scan the index once per
-- conversation. Triggers keep it in step with every insert, update of the text and delete of a
-- turn, and with a conversation's archive mark. The GIN indexes are built with
-- `fastupdate = off`, so a search never scans a pending list (a turn insert updates the index
-- at once instead). Titles are few and short: an expression index over `conversations` serves
-- them.

CREATE FUNCTION nexus_fts_document(text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT to_tsvector('simple'::regconfig, translate(left(coalesce($1, ''), 65536),
        '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~', '                                ')) $$;

CREATE TABLE turns_fts (
    turn_id BIGINT PRIMARY KEY,
    conversation_id BIGINT NOT NULL,
    workspace_id BIGINT NOT NULL,
    child BOOLEAN NOT NULL,
    archived BOOLEAN NOT NULL,
    document tsvector NOT NULL
);

INSERT INTO turns_fts (turn_id, conversation_id, workspace_id, child, archived, document)
    SELECT t.id, t.conversation_id, c.workspace_id, c.parent_id IS NOT NULL, c.archived_at IS NOT NULL,
        nexus_fts_document(t.content)
    FROM turns t JOIN conversations c ON c.id = t.conversation_id;

CREATE INDEX turns_fts_document ON turns_fts USING gin (document) WITH (fastupdate = off);

CREATE INDEX turns_fts_conversation ON turns_fts (conversation_id);

CREATE INDEX conversations_fts ON conversations USING gin (nexus_fts_document(title)) WITH (fastupdate = off);

CREATE FUNCTION turns_fts_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM turns_fts WHERE turn_id = OLD.id;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO turns_fts (turn_id, conversation_id, workspace_id, child, archived, document)
            SELECT NEW.id, NEW.conversation_id, c.workspace_id, c.parent_id IS NOT NULL, c.archived_at IS NOT NULL,
                nexus_fts_document(NEW.content)
            FROM conversations c WHERE c.id = NEW.conversation_id;
    ELSE
        UPDATE turns_fts SET document = nexus_fts_document(NEW.content) WHERE turn_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER turns_fts_sync AFTER INSERT OR DELETE OR UPDATE OF content ON turns
    FOR EACH ROW EXECUTE FUNCTION turns_fts_sync();

CREATE FUNCTION turns_fts_conversation_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE turns_fts SET workspace_id = NEW.workspace_id, child = NEW.parent_id IS NOT NULL,
        archived = NEW.archived_at IS NOT NULL
    WHERE conversation_id = NEW.id AND (workspace_id <> NEW.workspace_id
        OR child <> (NEW.parent_id IS NOT NULL) OR archived <> (NEW.archived_at IS NOT NULL));
    RETURN NULL;
END
$$;

CREATE TRIGGER turns_fts_conversation_sync AFTER UPDATE OF archived_at, parent_id, workspace_id ON conversations
    FOR EACH ROW EXECUTE FUNCTION turns_fts_conversation_sync();
