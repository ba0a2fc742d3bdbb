-- 0001_init: the initial schema, the PostgreSQL translation of
-- persistence/sqlite/migrations/0001_init.sql (same tables, same columns).
--
-- Conventions: timestamps are TIMESTAMPTZ, written in UTC at millisecond
-- precision (the precision of the API and of the SQLite store); addresses
-- are EIP-55 hex text; hashes are lower-case 0x hex text; amounts (value,
-- wait_for_value) are NUMERIC(78,0), which holds 2^256-1; unsigned counters
-- (nonce, gas, block numbers) are BIGINT, so the store refuses values above
-- 2^63-1 as the SQLite store does; lists and structured values are JSON
-- kept as TEXT: the bytes round-trip exactly (a contract's ABI is returned
-- as stored), the hot insert path parses nothing, and JSONB would refuse
-- the \u0000 escape that a string parameter may contain (cast to jsonb to
-- query them). NULL means "not set" for every optional field.
--
-- users, accounts and contracts carry a seq identity column: SQLite's
-- implicit rowid, made explicit, so that rows created in the same
-- millisecond list in insertion order as they do there.

CREATE TABLE users (
    seq             BIGINT      GENERATED ALWAYS AS IDENTITY UNIQUE,
    id              TEXT        PRIMARY KEY,
    owner           TEXT        REFERENCES users (id),
    operator        BOOLEAN     NOT NULL DEFAULT FALSE,
    callback_secret TEXT        NOT NULL DEFAULT '',
    created         TIMESTAMPTZ NOT NULL
);

CREATE INDEX users_operator_created ON users (operator, created, seq);

CREATE TABLE api_tokens (
    hash    BYTEA       PRIMARY KEY,
    user_id TEXT        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created TIMESTAMPTZ NOT NULL,
    -- revoked is the time the token was revoked, NULL while it is valid.
    revoked TIMESTAMPTZ
);

CREATE INDEX api_tokens_user ON api_tokens (user_id);

CREATE TABLE accounts (
    seq           BIGINT      GENERATED ALWAYS AS IDENTITY UNIQUE,
    id            TEXT        PRIMARY KEY,
    owner         TEXT        NOT NULL REFERENCES users (id),
    address       TEXT        NOT NULL UNIQUE,
    is_default    BOOLEAN     NOT NULL DEFAULT FALSE,
    encrypted_key BYTEA       NOT NULL,
    created       TIMESTAMPTZ NOT NULL
);

CREATE INDEX accounts_owner_created ON accounts (owner, created, seq);
-- At most one default account per owner.
CREATE UNIQUE INDEX accounts_one_default ON accounts (owner) WHERE is_default;

CREATE TABLE contracts (
    seq     BIGINT      GENERATED ALWAYS AS IDENTITY UNIQUE,
    id      TEXT        PRIMARY KEY,
    owner   TEXT        NOT NULL REFERENCES users (id),
    name    TEXT        NOT NULL,
    network TEXT        NOT NULL,
    address TEXT        NOT NULL,
    abi     TEXT,
    bwtype  TEXT        NOT NULL DEFAULT '',
    bwver   TEXT        NOT NULL DEFAULT '',
    block   BIGINT      NOT NULL DEFAULT 0,
    created TIMESTAMPTZ NOT NULL
);

CREATE INDEX contracts_owner_created ON contracts (owner, created, seq);
CREATE INDEX contracts_network_address ON contracts (network, address);

CREATE TABLE transactions (
    -- seq is the acceptance order (first come, first served). It is taken
    -- when a row is inserted, not when it commits: batches written
    -- concurrently may become visible out of seq order. What the engine
    -- relies on is the order within one account, whose rows one actor
    -- writes one batch after the other.
    seq              BIGINT        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               TEXT          NOT NULL UNIQUE,
    owner            TEXT          NOT NULL REFERENCES users (id),
    account_id       TEXT          NOT NULL REFERENCES accounts (id),
    network          TEXT          NOT NULL,
    from_address     TEXT          NOT NULL,
    contract_id      TEXT          NOT NULL DEFAULT '',
    contract_address TEXT          NOT NULL DEFAULT '',
    contract_name    TEXT          NOT NULL DEFAULT '',
    contract_bwtype  TEXT          NOT NULL DEFAULT '',
    method           TEXT          NOT NULL DEFAULT '',
    parameters       TEXT,
    data             BYTEA,
    value            NUMERIC(78,0),
    status           TEXT          NOT NULL,
    created          TIMESTAMPTZ   NOT NULL,
    submitted        TIMESTAMPTZ,
    ended            TIMESTAMPTZ,
    nonce            BIGINT,
    gas_limit        BIGINT,
    hash             TEXT,
    raw_tx           BYTEA,
    block_number     BIGINT,
    block_hash       TEXT,
    gas_used         BIGINT,
    events           TEXT,
    error            TEXT,
    callbacks        TEXT,
    depends_on       TEXT,
    wait_for_asset   TEXT          NOT NULL DEFAULT '',
    wait_for_value   NUMERIC(78,0)
);

CREATE INDEX transactions_queue ON transactions (account_id, network, status, seq);
CREATE INDEX transactions_nonce ON transactions (account_id, network, nonce);
CREATE INDEX transactions_owner_created ON transactions (owner, created);
CREATE INDEX transactions_network_hash ON transactions (network, hash);
CREATE INDEX transactions_network_block ON transactions (network, block_number)
    WHERE block_number IS NOT NULL;

CREATE TABLE network_cursors (
    network TEXT   PRIMARY KEY,
    block   BIGINT NOT NULL
);
