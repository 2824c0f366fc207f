-- The reconcilers' durable work queue: one row per (reconciler, key), duplicates merged.
-- A row is due at due_at; a worker claims it by writing claimed_by and a lease
-- (claimed_until), which it extends while it works; a lease that runs out makes the key
-- claimable again. generation grows on every enqueue, so a worker that finishes can tell
-- whether the key was queued again while it worked.
CREATE TABLE reconciler_queue (
    reconciler TEXT NOT NULL,
    key TEXT NOT NULL,
    due_at BIGINT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    claimed_by TEXT,
    claimed_until BIGINT,
    generation BIGINT NOT NULL DEFAULT 0,
    terminal BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (reconciler, key)
);
CREATE INDEX reconciler_queue_due ON reconciler_queue (terminal, due_at);
