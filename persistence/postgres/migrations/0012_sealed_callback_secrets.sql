-- 0012_sealed_callback_secrets: callback secrets are sealed at rest
-- (engine.KeySealer, AES-256-GCM under the callback-secret key derived from
-- the master key, bound to the user id), so callback_secret becomes BYTEA;
-- the PostgreSQL translation of persistence/sqlite/migrations/0012.
-- SQL cannot seal: a secret stored in plain text before is kept as
-- '\x00' || secret (engine.PlainVersion), which the service opens as is and
-- seals at its next start (and `txengine keys rotate` seals too).
-- (0011 is another change's number; gaps are allowed.)
ALTER TABLE users ALTER COLUMN callback_secret DROP DEFAULT;
ALTER TABLE users ALTER COLUMN callback_secret TYPE BYTEA
    USING decode('00', 'hex') || convert_to(callback_secret, 'UTF8');
ALTER TABLE users ALTER COLUMN callback_secret SET DEFAULT ''::bytea;
