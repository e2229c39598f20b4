-- Turns and what drives them (runs.md §12, storage-and-scale.md §4, §5; issue 25, part 2).
--
-- A turn is one entry of a conversation's timeline: a `user` turn records the input (or kernel
-- mail) it consumed, an `assistant` turn the hosted run that answers it and, when that run
-- ends, its reply (the final mainline round's text). `position` counts from 1 per conversation;
-- `conversations.last_position` is the last one given.
--
-- `conversations.running_turn_id` is the assistant turn whose run is live (NULL: idle).
-- `conversations.wake_at` is materialized like `tasks.deadline_at`: while the conversation is
-- idle and live, the earliest due time of a pending input that may open a turn (a user input,
-- or mail with `wake = auto`); NULL otherwise. The turn pass selects `wake_at <= now` by its
-- partial index, so a scheduled input opens its turn at its time, across restarts.
-- `conversations.reply_route` (JSON) is where a spawned child's first reply goes.
--
-- An assistant turn's `replay_from` is how many history entries preceded its prompt in its
-- first round's request (written by that round's seal), and `final_task_id` the mainline round
-- whose reply it ended with: the turn's own entries in a later history are that round's sealed
-- entries from `replay_from` on, then its reply (history replay, runs.md §12).
--
-- An input's `turn_id` is the turn it is bound to (a steer) or consumed by; `wake` is a mail
-- input's `auto | passive`; `mail_key` makes kernel mail idempotent per conversation.

-- (PostgreSQL dialect.) Keep in step with migrations/sqlite/0018_turns.sql: the parity test fails
-- on any difference.

CREATE TABLE turns (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id uuid NOT NULL UNIQUE,
    conversation_id BIGINT NOT NULL REFERENCES conversations (id),
    position BIGINT NOT NULL,
    role TEXT NOT NULL CHECK (role = 'user' OR role = 'assistant'),
    status TEXT NOT NULL CHECK (status = 'running' OR status = 'completed' OR status = 'failed' OR status = 'canceled'),
    input_id BIGINT REFERENCES conversation_inputs (id),
    run_id BIGINT REFERENCES runs (id),
    content TEXT,
    error_key TEXT,
    replay_from BIGINT,
    final_task_id BIGINT,
    created_at BIGINT NOT NULL,
    ended_at BIGINT,
    UNIQUE (conversation_id, position)
);

CREATE INDEX turns_run ON turns (run_id) WHERE run_id IS NOT NULL;

ALTER TABLE conversations ADD COLUMN running_turn_id BIGINT;
ALTER TABLE conversations ADD COLUMN last_position BIGINT NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN wake_at BIGINT;
ALTER TABLE conversations ADD COLUMN reply_route TEXT;

CREATE INDEX conversations_wake ON conversations (wake_at) WHERE wake_at IS NOT NULL;

ALTER TABLE conversation_inputs ADD COLUMN turn_id BIGINT;
ALTER TABLE conversation_inputs ADD COLUMN wake TEXT;
ALTER TABLE conversation_inputs ADD COLUMN mail_key TEXT;

CREATE UNIQUE INDEX conversation_inputs_mail ON conversation_inputs (conversation_id, mail_key)
    WHERE mail_key IS NOT NULL;
