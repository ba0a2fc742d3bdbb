-- 0012_sealed_callback_secrets: callback secrets are sealed at rest
-- (engine.KeySealer, AES-256-GCM under the callback-secret key derived from
-- the master key, bound to the user id), so callback_secret becomes a BLOB.
-- SQL cannot seal: a secret stored in plain text before is kept as
-- X'00' || secret (engine.PlainVersion), which the service opens as is and
-- seals at its next start (and `txengine keys rotate` seals too).
-- (0011 is another change's number; gaps are allowed.)
ALTER TABLE users ADD COLUMN sealed_callback_secret BLOB NOT NULL DEFAULT X'';
UPDATE users SET sealed_callback_secret = CAST(X'00' || callback_secret AS BLOB);
ALTER TABLE users DROP COLUMN callback_secret;
ALTER TABLE users RENAME COLUMN sealed_callback_secret TO callback_secret;
