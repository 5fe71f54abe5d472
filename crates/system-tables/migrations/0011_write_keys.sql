-- Write keys (issue 21): a write sent again to another core replica (the first one hung, or
-- its answer was lost) is applied once. The edge stamps each item write with a random key
-- (gRPC metadata `x-write-key`); core-service records it, with the answer, in the write's own
-- transaction, as its last statement. A second attempt with the same key finds it: committed
-- (a unique violation: its own work is rolled back and the recorded answer returned), or still
-- in flight (it waits on the key's index entry until the first commits or rolls back).
-- `caller` (the user id, '' for the public) and `rpc` bind a key to who made the write and how,
-- so a key cannot fetch another's answer. Rows older than WRITE_KEY_TTL_SECS are deleted.
CREATE TABLE write_keys (
    key text PRIMARY KEY,
    caller text NOT NULL,
    rpc text NOT NULL,
    answer bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX write_keys_created_at ON write_keys (created_at);
