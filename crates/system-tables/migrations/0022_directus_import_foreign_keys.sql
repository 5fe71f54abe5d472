-- The content tables' foreign keys into Directus's system tables that `core-service
-- import-directus` pointed at ours (docs/coming-from-directus.md; core-service/src/
-- directus_import/content_keys.rs): one row per key, with what it named in Directus, so a later
-- run can detach and re-add it, and an operator going back to Directus can point it back.
CREATE TABLE directus_import_foreign_keys (
    table_schema  text NOT NULL,
    table_name    text NOT NULL,
    name          text NOT NULL,
    column_name   text NOT NULL,
    -- Directus's table and column (`directus_users`, `id`).
    target_table  text NOT NULL,
    target_column text NOT NULL,
    -- pg_constraint.confdeltype / confupdtype codes (`a` no action, `r`, `c`, `n`, `d`).
    on_delete     text NOT NULL,
    on_update     text NOT NULL,
    PRIMARY KEY (table_schema, table_name, name)
);
