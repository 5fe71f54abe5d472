-- Schema management (issue 18; Directus `directus_collections`, `directus_fields`,
-- `directus_relations`): the Directus metadata of collections, fields and relations made
-- through the API, kept whole as JSON (`meta`) beside the columns the query engine reads.

-- A collection's `meta` object (icon, note, display_template, sort_field, group...). A row
-- whose table does not exist is a folder (a collection with `schema: null`).
ALTER TABLE collections ADD COLUMN meta jsonb;

-- A field's `meta` object (special flags, interface, options, display, width, required...). A
-- row without a column behind it is an alias field (O2M, M2M, M2A, translations, groups).
CREATE TABLE fields (
    id         serial PRIMARY KEY,
    collection text NOT NULL,
    field      text NOT NULL,
    meta       jsonb NOT NULL DEFAULT '{}',
    UNIQUE (collection, field)
);
CREATE TRIGGER fields_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON fields
    FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_changed();

-- Directus numbers relation rows (`meta.id`).
ALTER TABLE relations ADD COLUMN id serial UNIQUE;
