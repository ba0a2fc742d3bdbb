-- 0015_kms_accounts (issue 29): an account's key may live in AWS KMS
-- instead of being sealed by the service: kms_key_id is then the key's ARN
-- (encrypted_key is empty) and NULL for every account whose key the
-- service seals (all accounts before this migration). A KMS key backs at
-- most one account.
ALTER TABLE accounts ADD COLUMN kms_key_id TEXT;
CREATE UNIQUE INDEX accounts_kms_key ON accounts (kms_key_id) WHERE kms_key_id IS NOT NULL;
