-- 0016_token_ids (issue 29): every API token gets an id, so that its user
-- can list and revoke it (GET /users/{id}/tokens, DELETE
-- /users/{id}/tokens/{tokenId}) without the token or its hash ever being
-- shown. Tokens stored before get a random (version 4) UUID here and keep
-- working; the revoked column (0001) records the revocation. SQLite cannot
-- add a NOT NULL column without a default: every insert sets it.
ALTER TABLE api_tokens ADD COLUMN id TEXT;
UPDATE api_tokens SET id = lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||
    substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + abs(random() % 4), 1) ||
    substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)));
CREATE UNIQUE INDEX api_tokens_id ON api_tokens (id);
