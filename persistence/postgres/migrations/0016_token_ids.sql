-- 0016_token_ids (issue 29): every API token gets an id, so that its user
-- can list and revoke it (GET /users/{id}/tokens, DELETE
-- /users/{id}/tokens/{tokenId}) without the token or its hash ever being
-- shown. Tokens stored before get a random id here and keep working; the
-- revoked column (0001) records the revocation. The PostgreSQL translation
-- of persistence/sqlite/migrations/0016.
ALTER TABLE api_tokens ADD COLUMN id TEXT;
UPDATE api_tokens SET id = gen_random_uuid()::text;
ALTER TABLE api_tokens ALTER COLUMN id SET NOT NULL;
CREATE UNIQUE INDEX api_tokens_id ON api_tokens (id);
