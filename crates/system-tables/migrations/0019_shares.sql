-- Shares (Directus 11's `directus_shares`, with its columns; docs/shares.md): a link to one item
-- that signs in without an account (`POST /shares/auth`) and reads that item and what relates
-- to it, within what both the share's role and its creator may read. `password` is an argon2
-- hash (`hash` special) and reads masked (`conceal`).
CREATE TABLE shares (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         varchar(255),
    collection   varchar(64) NOT NULL,
    item         varchar(255) NOT NULL,
    role         uuid REFERENCES roles (id) ON DELETE CASCADE,
    password     varchar(255),
    user_created uuid REFERENCES users (id) ON DELETE SET NULL,
    date_created timestamptz DEFAULT now(),
    date_start   timestamptz,
    date_end     timestamptz,
    times_used   integer DEFAULT 0,
    max_uses     integer
);
CREATE INDEX shares_item ON shares (collection, item);

-- The fields the server fills or shapes, as Directus declares them.
INSERT INTO fields (collection, field, meta) VALUES
    ('directus_shares', 'id', '{"special": ["uuid"]}'),
    ('directus_shares', 'password', '{"special": ["hash", "conceal"]}'),
    ('directus_shares', 'date_created', '{"special": ["date-created", "cast-timestamp"]}'),
    ('directus_shares', 'user_created', '{"special": ["user-created"]}')
ON CONFLICT (collection, field) DO NOTHING;

-- No reverse fields on roles and users (Directus has none).
INSERT INTO relations (many_collection, many_field, one_collection, one_field) VALUES
    ('directus_shares', 'role', 'directus_roles', NULL),
    ('directus_shares', 'user_created', 'directus_users', NULL)
ON CONFLICT (many_collection, many_field) DO NOTHING;

-- Permission rows with the action `share` (who may share which items; Directus's fifth action).
ALTER TABLE permissions DROP CONSTRAINT IF EXISTS permissions_action_check;
ALTER TABLE permissions ADD CONSTRAINT permissions_action_check CHECK (action IN ('create', 'read', 'update', 'delete', 'share'));
