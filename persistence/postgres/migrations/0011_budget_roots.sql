-- 0011_budget_roots: the PostgreSQL translation of
-- persistence/sqlite/migrations/0011_budget_roots.sql. Limits and quotas
-- count on the root of a user tree (README, "Limits and quotas"). root_id
-- is the user whose budget a user shares: its owner's root_id, unless the
-- user is ownerless, an operator or created by an operator: then it is its
-- own root and root_id is NULL (so an insert that does not name the column
-- makes a root). Existing rows are backfilled by walking the owners from
-- the roots down.
ALTER TABLE users ADD COLUMN root_id TEXT REFERENCES users (id);

WITH RECURSIVE tree (id, root, op) AS (
    SELECT u.id, u.id, u.operator FROM users u LEFT JOIN users o ON o.id = u.owner
    WHERE u.owner IS NULL OR u.operator OR COALESCE(o.operator, TRUE)
    UNION ALL
    SELECT u.id, t.root, u.operator FROM users u JOIN tree t ON u.owner = t.id
    WHERE NOT t.op AND NOT u.operator
)
UPDATE users SET root_id = tree.root FROM tree WHERE tree.id = users.id AND tree.root <> tree.id;

-- The caps count the users and accounts of one root (root_id = r OR id = r).
CREATE INDEX users_root ON users (root_id);

-- faucet_grants records each faucet funding of an account: at most one per
-- (account, network); the faucet budget counts the grants of a root per
-- network since the start of the period.
CREATE TABLE faucet_grants (
    account_id TEXT        NOT NULL REFERENCES accounts (id),
    network    TEXT        NOT NULL,
    root_id    TEXT        NOT NULL REFERENCES users (id),
    created    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, network)
);

CREATE INDEX faucet_grants_root ON faucet_grants (root_id, network, created);
