-- System tables of the content data API, in their own Postgres schema (search_path is set to it
-- while migrating). They hold what the database itself cannot say.

-- Collections with settings beyond their table: singletons, hidden ones.
CREATE TABLE collections (
    collection text PRIMARY KEY,
    singleton  boolean NOT NULL DEFAULT false,
    hidden     boolean NOT NULL DEFAULT false,
    note       text
);

-- Relation settings (Directus `directus_relations`): the O2M alias name (`one_field`), junctions
-- (`junction_field`), Many-to-Any (`one_collection_field`, `one_allowed_collections`).
-- A row for a foreign key overrides what introspection derives; `one_field` NULL = no O2M alias.
CREATE TABLE relations (
    many_collection         text NOT NULL,
    many_field              text NOT NULL,
    one_collection          text,
    one_field               text,
    junction_field          text,
    one_collection_field    text,
    one_allowed_collections text[],
    one_deselect_action     text NOT NULL DEFAULT 'nullify',
    sort_field              text,
    PRIMARY KEY (many_collection, many_field)
);

-- Users. Until the auth service lands only the bootstrap admin exists; static tokens are stored
-- as SHA-256 hashes, passwords as argon2id PHC strings.
CREATE TABLE users (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email         text NOT NULL,
    password_hash text,
    token_hash    text UNIQUE,
    status        text NOT NULL DEFAULT 'active',
    admin_access  boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_lower ON users (lower(email));
