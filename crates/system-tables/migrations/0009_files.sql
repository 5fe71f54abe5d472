-- Files and folders (issue 18; Directus `directus_files`, `directus_folders`): a file row
-- describes a blob kept in a storage location (`storage`, the blob's name `filename_disk`);
-- the blob is written by core-service before the row is committed, and removed after the row is
-- deleted (through `file_blobs_deleted`, whatever deleted it).
CREATE TABLE folders (
    id     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name   text NOT NULL,
    parent uuid REFERENCES folders (id) ON DELETE SET NULL
);

CREATE TABLE files (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    storage           text NOT NULL DEFAULT 'local',
    filename_disk     text,
    filename_download text NOT NULL DEFAULT '',
    title             text,
    type              text,
    folder            uuid REFERENCES folders (id) ON DELETE SET NULL,
    uploaded_by       uuid REFERENCES users (id) ON DELETE SET NULL,
    created_on        timestamptz NOT NULL DEFAULT now(),
    modified_by       uuid,
    modified_on       timestamptz NOT NULL DEFAULT now(),
    charset           text,
    filesize          bigint,
    width             integer,
    height            integer,
    duration          integer,
    embed             text,
    description       text,
    location          text,
    tags              text[],
    metadata          jsonb,
    focal_point_x     integer,
    focal_point_y     integer,
    uploaded_on       timestamptz
);
CREATE INDEX files_folder ON files (folder);

-- Blobs whose row is gone, for core-service to remove from their storage.
CREATE TABLE file_blobs_deleted (
    id            bigserial PRIMARY KEY,
    storage       text NOT NULL,
    filename_disk text NOT NULL
);

CREATE FUNCTION files_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cdapi.file_blobs_deleted (storage, filename_disk)
    SELECT o.storage, o.filename_disk FROM old_rows o WHERE o.filename_disk IS NOT NULL;
    RETURN NULL;
END
$$;
CREATE TRIGGER files_deleted AFTER DELETE ON files
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION files_deleted();

-- Directus's names for the reverse fields: a folder's `files`, a user's uploads are not
-- listed on users (as in Directus).
INSERT INTO relations (many_collection, many_field, one_collection, one_field) VALUES
    ('directus_files', 'folder', 'directus_folders', NULL),
    ('directus_files', 'uploaded_by', 'directus_users', NULL),
    ('directus_folders', 'parent', 'directus_folders', NULL)
ON CONFLICT (many_collection, many_field) DO NOTHING;
