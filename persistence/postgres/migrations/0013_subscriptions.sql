-- 0013_subscriptions: event subscriptions (docs/subscriptions.md, issue
-- 19); the PostgreSQL translation of persistence/sqlite/migrations/0013
-- (same tables, same columns; seq is the insertion order). JSON is TEXT, so
-- a delivery's body is kept byte for byte as sent.

-- A standing request for the logs of one event of one contract (kind
-- events) or for the Transfer logs to the owner's accounts (kind deposits).
-- next_block is the next block to process, last_seq the seq of the last
-- delivery; deleted is set by DeleteSubscription (a soft delete).
CREATE TABLE subscriptions (
    seq           BIGINT      GENERATED ALWAYS AS IDENTITY,
    id            TEXT        PRIMARY KEY,
    owner         TEXT        NOT NULL REFERENCES users (id),
    network       TEXT        NOT NULL,
    kind          TEXT        NOT NULL,               -- events, deposits
    contract_id   TEXT        REFERENCES contracts (id),
    address       TEXT        NOT NULL,               -- the zero address for deposits
    event         TEXT        NOT NULL,
    signature     TEXT        NOT NULL,
    abi           TEXT        NOT NULL,               -- JSON: the event's fragment
    filters       TEXT,                               -- JSON as given; NULL when none
    topics        TEXT        NOT NULL,               -- JSON: [][]hash
    callbacks     TEXT        NOT NULL,               -- JSON: [url]
    confirmations BIGINT      NOT NULL,
    from_block    BIGINT      NOT NULL,
    next_block    BIGINT      NOT NULL,
    last_seq      BIGINT      NOT NULL DEFAULT 0,
    created       TIMESTAMPTZ NOT NULL,
    deleted       TIMESTAMPTZ
);

-- ListSubscriptions (keyset on created, seq) and CountSubscriptions (the
-- live rows of each owner of a tree).
CREATE INDEX subscriptions_owner_created ON subscriptions (owner, created, seq) WHERE deleted IS NULL;
-- LiveSubscriptions: one range of the network's live rows.
CREATE INDEX subscriptions_network_live ON subscriptions (network, created, seq) WHERE deleted IS NULL;

-- One delivery of a subscription: a matched log, or (removed) the
-- retraction of one delivered before; retracted on a delivery a reorg took
-- back. seq numbers a subscription's deliveries from 1 (the order and the
-- pull cursor); body is the delivery's JSON, byte for byte as sent.
CREATE TABLE subscription_events (
    id              TEXT        PRIMARY KEY,          -- UUID, sent as X-Callback-Id
    subscription_id TEXT        NOT NULL REFERENCES subscriptions (id),
    seq             BIGINT      NOT NULL,
    block_number    BIGINT      NOT NULL,
    block_hash      TEXT        NOT NULL,
    tx_hash         TEXT        NOT NULL,
    log_index       BIGINT      NOT NULL,
    removed         BOOLEAN     NOT NULL DEFAULT FALSE,
    retracted       BOOLEAN     NOT NULL DEFAULT FALSE,
    body            TEXT        NOT NULL,
    created         TIMESTAMPTZ NOT NULL,
    UNIQUE (subscription_id, seq)
);

-- LiveDeliveries: a subscription's deliveries from a block on.
CREATE INDEX subscription_events_block ON subscription_events (subscription_id, block_number);

-- Hashes of the blocks the subscription processor of a network processed,
-- to detect reorgs (as token_index_blocks).
CREATE TABLE subscription_blocks (
    network TEXT   NOT NULL,
    number  BIGINT NOT NULL,
    hash    TEXT   NOT NULL,
    PRIMARY KEY (network, number)
);

-- The outbox carries event deliveries too: a row is either a
-- transaction's callback (tx_id) or an event's (event_id, with its
-- subscription and seq). held on an event row that waits for a pending row
-- of its subscription and URL with a lower event_seq (the ordering rule):
-- the store releases the next one when a row of the pair is delivered or
-- abandoned, so that the due rows are one index range however long a held
-- back queue grows.
ALTER TABLE callback_outbox
    ALTER COLUMN tx_id DROP NOT NULL,
    ADD COLUMN event_id        TEXT REFERENCES subscription_events (id),
    ADD COLUMN subscription_id TEXT REFERENCES subscriptions (id),
    ADD COLUMN event_seq       BIGINT,
    ADD COLUMN held            BOOLEAN NOT NULL DEFAULT FALSE,
    ADD CONSTRAINT callback_outbox_one_source CHECK ((tx_id IS NULL) <> (event_id IS NULL));

-- DueCallbacks: pending rows not held, by next_attempt.
DROP INDEX callback_outbox_status_next;
CREATE INDEX callback_outbox_status_next ON callback_outbox (status, held, next_attempt);

-- The ordering rule of event rows (a pending row waits for the pending
-- rows of its subscription and URL with a lower event_seq; the next one to
-- release), and the pending rows DeleteSubscription abandons.
CREATE INDEX callback_outbox_event_order ON callback_outbox (subscription_id, url, event_seq)
    WHERE status = 'pending';
