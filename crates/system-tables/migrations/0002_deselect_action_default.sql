-- What removing an item from an O2M list in a write does. NULL (the new default) lets the core
-- choose: delete for junction rows and NOT NULL foreign keys, set NULL otherwise. 'nullify' as
-- a silent default left orphaned junction rows behind.
ALTER TABLE relations ALTER COLUMN one_deselect_action DROP NOT NULL;
ALTER TABLE relations ALTER COLUMN one_deselect_action DROP DEFAULT;
UPDATE relations SET one_deselect_action = NULL WHERE one_deselect_action = 'nullify';
ALTER TABLE relations ADD CONSTRAINT relations_deselect_action CHECK (one_deselect_action IN ('nullify', 'delete'));
