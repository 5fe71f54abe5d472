-- The Directus 11 access model (issue 18; directus-facts.md "Permissions"): permissions belong
-- to policies; policies are attached to roles and to users through `access`
-- (`directus_access`); rows of `access` with neither a role nor a user attach a policy to the
-- public (requests without a token). Roles nest (`parent`): a user gets the policies of their
-- role and of every role above it. Admin access, app access and the IP allow-list move from
-- roles to policies.
CREATE TABLE policies (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text NOT NULL,
    icon         text NOT NULL DEFAULT 'badge',
    description  text,
    -- Addresses or CIDR ranges; NULL or empty = any address. A policy whose list does not admit
    -- the client's address does not apply to that request (and a user whose IP-limited
    -- policies all refuse the address cannot sign in or use a token).
    ip_access    text[],
    enforce_tfa  boolean NOT NULL DEFAULT false,
    admin_access boolean NOT NULL DEFAULT false,
    app_access   boolean NOT NULL DEFAULT false
);

CREATE TABLE access (
    id     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    role   uuid REFERENCES roles (id) ON DELETE CASCADE,
    "user" uuid REFERENCES users (id) ON DELETE CASCADE,
    policy uuid NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
    sort   integer,
    CONSTRAINT access_role_or_user CHECK (role IS NULL OR "user" IS NULL)
);
CREATE INDEX access_role ON access (role);
CREATE INDEX access_user ON access ("user");
CREATE INDEX access_policy ON access (policy);

ALTER TABLE roles ADD COLUMN icon text NOT NULL DEFAULT 'supervised_user_circle';
ALTER TABLE roles ADD COLUMN parent uuid REFERENCES roles (id) ON DELETE SET NULL;

-- A role may not sit below itself (the chain of parents must end).
CREATE FUNCTION roles_no_cycle() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.parent IS NOT NULL AND EXISTS (
        WITH RECURSIVE up(id) AS (
            SELECT NEW.parent
            UNION
            SELECT r.parent FROM cdapi.roles r JOIN up ON r.id = up.id WHERE r.parent IS NOT NULL
        )
        SELECT 1 FROM up WHERE up.id = NEW.id
    ) THEN
        RAISE EXCEPTION 'A role cannot be its own parent or the parent of a role above it'
            USING ERRCODE = 'check_violation', COLUMN = 'parent';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER roles_no_cycle BEFORE INSERT OR UPDATE OF parent ON roles
    FOR EACH ROW EXECUTE FUNCTION roles_no_cycle();

-- A role and the roles above it, nearest first (`$CURRENT_ROLES`).
CREATE FUNCTION role_chain(start uuid) RETURNS uuid[] LANGUAGE sql STABLE AS $$
    WITH RECURSIVE up(id, depth) AS (
        SELECT start, 0 WHERE start IS NOT NULL
        UNION ALL
        SELECT r.parent, up.depth + 1 FROM cdapi.roles r JOIN up ON r.id = up.id
        WHERE r.parent IS NOT NULL AND up.depth < 64
    )
    SELECT coalesce(array_agg(id ORDER BY depth), '{}') FROM (SELECT id, min(depth) AS depth FROM up GROUP BY id) chain
$$;

-- The policies of a user: attached to them, to their role or to a role above it.
CREATE FUNCTION user_policies(for_user uuid, for_role uuid)
RETURNS TABLE (id uuid, admin_access boolean, app_access boolean, ip_access text[]) LANGUAGE sql STABLE AS $$
    SELECT DISTINCT p.id, p.admin_access, p.app_access, p.ip_access
    FROM cdapi.access a JOIN cdapi.policies p ON p.id = a.policy
    WHERE a."user" = for_user OR a.role = ANY (cdapi.role_chain(for_role))
$$;

-- One policy per existing role, holding its permissions and flags.
ALTER TABLE policies ADD COLUMN from_role uuid;
INSERT INTO policies (name, description, ip_access, admin_access, app_access, icon, from_role)
SELECT name, description, ip_access, admin_access, app_access, CASE WHEN admin_access THEN 'verified' ELSE 'badge' END, id
FROM roles;
INSERT INTO access (role, policy) SELECT from_role, id FROM policies WHERE from_role IS NOT NULL;

-- The public policy (Directus's id and name), holding the rows that had no role.
INSERT INTO policies (id, name, icon, description, app_access, admin_access)
VALUES ('abf8a154-5b1c-4a46-ac9c-7300570f4f17', '$t:public_label', 'public', '$t:public_description', false, false);
INSERT INTO access (role, "user", policy) VALUES (NULL, NULL, 'abf8a154-5b1c-4a46-ac9c-7300570f4f17');

ALTER TABLE permissions ADD COLUMN policy uuid REFERENCES policies (id) ON DELETE CASCADE;
UPDATE permissions p SET policy = coalesce(
    (SELECT pol.id FROM policies pol WHERE pol.from_role = p.role),
    'abf8a154-5b1c-4a46-ac9c-7300570f4f17');
ALTER TABLE permissions ALTER COLUMN policy SET NOT NULL;
DROP INDEX permissions_role;
ALTER TABLE permissions DROP COLUMN role;
CREATE INDEX permissions_policy ON permissions (policy);

-- Users who had admin access of their own keep it through the Administrator role's policy.
INSERT INTO access ("user", policy)
SELECT u.id, pol.id FROM users u JOIN policies pol ON pol.admin_access AND pol.from_role = (SELECT id FROM roles WHERE name = 'Administrator')
WHERE u.admin_access AND u.role IS DISTINCT FROM pol.from_role;

ALTER TABLE policies DROP COLUMN from_role;
ALTER TABLE users DROP COLUMN admin_access;
ALTER TABLE roles DROP COLUMN admin_access, DROP COLUMN app_access, DROP COLUMN ip_access;

-- Policies and access rows are part of every core replica's snapshot, as permissions are.
CREATE TRIGGER policies_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON policies
    FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_changed();
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON access
    FOR EACH STATEMENT EXECUTE FUNCTION notify_settings_changed();

-- Directus's names for the system relations' reverse fields: `policies` on roles and users,
-- `roles` on policies (each an M2M through `directus_access`), `children` on roles.
INSERT INTO relations (many_collection, many_field, one_collection, one_field, junction_field) VALUES
    ('directus_access', 'role', 'directus_roles', 'policies', 'policy'),
    ('directus_access', 'user', 'directus_users', 'policies', 'policy'),
    ('directus_access', 'policy', 'directus_policies', 'roles', 'role'),
    ('directus_roles', 'parent', 'directus_roles', 'children', NULL)
ON CONFLICT (many_collection, many_field) DO NOTHING;
