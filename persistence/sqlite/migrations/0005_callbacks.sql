-- 0005_callbacks: the durable callback outbox. The store inserts one row
-- per callback URL in the same database transaction that moves a
-- transaction to completed or failed; the dispatcher delivers pending rows
-- whose next_attempt is due. Times are Unix milliseconds.
CREATE TABLE callback_outbox (
    id           TEXT    PRIMARY KEY,          -- UUID, sent as X-Callback-Id
    tx_id        TEXT    NOT NULL REFERENCES transactions (id),
    url          TEXT    NOT NULL,
    status       TEXT    NOT NULL,             -- pending, delivered, abandoned
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_attempt INTEGER NOT NULL,
    last_error   TEXT    NOT NULL DEFAULT '',
    created      INTEGER NOT NULL,
    delivered    INTEGER
);

-- DueCallbacks: pending rows by next_attempt.
CREATE INDEX callback_outbox_status_next ON callback_outbox (status, next_attempt);
-- Rows of one transaction.
CREATE INDEX callback_outbox_tx ON callback_outbox (tx_id);
