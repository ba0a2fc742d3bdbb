-- 0013_subscriptions: event subscriptions (docs/subscriptions.md, issue 19).
-- Times are Unix milliseconds; booleans are 0/1; JSON is text; the
-- insertion order of a table is its rowid. Addresses EIP-55, hashes 0x hex.

-- A standing request for the logs of one event of one contract (kind
-- events) or for the Transfer logs to the owner's accounts (kind deposits).
-- next_block is the next block to process, last_seq the seq of the last
-- delivery; deleted is set by DeleteSubscription (a soft delete).
CREATE TABLE subscriptions (
    id            TEXT    PRIMARY KEY,
    owner         TEXT    NOT NULL REFERENCES users (id),
    network       TEXT    NOT NULL,
    kind          TEXT    NOT NULL,               -- events, deposits
    contract_id   TEXT    REFERENCES contracts (id),
    address       TEXT    NOT NULL,               -- the zero address for deposits
    event         TEXT    NOT NULL,
    signature     TEXT    NOT NULL,
    abi           TEXT    NOT NULL,               -- JSON: the event's fragment
    filters       TEXT,                           -- JSON as given; NULL when none
    topics        TEXT    NOT NULL,               -- JSON: [][]hash
    callbacks     TEXT    NOT NULL,               -- JSON: [url]
    confirmations INTEGER NOT NULL,
    from_block    INTEGER NOT NULL,
    next_block    INTEGER NOT NULL,
    last_seq      INTEGER NOT NULL DEFAULT 0,
    created       INTEGER NOT NULL,
    deleted       INTEGER
);

-- ListSubscriptions (keyset on created, rowid: every index ends with the
-- rowid) and CountSubscriptions (the live rows of each owner of a tree).
CREATE INDEX subscriptions_owner_created ON subscriptions (owner, created) WHERE deleted IS NULL;
-- LiveSubscriptions: one range of the network's live rows.
CREATE INDEX subscriptions_network_live ON subscriptions (network, created) WHERE deleted IS NULL;

-- One delivery of a subscription: a matched log, or (removed = 1) the
-- retraction of one delivered before; retracted = 1 on a delivery a reorg
-- took back. seq numbers a subscription's deliveries from 1 (the order and
-- the pull cursor); body is the delivery's JSON, byte for byte as sent.
CREATE TABLE subscription_events (
    id              TEXT    PRIMARY KEY,          -- UUID, sent as X-Callback-Id
    subscription_id TEXT    NOT NULL REFERENCES subscriptions (id),
    seq             INTEGER NOT NULL,
    block_number    INTEGER NOT NULL,
    block_hash      TEXT    NOT NULL,
    tx_hash         TEXT    NOT NULL,
    log_index       INTEGER NOT NULL,
    removed         INTEGER NOT NULL DEFAULT 0,
    retracted       INTEGER NOT NULL DEFAULT 0,
    body            TEXT    NOT NULL,
    created         INTEGER NOT NULL,
    UNIQUE (subscription_id, seq)
);

-- LiveDeliveries: a subscription's deliveries from a block on.
CREATE INDEX subscription_events_block ON subscription_events (subscription_id, block_number);

-- Hashes of the blocks the subscription processor of a network processed,
-- to detect reorgs (as token_index_blocks).
CREATE TABLE subscription_blocks (
    network TEXT    NOT NULL,
    number  INTEGER NOT NULL,
    hash    TEXT    NOT NULL,
    PRIMARY KEY (network, number)
);

-- The outbox carries event deliveries too: tx_id becomes nullable, and a
-- row is either a transaction's callback (tx_id) or an event's (event_id,
-- with its subscription and seq). held = 1 on an event row that waits for
-- a pending row of its subscription and URL with a lower event_seq (the
-- ordering rule): the store releases the next one when a row of the pair
-- is delivered or abandoned, so that the due rows are one index range
-- however long a held back queue grows. SQLite cannot drop a NOT NULL: the
-- table is rebuilt, every row kept with its rowid (the insertion order).
CREATE TABLE callback_outbox_0013 (
    id              TEXT    PRIMARY KEY,          -- UUID
    tx_id           TEXT    REFERENCES transactions (id),
    url             TEXT    NOT NULL,
    status          TEXT    NOT NULL,             -- pending, delivered, abandoned
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt    INTEGER NOT NULL,
    last_error      TEXT    NOT NULL DEFAULT '',
    created         INTEGER NOT NULL,
    delivered       INTEGER,
    claimed_by      TEXT,
    claimed_until   INTEGER,
    event_id        TEXT    REFERENCES subscription_events (id),
    subscription_id TEXT    REFERENCES subscriptions (id),
    event_seq       INTEGER,
    held            INTEGER NOT NULL DEFAULT 0,
    CHECK ((tx_id IS NULL) <> (event_id IS NULL))
);
INSERT INTO callback_outbox_0013 (rowid, id, tx_id, url, status, attempts, next_attempt, last_error,
    created, delivered, claimed_by, claimed_until)
SELECT rowid, id, tx_id, url, status, attempts, next_attempt, last_error,
    created, delivered, claimed_by, claimed_until
FROM callback_outbox ORDER BY rowid;
DROP TABLE callback_outbox;
ALTER TABLE callback_outbox_0013 RENAME TO callback_outbox;

-- DueCallbacks: pending rows not held, by next_attempt.
CREATE INDEX callback_outbox_status_next ON callback_outbox (status, held, next_attempt);
-- Rows of one transaction.
CREATE INDEX callback_outbox_tx ON callback_outbox (tx_id);
-- The ordering rule of event rows (a pending row waits for the pending
-- rows of its subscription and URL with a lower event_seq; the next one to
-- release), and the pending rows DeleteSubscription abandons.
CREATE INDEX callback_outbox_event_order ON callback_outbox (subscription_id, url, event_seq)
    WHERE status = 'pending';
