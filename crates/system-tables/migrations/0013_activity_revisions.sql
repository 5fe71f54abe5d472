-- Who changed what (Directus `directus_activity`, `directus_revisions`): one activity row per
-- item created, updated or deleted, and for `create`/`update` one revision with the item's state
-- after the write (`data`) and the fields the write set (`delta`), per the collection's
-- `meta.accountability` (`all`: both, `activity`: activity only, null: nothing). Written by
-- core-service in the transaction of the write they record (docs/operations.md "Activity and
-- revisions"), read through the collections `directus_activity` and `directus_revisions`.
CREATE TABLE activity (
    id         bigserial PRIMARY KEY,
    action     text NOT NULL,
    "user"     uuid REFERENCES users (id) ON DELETE SET NULL,
    timestamp  timestamptz NOT NULL DEFAULT now(),
    ip         text,
    user_agent text,
    collection text NOT NULL,
    item       text NOT NULL,
    origin     text
);
-- Few indexes: every write inserts here, concurrently (retention reads the oldest rows first,
-- which are the first ones in the table).
CREATE INDEX activity_item ON activity (collection, item);

CREATE TABLE revisions (
    id         bigserial PRIMARY KEY,
    activity   bigint NOT NULL REFERENCES activity (id) ON DELETE CASCADE,
    collection text NOT NULL,
    item       text NOT NULL,
    data       jsonb,
    delta      jsonb,
    parent     bigint REFERENCES revisions (id) ON DELETE SET NULL,
    version    uuid REFERENCES versions (id) ON DELETE SET NULL
);
CREATE INDEX revisions_item ON revisions (collection, item);
CREATE INDEX revisions_activity ON revisions (activity);
CREATE INDEX revisions_parent ON revisions (parent) WHERE parent IS NOT NULL;

-- Directus's reverse fields: an activity row's `revisions`; none on users, revisions or versions.
INSERT INTO relations (many_collection, many_field, one_collection, one_field) VALUES
    ('directus_activity', 'user', 'directus_users', NULL),
    ('directus_revisions', 'activity', 'directus_activity', 'revisions'),
    ('directus_revisions', 'parent', 'directus_revisions', NULL),
    ('directus_revisions', 'version', 'directus_versions', NULL)
ON CONFLICT (many_collection, many_field) DO NOTHING;
