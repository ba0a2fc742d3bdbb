-- 0006_conditions: what the engine needs to hold transactions back until
-- their conditions hold. tx_dependencies indexes dependsOn both ways, so that
-- a transaction turning terminal finds its dependents without a scan;
-- wait_until is the deadline of waitTimeout.
CREATE TABLE tx_dependencies (
    tx_id      TEXT NOT NULL REFERENCES transactions (id),
    depends_on TEXT NOT NULL,
    PRIMARY KEY (tx_id, depends_on)
);
CREATE INDEX tx_dependencies_depends_on ON tx_dependencies (depends_on);

ALTER TABLE transactions ADD COLUMN wait_until INTEGER;
CREATE INDEX transactions_network_status ON transactions (network, status, seq);
