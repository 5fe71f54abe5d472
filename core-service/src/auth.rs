//! The bootstrap admin. Who is calling is decided by [`access_token::Authenticator`] (the same
//! code auth-service uses).

use argon2::password_hash::rand_core::{OsRng, RngCore};
use sqlx::PgPool;

pub use access_token::{Accountability, Authenticator};

use crate::permissions::Access;
use crate::query::Variables;
use crate::schema::Schema;
use std::sync::Arc;

/// The caller of one request, as the handlers need them.
pub struct Caller {
    /// The whole snapshot (writes, permission filters).
    pub schema: Arc<Schema>,
    /// What the caller reads through: `schema` itself for admin access, else their role's view.
    pub read: Arc<Schema>,
    /// Admin access or the role whose grants apply.
    pub access: Access,
    /// `$CURRENT_USER`, `$CURRENT_ROLE`.
    pub vars: Variables,
    /// What user writes need: sessions to end (and the caller's own login, kept on a
    /// self-change), the password policy and hasher.
    pub accounts: crate::users::Accounts,
}

impl Caller {
    /// A writer acting for this caller on `conn` (one transaction, owned by the handler).
    pub fn writer<'c>(&'c self, conn: &'c mut sqlx::PgConnection, limits: crate::query::Limits) -> crate::write::Writer<'c> {
        crate::write::Writer { schema: &self.schema, read: &self.read, access: &self.access, conn, limits, vars: &self.vars, accounts: &self.accounts }
    }

    /// Content versions acting for this caller on `conn` (one transaction, owned by the handler).
    pub fn versions<'c>(&'c self, conn: &'c mut sqlx::PgConnection, limits: crate::query::Limits) -> crate::versions::Versions<'c> {
        crate::versions::Versions { schema: &self.schema, read: &self.read, access: &self.access, conn, limits, vars: &self.vars, accounts: &self.accounts }
    }
}

/// Creates the bootstrap admin on first start (issue 2: ADMIN_EMAIL, ADMIN_PASSWORD,
/// ADMIN_TOKEN), named `Admin User` as Directus names it, in the Administrator role (admin access; migration 0006), and keeps its static
/// token equal to ADMIN_TOKEN on later starts.
/// Without ADMIN_PASSWORD a random password is generated and logged once. Replicas starting
/// together may both try to create it: the second insert does nothing.
pub async fn bootstrap_admin(pool: &PgPool, email: &str, password: Option<&str>, token: Option<&str>) -> anyhow::Result<()> {
    let existing: Option<String> = sqlx::query_scalar("SELECT id::text FROM cdapi.users WHERE lower(email) = lower($1)")
        .bind(email)
        .fetch_optional(pool)
        .await?;
    let token_hash = token.map(access_token::sha256_hex);
    if let Some(hash) = &token_hash {
        // The token belongs to the bootstrap admin alone (e.g. after ADMIN_EMAIL changed).
        sqlx::query("UPDATE cdapi.users SET token_hash = NULL WHERE token_hash = $1 AND lower(email) <> lower($2)")
            .bind(hash)
            .bind(email)
            .execute(pool)
            .await?;
    }
    if let Some(id) = existing {
        // Installs from before roles existed: the admin joins the Administrator role.
        sqlx::query("UPDATE cdapi.users SET role = (SELECT id FROM cdapi.roles WHERE name = 'Administrator') WHERE id = $1::uuid AND role IS NULL")
            .bind(&id)
            .execute(pool)
            .await?;
        if let Some(hash) = token_hash {
            sqlx::query("UPDATE cdapi.users SET token_hash = $1 WHERE id = $2::uuid")
                .bind(hash)
                .bind(id)
                .execute(pool)
                .await?;
        }
        return Ok(());
    }
    let generated;
    let password = match password {
        Some(p) => p,
        None => {
            let mut bytes = [0u8; 12];
            OsRng.fill_bytes(&mut bytes);
            generated = bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
            tracing::warn!(email, password = %generated, "ADMIN_PASSWORD not set: generated a password for the bootstrap admin");
            &generated
        }
    };
    let hash = access_token::passwords::hash_now(password).map_err(|e| anyhow::anyhow!("hashing the admin password failed: {}", e.message))?;
    sqlx::query(
        "INSERT INTO cdapi.users (email, password_hash, token_hash, admin_access, role, first_name, last_name) \
         VALUES ($1, $2, $3, true, (SELECT id FROM cdapi.roles WHERE name = 'Administrator'), 'Admin', 'User') \
         ON CONFLICT DO NOTHING",
    )
        .bind(email)
        .bind(hash)
        .bind(token_hash)
        .execute(pool)
        .await?;
    if token.is_none() {
        tracing::warn!(email, "ADMIN_TOKEN not set: the bootstrap admin has no static token yet");
    }
    tracing::info!(email, "bootstrap admin created");
    Ok(())
}
