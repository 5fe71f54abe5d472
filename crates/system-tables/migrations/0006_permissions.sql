-- Permissions (issue 7; Directus `directus_permissions`): per role, collection and action, an
-- item filter (`permissions`), a payload filter (`validation`), default values (`presets`) and
-- the fields allowed (`fields`, `*` = all). `role` NULL is the public role: requests without a
-- token. Several rows for the same role, collection and action add up (the union).
CREATE TABLE permissions (
    id          serial PRIMARY KEY,
    role        uuid REFERENCES roles (id) ON DELETE CASCADE,
    collection  text NOT NULL,
    action      text NOT NULL CHECK (action IN ('create', 'read', 'update', 'delete')),
    permissions jsonb,
    validation  jsonb,
    presets     jsonb,
    fields      text[]
);
CREATE INDEX permissions_role ON permissions (role);

-- Permissions and roles are part of every core replica's snapshot: changes reach them all.
CREATE TRIGGER permissions_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON permissions
    FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_changed();
CREATE TRIGGER roles_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON roles
    FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_changed();

-- The administrator role: the bootstrap admin is put in it (core-service start-up).
INSERT INTO roles (name, description, admin_access, app_access)
VALUES ('Administrator', 'Full access: permissions do not apply.', true, true)
ON CONFLICT (name) DO NOTHING;
