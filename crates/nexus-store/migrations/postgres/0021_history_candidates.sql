-- 0021 history candidates (PostgreSQL dialect). Keep in step with
-- migrations/sqlite/0021_history_candidates.sql (there: nothing to do).
--
-- The history search ranks the newest `k` matching turns of a workspace (ops/history.rs). A
-- one-word query finds them in `turns_fts` by one of three ways, and which is cheapest depends
-- on the share of turns that match, which only the statistics know:
--
-- * the walk: the primary key newest first, each row's vector tested, stopping at `k` matches:
--   about `k / share` rows read, cheap when most turns match;
-- * the bitmap: every match from the GIN index, then each one's row read;
-- * the ranged bitmap: the GIN index's matches intersected with the newest `2k / share` ids
--   (which should hold about twice `k` matches), then only those rows read. Should the range
--   hold fewer than `k` (a high estimate, or a workspace with few of the range's turns), the
--   plain bitmap runs after it.
--
-- `nexus_turn_candidates` takes the share from the planner's estimate (an EXPLAIN of the match
-- alone) and runs the cheapest way by per-row costs measured on the 2-vCPU bench machine (walk
-- 0.4 µs a row; bitmap 0.07 µs a posting decoded and 1.0 µs a match read; 0.06 µs an id of the
-- range), in the query's one round trip. The planner is not left to choose for one word: it
-- costs a walked row far below what reading and testing a vector takes, and for a range of ids
-- it walks the primary key over the range instead of intersecting it with the GIN bitmap (so
-- the bitmaps run with index scans off). Queries of several words keep the planner's own plan:
-- GIN intersects their posting lists skipping through the longer ones, which no per-word
-- estimate prices well, and measured over 25 random pairs of common words the planner's plan
-- was faster than this function's in every one. A never-analyzed table (no row count) gets
-- the planner's plan too. BENCHMARKS.md, "History search", has the measurements.
--
-- `toast_tuple_target`: a vector over ~2 kB (a long reply's) was moved out of line, so the
-- walk fetched it from the TOAST table for every row it tested. Rows up to a page now keep
-- their vector inline; rows written before this migration move when next rewritten
-- (`VACUUM FULL turns_fts` moves them all).

ALTER TABLE turns_fts SET (toast_tuple_target = 8160);

CREATE FUNCTION nexus_turn_candidates(query text, ws bigint, children boolean, archived_mode integer,
    k integer)
    RETURNS TABLE (turn_id bigint, conversation_id bigint)
    LANGUAGE plpgsql VOLATILE
    SET plan_cache_mode = force_custom_plan
    ROWS 500
AS $$
DECLARE
    tq tsquery := to_tsquery('simple', query);
    -- The tsquery is `a & b & …` (ops/history.rs, `SearchTerm::tsquery`): one node per word
    -- and per `&`.
    one_word constant boolean := numnode(tq) = 1;
    -- The newest `k` matches ($5) of the query ($1) under the filters.
    newest_matches constant text := 'SELECT turn_id, conversation_id FROM turns_fts WHERE document @@ $1'
        ' AND workspace_id = $2 AND ($3 OR NOT child)'
        ' AND (($4 = 0 AND NOT archived) OR $4 = 1 OR ($4 = 2 AND archived))';
    index_scans constant text := current_setting('enable_indexscan');
    total double precision;
    plan json;
    share double precision;
    span double precision;
    walk_cost double precision;
    bitmap_cost double precision;
    ranged_cost double precision;
    floor_id bigint := 0;
    found_ids bigint[];
    found_conversations bigint[];
BEGIN
    SELECT c.reltuples INTO total FROM pg_class c WHERE c.oid = 'turns_fts'::regclass;
    IF one_word AND total IS NOT NULL AND total > 0 THEN
        EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM turns_fts WHERE document @@ $1' INTO plan USING tq;
        share := least(1.0, greatest((plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision, 1.0) / total);
        span := 2.0 * k / share;
        walk_cost := k / share * 0.4;
        bitmap_cost := share * total * (0.07 + 1.0);
        ranged_cost := CASE WHEN span < total THEN share * total * 0.07 + span * 0.06 + 2.0 * k
            ELSE bitmap_cost END;
        IF least(bitmap_cost, ranged_cost) < walk_cost THEN
            IF ranged_cost < bitmap_cost THEN
                SELECT coalesce(max(f.turn_id), 0) - ceil(span)::bigint INTO floor_id FROM turns_fts f;
            END IF;
            -- Index scans off: the bitmap, never a walk of the primary key over the range.
            PERFORM set_config('enable_indexscan', 'off', true);
            IF floor_id > 0 THEN
                EXECUTE 'SELECT array_agg(turn_id), array_agg(conversation_id) FROM (' || newest_matches
                    || ' AND turn_id > $6 ORDER BY turn_id DESC LIMIT $5) s'
                    INTO found_ids, found_conversations USING tq, ws, children, archived_mode, k, floor_id;
            END IF;
            IF coalesce(cardinality(found_ids), 0) < k THEN
                EXECUTE 'SELECT array_agg(turn_id), array_agg(conversation_id) FROM (' || newest_matches
                    || ' ORDER BY turn_id DESC LIMIT $5) s'
                    INTO found_ids, found_conversations USING tq, ws, children, archived_mode, k;
            END IF;
            PERFORM set_config('enable_indexscan', index_scans, true);
            RETURN QUERY SELECT * FROM unnest(found_ids, found_conversations);
            RETURN;
        END IF;
    END IF;
    RETURN QUERY EXECUTE newest_matches || ' ORDER BY turn_id DESC LIMIT $5' USING tq, ws, children, archived_mode, k;
END
$$;
