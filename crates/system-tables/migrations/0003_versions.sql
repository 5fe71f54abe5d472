-- Content versions (Directus `directus_versions`): a named set of changes (`delta`) to one
-- item, made against the main item's state identified by `hash`. Key `main` is reserved.
CREATE TABLE versions (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    key          text NOT NULL CHECK (key <> 'main' AND key ~ '^[A-Za-z0-9_-]+$'),
    name         text,
    collection   text NOT NULL,
    item         text NOT NULL,
    hash         text NOT NULL,
    delta        jsonb,
    date_created timestamptz NOT NULL DEFAULT now(),
    date_updated timestamptz,
    user_created uuid,
    UNIQUE (collection, item, key)
);
