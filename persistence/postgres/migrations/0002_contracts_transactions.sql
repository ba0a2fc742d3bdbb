-- 0002_contracts_transactions: contract and transaction endpoints, the
-- PostgreSQL translation of persistence/sqlite/migrations/0002.
--
-- abi is the JSON ABI of a transaction sent directly to an unregistered
-- contract (no contract_id), with which the follower decodes its events;
-- NULL for transactions of registered contracts. (A nullable column without
-- a default: adding it rewrites nothing.)
ALTER TABLE transactions ADD COLUMN abi TEXT;

-- Keyset pagination of GET /transactions on (created, seq) per owner, in
-- both directions: WHERE owner = $1 AND (created, seq) < ($2, $3) ORDER BY
-- created DESC, seq DESC is one index range scan. SQLite appends the rowid
-- (seq) to every index, PostgreSQL does not: this index is the one the
-- listing needs, and it makes transactions_owner_created (its prefix)
-- redundant, so that one goes, saving a write per insert.
CREATE INDEX transactions_owner_created_seq ON transactions (owner, created, seq);
DROP INDEX transactions_owner_created;
