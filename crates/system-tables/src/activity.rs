//! Activity rows written one at a time (`cdapi.activity`; docs/history.md): logins
//! (auth-service) and schema changes (core-service). Item writes record theirs in batches, by
//! core-service's own statement.

/// The collection of activity rows.
pub const ACTIVITY: &str = "directus_activity";

/// The collection of revisions.
pub const REVISIONS: &str = "directus_revisions";

/// One activity row.
#[derive(Debug, Clone, Copy)]
pub struct Activity<'a> {
    /// `login`, `create`, `update` or `delete`.
    pub action: &'a str,
    /// Who acted (`None`: the public).
    pub user: Option<&'a str>,
    /// The client's address, user agent and origin, as the edge reported them.
    pub ip: Option<&'a str>,
    /// See `ip`.
    pub user_agent: Option<&'a str>,
    /// See `ip`.
    pub origin: Option<&'a str>,
    /// The collection acted on (`directus_users` for a login).
    pub collection: &'a str,
    /// The item acted on, in text form.
    pub item: &'a str,
}

/// Writes `a` (in `db`'s transaction, if it is one). Errors: database errors.
pub async fn record<'e>(db: impl sqlx::PgExecutor<'e>, a: &Activity<'_>) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO cdapi.activity (action, \"user\", ip, user_agent, collection, item, origin) VALUES ($1, $2::uuid, $3, $4, $5, $6, $7)")
        .bind(a.action)
        .bind(a.user)
        .bind(a.ip)
        .bind(a.user_agent)
        .bind(a.collection)
        .bind(a.item)
        .bind(a.origin)
        .execute(db)
        .await
        .map(|_| ())
}
