-- 0004_processed_blocks: hashes of the blocks the watcher processed, so that
-- it can tell when one left the chain (reorg, or a dev chain that came back
-- from a hard kill at an older head). Only the most recent ones are kept.
CREATE TABLE processed_blocks (
    network TEXT    NOT NULL,
    number  INTEGER NOT NULL,
    hash    TEXT    NOT NULL,
    PRIMARY KEY (network, number)
);
