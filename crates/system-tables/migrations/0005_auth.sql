-- Identities for auth-service (issue 5). Roles hold what authentication needs of them (the IP
-- allow-list, admin access); permissions join them in their own issue.
CREATE TABLE roles (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text NOT NULL UNIQUE,
    description  text,
    -- Addresses or CIDR ranges (e.g. '10.0.0.0/8') allowed to sign in and to use tokens;
    -- NULL or empty = any address. An entry that does not parse matches nothing.
    ip_access    text[],
    admin_access boolean NOT NULL DEFAULT false,
    app_access   boolean NOT NULL DEFAULT false
);

ALTER TABLE users
    ADD COLUMN first_name          text,
    ADD COLUMN last_name           text,
    ADD COLUMN role                uuid REFERENCES roles (id) ON DELETE SET NULL,
    -- Base32 TOTP secret; NULL = TOTP off.
    ADD COLUMN tfa_secret          text,
    -- The user's own allow-list, checked besides the role's (both must allow the address).
    ADD COLUMN ip_access           text[],
    -- 'default' (email + password) or the name of the SSO provider the user signs in with.
    ADD COLUMN provider            text NOT NULL DEFAULT 'default',
    -- The user's id at that provider (e.g. the OpenID `sub`).
    ADD COLUMN external_identifier text,
    ADD COLUMN last_access         timestamptz,
    ADD CONSTRAINT users_status CHECK (status IN ('active', 'invited', 'draft', 'suspended', 'archived'));

CREATE UNIQUE INDEX users_provider_identifier ON users (provider, external_identifier)
    WHERE external_identifier IS NOT NULL;
