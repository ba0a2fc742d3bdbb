-- 0014_expiry_and_retention (issue 27): the waiting transactions due by
-- their waitTimeout are found by deadline, however many others wait
-- (Conditions.Sweep expires them in one statement); the outbox rows of a
-- subscription event and the events past their retention are found without
-- a scan (the pruner deletes them in bounded batches).
CREATE INDEX transactions_waiting_until ON transactions (network, wait_until)
    WHERE status = 'waiting' AND wait_until IS NOT NULL;
CREATE INDEX callback_outbox_event ON callback_outbox (event_id) WHERE event_id IS NOT NULL;
CREATE INDEX callback_outbox_done ON callback_outbox (created) WHERE status <> 'pending';
CREATE INDEX subscription_events_created ON subscription_events (created);
