-- 0001_init: the initial schema.
--
-- Conventions: timestamps are INTEGER unix milliseconds (UTC); addresses are
-- EIP-55 hex text; hashes are lower-case 0x hex text; amounts (value,
-- wait_for_value) are decimal text, since they reach 2^256-1; lists and
-- structured values are JSON text. NULL means "not set" for every optional
-- field.

CREATE TABLE users (
    id             TEXT    PRIMARY KEY,
    owner          TEXT    REFERENCES users (id),
    operator       INTEGER NOT NULL DEFAULT 0,
    callback_secret TEXT   NOT NULL DEFAULT '',
    created        INTEGER NOT NULL
);

CREATE INDEX users_operator_created ON users (operator, created);

CREATE TABLE api_tokens (
    hash    BLOB    PRIMARY KEY,
    user_id TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created INTEGER NOT NULL,
    -- revoked is the time the token was revoked, NULL while it is valid.
    revoked INTEGER
);

CREATE INDEX api_tokens_user ON api_tokens (user_id);

CREATE TABLE accounts (
    id            TEXT    PRIMARY KEY,
    owner         TEXT    NOT NULL REFERENCES users (id),
    address       TEXT    NOT NULL UNIQUE,
    is_default    INTEGER NOT NULL DEFAULT 0,
    encrypted_key BLOB    NOT NULL,
    created       INTEGER NOT NULL
);

CREATE INDEX accounts_owner_created ON accounts (owner, created);
-- At most one default account per owner.
CREATE UNIQUE INDEX accounts_one_default ON accounts (owner) WHERE is_default = 1;

CREATE TABLE contracts (
    id      TEXT    PRIMARY KEY,
    owner   TEXT    NOT NULL REFERENCES users (id),
    name    TEXT    NOT NULL,
    network TEXT    NOT NULL,
    address TEXT    NOT NULL,
    abi     TEXT,
    bwtype  TEXT    NOT NULL DEFAULT '',
    bwver   TEXT    NOT NULL DEFAULT '',
    block   INTEGER NOT NULL DEFAULT 0,
    created INTEGER NOT NULL
);

CREATE INDEX contracts_owner_created ON contracts (owner, created);
CREATE INDEX contracts_network_address ON contracts (network, address);

CREATE TABLE transactions (
    -- seq is the acceptance order (first come, first served).
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL UNIQUE,
    owner            TEXT    NOT NULL REFERENCES users (id),
    account_id       TEXT    NOT NULL REFERENCES accounts (id),
    network          TEXT    NOT NULL,
    from_address     TEXT    NOT NULL,
    contract_id      TEXT    NOT NULL DEFAULT '',
    contract_address TEXT    NOT NULL DEFAULT '',
    contract_name    TEXT    NOT NULL DEFAULT '',
    contract_bwtype  TEXT    NOT NULL DEFAULT '',
    method           TEXT    NOT NULL DEFAULT '',
    parameters       TEXT,
    data             BLOB,
    value            TEXT,
    status           TEXT    NOT NULL,
    created          INTEGER NOT NULL,
    submitted        INTEGER,
    ended            INTEGER,
    nonce            INTEGER,
    gas_limit        INTEGER,
    hash             TEXT,
    raw_tx           BLOB,
    block_number     INTEGER,
    block_hash       TEXT,
    gas_used         INTEGER,
    events           TEXT,
    error            TEXT,
    callbacks        TEXT,
    depends_on       TEXT,
    wait_for_asset   TEXT    NOT NULL DEFAULT '',
    wait_for_value   TEXT
);

CREATE INDEX transactions_queue ON transactions (account_id, network, status, seq);
CREATE INDEX transactions_nonce ON transactions (account_id, network, nonce);
CREATE INDEX transactions_owner_created ON transactions (owner, created);
CREATE INDEX transactions_network_hash ON transactions (network, hash);

CREATE TABLE network_cursors (
    network TEXT    PRIMARY KEY,
    block   INTEGER NOT NULL
);
