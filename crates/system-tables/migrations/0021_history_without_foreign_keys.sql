-- Activity and revisions keep no foreign keys on the write path (docs/history.md "Activity and
-- revisions"); their relation rows (0013) still make `directus_activity.user` and
-- `directus_revisions.activity` M2O relations for reads, as Directus reads relations from them.
--
-- `activity.user`: Directus has no foreign key there and keeps a deleted user's id on their
-- activity; so does this table now (it used to set it null). The check also locked the
-- signed-in user's row in every recorded write, so concurrent writers of one user queued on a
-- shared lock of that row.
--
-- `revisions.activity`: both rows are written by the same statement (core-service/src/activity),
-- so the check only cost a lookup and a row lock of the activity row per revision (a third of a
-- recorded batch's extra work), and a plan cached while the table was empty scanned it whole.
-- What its ON DELETE CASCADE did, retention and the import now do themselves (activity pruning
-- deletes the pruned rows' revisions in the same statement).
ALTER TABLE activity DROP CONSTRAINT activity_user_fkey;
ALTER TABLE revisions DROP CONSTRAINT revisions_activity_fkey;
