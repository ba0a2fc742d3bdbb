-- 0003_users_tokens_idempotency: per-user rate limits, idempotency keys and
-- the index of token Transfer logs; the PostgreSQL translation of
-- persistence/sqlite/migrations/0003 (same tables, same columns, types as
-- in 0001).

-- Rate limits an operator set for a user (PUT /users/{id}/limits); NULL
-- means the service defaults.
ALTER TABLE users
    ADD COLUMN limit_per_second BIGINT,
    ADD COLUMN limit_per_hour   BIGINT;

-- The first response to a creating request with an Idempotency-Key, stored
-- in the same database transaction as what it created. body is sealed by
-- the HTTP layer (AES-256-GCM under the master key): it may carry a token.
CREATE TABLE idempotency_keys (
    user_id      TEXT        NOT NULL REFERENCES users (id),
    key          TEXT        NOT NULL,
    request_hash TEXT        NOT NULL,
    status       INTEGER     NOT NULL,
    body         BYTEA       NOT NULL,
    created      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, key)
);

CREATE INDEX idempotency_keys_created ON idempotency_keys (created);

-- Transfer logs of indexed contracts (registered tokens and System NFTs;
-- for an ERC-721 value is the token id). Addresses EIP-55, hashes 0x hex.
CREATE TABLE token_transfers (
    network      TEXT          NOT NULL,
    token        TEXT          NOT NULL,
    block_number BIGINT        NOT NULL,
    block_hash   TEXT          NOT NULL,
    tx_hash      TEXT          NOT NULL,
    log_index    BIGINT        NOT NULL,
    from_address TEXT          NOT NULL,
    to_address   TEXT          NOT NULL,
    value        NUMERIC(78,0) NOT NULL,
    PRIMARY KEY (network, tx_hash, log_index)
);

-- The listings are newest first on (block_number, log_index) with a keyset
-- cursor: every index a listing may use ends with both, so a page is one
-- index range scan whatever the filter (SQLite's end with the rowid).
CREATE INDEX token_transfers_token_block ON token_transfers (network, token, block_number DESC, log_index DESC);
CREATE INDEX token_transfers_from ON token_transfers (network, token, from_address, block_number DESC, log_index DESC);
CREATE INDEX token_transfers_to ON token_transfers (network, token, to_address, block_number DESC, log_index DESC);
CREATE INDEX token_transfers_block ON token_transfers (network, block_number);

-- next_block is the first block of the contract not read yet.
CREATE TABLE token_index_streams (
    network    TEXT   NOT NULL,
    address    TEXT   NOT NULL,
    next_block BIGINT NOT NULL,
    PRIMARY KEY (network, address)
);

-- Hashes of recently indexed blocks, to detect reorgs.
CREATE TABLE token_index_blocks (
    network TEXT   NOT NULL,
    number  BIGINT NOT NULL,
    hash    TEXT   NOT NULL,
    PRIMARY KEY (network, number)
);
