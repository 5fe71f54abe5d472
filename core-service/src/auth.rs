//! Who is calling ([`Caller`]: the accountability, variables and access of one request) and the
//! bootstrap admin. Who is calling is decided by [`access_token::Authenticator`] (the same
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
    pub accounts: crate::write::users::Accounts,
    /// When the caller's token expires (Unix seconds; `None`: a static token or the public).
    pub expires_at: Option<u64>,
    /// Where the request came from (recorded with its activity).
    pub client: crate::activity::Client,
    /// The newest write the caller has seen (`x-consistency-token`): reads served from a
    /// replica must have replayed it (see [`crate::replicas`]).
    pub consistency: Option<crate::replicas::lsn::Lsn>,
    /// Whether reads skip the result cache (`Cache-Control: no-store` with CACHE_SKIP_ALLOWED;
    /// see [`crate::cache`]).
    pub skip_cache: bool,
    /// Whether an edge asked to keep this caller's read answers for the same token and may
    /// ([`cdapi_proto::edge_feed::REUSE_METADATA`]): only when the call came from an edge
    /// ([`cdapi_proto::edge_feed::ASK_METADATA`]), and not for a session token (a logout ends
    /// it without a database write) nor a share session (it ends when its share does, by time).
    pub edge_reuse: bool,
}

impl Caller {
    /// Whom the caller's per-caller budgets count against (STREAMS_PER_CALLER,
    /// REALTIME_MAX_SUBSCRIPTIONS_PER_USER): their user id, or for the public (and a share
    /// session) `ip:<address>`, the client's address as the edge reports it (an IPv6 client's
    /// /64: `service_runtime::holders::address_holder`; believed from the
    /// edges only: docs/security.md "Client addresses and what the ports trust").
    pub fn budget_key(&self) -> String {
        match &self.vars.user {
            Some(user) => user.clone(),
            None => {
                let ip = self.client.ip.as_deref().unwrap_or_default();
                match ip.parse() {
                    Ok(ip) => format!("ip:{}", service_runtime::holders::address_holder(ip)),
                    Err(_) => format!("ip:{ip}"),
                }
            }
        }
    }

    /// A writer acting for this caller on `conn` (one transaction, owned by the handler).
    pub fn writer<'c>(&'c self, conn: &'c mut sqlx::PgConnection, limits: crate::query::Limits) -> crate::write::Writer<'c> {
        crate::write::Writer {
            schema: &self.schema,
            read: &self.read,
            access: &self.access,
            conn,
            limits,
            vars: &self.vars,
            accounts: &self.accounts,
            client: &self.client,
            nesting: Default::default(),
        }
    }

    /// Content versions acting for this caller on `conn` (one transaction, owned by the handler).
    pub fn versions<'c>(&'c self, conn: &'c mut sqlx::PgConnection, limits: crate::query::Limits) -> crate::versions::Versions<'c> {
        crate::versions::Versions {
            schema: &self.schema,
            read: &self.read,
            access: &self.access,
            conn,
            limits,
            vars: &self.vars,
            accounts: &self.accounts,
            client: &self.client,
        }
    }
}

/// Creates the bootstrap admin on first start (docs/configuration.md: ADMIN_EMAIL, ADMIN_PASSWORD,
/// ADMIN_TOKEN), named `Admin User` as Directus names it, in the Administrator role (admin access; migration 0006), and keeps its static
/// token equal to ADMIN_TOKEN on later starts.
/// Without ADMIN_PASSWORD a random password is generated and logged once. Replicas starting
/// together may both try to create it: the second insert does nothing.
pub async fn bootstrap_admin(pool: &PgPool, email: &str, password: Option<&str>, token: Option<&str>) -> anyhow::Result<()> {
    use system_tables::users;
    let existing = users::id_by_email(pool, email).await?;
    let token_hash = token.map(access_token::sha256_hex);
    if let Some(hash) = &token_hash {
        // The token belongs to the bootstrap admin alone (e.g. after ADMIN_EMAIL changed).
        users::keep_token_for(pool, hash, email).await?;
    }
    if let Some(id) = existing {
        users::join_administrators_if_roleless(pool, &id).await?;
        if let Some(hash) = token_hash {
            users::set_token_hash(pool, &id, Some(&hash)).await?;
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
    let hash = access_token::passwords::hash_now(password).map_err(|e| anyhow::anyhow!("hashing the admin password failed: {e}"))?;
    system_tables::users::create_admin(pool, email, &hash, token_hash.as_deref()).await?;
    if token.is_none() {
        tracing::warn!(email, "ADMIN_TOKEN not set: the bootstrap admin has no static token yet");
    }
    tracing::info!(email, "bootstrap admin created");
    Ok(())
}
