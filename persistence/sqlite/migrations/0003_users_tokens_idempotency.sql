-- 0003_users_tokens_idempotency: per-user rate limits, idempotency keys and
-- the index of token Transfer logs.

-- Rate limits an operator set for a user (PUT /users/{id}/limits); NULL
-- means the service defaults.
ALTER TABLE users ADD COLUMN limit_per_second INTEGER;
ALTER TABLE users ADD COLUMN limit_per_hour   INTEGER;

-- The first response to a creating request with an Idempotency-Key, stored
-- in the same database transaction as what it created. body is sealed by
-- the HTTP layer (AES-256-GCM under the master key): it may carry a token.
CREATE TABLE idempotency_keys (
    user_id      TEXT    NOT NULL REFERENCES users (id),
    key          TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    status       INTEGER NOT NULL,
    body         BLOB    NOT NULL,
    created      INTEGER NOT NULL,
    PRIMARY KEY (user_id, key)
);

CREATE INDEX idempotency_keys_created ON idempotency_keys (created);

-- Transfer logs of indexed contracts (registered tokens and System NFTs;
-- for an ERC-721 value is the token id). Addresses EIP-55, hashes 0x hex.
CREATE TABLE token_transfers (
    network      TEXT    NOT NULL,
    token        TEXT    NOT NULL,
    block_number INTEGER NOT NULL,
    block_hash   TEXT    NOT NULL,
    tx_hash      TEXT    NOT NULL,
    log_index    INTEGER NOT NULL,
    from_address TEXT    NOT NULL,
    to_address   TEXT    NOT NULL,
    value        TEXT    NOT NULL,
    PRIMARY KEY (network, tx_hash, log_index)
);

CREATE INDEX token_transfers_token_block ON token_transfers (network, token, block_number DESC, log_index DESC);
CREATE INDEX token_transfers_from ON token_transfers (network, token, from_address, block_number DESC);
CREATE INDEX token_transfers_to ON token_transfers (network, token, to_address, block_number DESC);
CREATE INDEX token_transfers_block ON token_transfers (network, block_number);

-- next_block is the first block of the contract not read yet.
CREATE TABLE token_index_streams (
    network    TEXT    NOT NULL,
    address    TEXT    NOT NULL,
    next_block INTEGER NOT NULL,
    PRIMARY KEY (network, address)
);

-- Hashes of recently indexed blocks, to detect reorgs.
CREATE TABLE token_index_blocks (
    network TEXT    NOT NULL,
    number  INTEGER NOT NULL,
    hash    TEXT    NOT NULL,
    PRIMARY KEY (network, number)
);
