-- Each committed `core-service import-directus` (docs/coming-from-directus.md): when it ran and
-- from which schema. A later run refuses to replace what this API has recorded since (its
-- activity) unless forced, so a re-run after going live cannot silently undo the changes made
-- here.
CREATE TABLE directus_imports (
    id            bigserial PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    source_schema text NOT NULL
);
