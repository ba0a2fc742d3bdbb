-- 0004_processed_blocks: hashes of the blocks the watcher processed, so that
-- it can tell when one left the chain (reorg). Only the most recent ones are
-- kept. (Numbers follow the sqlite migrations of the same content.)
CREATE TABLE processed_blocks (
    network TEXT   NOT NULL,
    number  BIGINT NOT NULL,
    hash    TEXT   NOT NULL,
    PRIMARY KEY (network, number)
);
