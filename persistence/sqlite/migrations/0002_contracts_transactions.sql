-- 0002_contracts_transactions: contract and transaction endpoints.
--
-- abi is the JSON ABI of a transaction sent directly to an unregistered
-- contract (no contract_id), with which the follower decodes its events;
-- NULL for transactions of registered contracts.
ALTER TABLE transactions ADD COLUMN abi TEXT;

-- Keyset pagination of GET /transactions on (created, seq) per owner.
-- seq is the rowid, which every index ends with; this one is named for
-- clarity and replaces nothing.
CREATE INDEX transactions_owner_created_seq ON transactions (owner, created, seq);
