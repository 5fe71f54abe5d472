//! Activity and revisions (Directus's `directus_activity`, `directus_revisions`; docs/history.md "Activity
//! and revisions"): every statement that creates, updates or deletes items records them, in
//! the statement itself ([`statements::recorded_write`]: an INSERT of like items, an UPDATE, a
//! DELETE) or with ONE more statement in the same transaction ([`statements::record`]), so a
//! rolled-back write leaves no record and a committed write always has one, and a batch of
//! 1,000 creates writes its 1,000 activity rows and revisions at once.
//!
//! Per item written: an activity row (`action` `create`/`update`/`delete`, the user, the client's
//! address, user agent and origin, the collection and the item's key), and for creates and
//! updates a revision, as Directus writes them: `delta` holds the fields the write set, as
//! stored (secrets such as passwords are never served, so never recorded; hash fields hold
//! their hash, concealed fields their mask); `data` is the same for a create, and for an update the whole item as stored
//! after it (the fields its collection serves, its to-many fields as lists of keys as a read with
//! `fields=*` gives them). An update that set no field has no revision. What is recorded follows the collection's
//! `meta.accountability` (Directus's setting, read from `cdapi.collections` by the statement
//! itself): `all` (the default, also without meta), `activity` (no revisions), `null` (nothing).
//! `directus_activity` and `directus_revisions` are read-only collections. [`retention`] prunes
//! old rows.

pub mod retention;
pub mod statements;

use crate::schema::Collection;
use cdapi_proto::ApiError;
use sqlx::PgConnection;

pub use statements::{record, recorded_write, revision_lists};

pub use system_tables::activity::{ACTIVITY, REVISIONS};

/// Where a request came from (recorded with each activity row).
pub use access_token::client::Client;

/// What a write did to its items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Items created (activity `create`, with revisions).
    Create,
    /// Items updated (activity `update`, with revisions).
    Update,
    /// Items deleted (activity `delete`, no revision).
    Delete,
}

impl Change {
    fn action(self) -> &'static str {
        match self {
            Change::Create => "create",
            Change::Update => "update",
            Change::Delete => "delete",
        }
    }
}

/// Records a schema change (Directus's activity on `directus_collections`, `directus_fields`,
/// `directus_relations`): one activity row in the change's transaction, `item` the collection's
/// name, or `<collection>.<field>` for a field or a relation (`field` not empty); no revision.
/// Errors: database errors.
pub async fn record_schema(
    conn: &mut PgConnection,
    system_collection: &str,
    change: Change,
    (collection, field): (&str, &str),
    user: Option<&str>,
    client: &Client,
) -> Result<(), ApiError> {
    let item = if field.is_empty() { collection.to_owned() } else { format!("{collection}.{field}") };
    let row = system_tables::activity::Activity {
        action: change.action(),
        user,
        ip: client.ip.as_deref(),
        user_agent: client.user_agent.as_deref(),
        origin: client.origin.as_deref(),
        collection: system_collection,
        item: &item,
    };
    system_tables::activity::record(&mut *conn, &row).await.map_err(crate::db::map_write_error)
}

/// Where a write stands in a nested write ([`crate::write::relational`]), so that the revisions
/// of the items nested in a top-level item get its revision as `parent` (as Directus links
/// them).
#[derive(Debug, Default)]
pub struct Nesting {
    /// Relational depth of the item being written (0: the top-level item).
    pub depth: usize,
    /// The top-level item's revision, once recorded.
    pub top: Option<i64>,
    /// Revisions of the nested items recorded so far.
    pub children: Vec<i64>,
    /// While set, an update records nothing and leaves the fields it set in `held`: an item
    /// whose to-many lists a nested write changes is recorded once they are written, so its
    /// revision holds them as they end up (Directus reads the item after its lists).
    pub hold: bool,
    /// The fields the held update set.
    pub held: Vec<String>,
}

impl Nesting {
    /// Notes the revisions just recorded: the first at depth 0 is the top-level item's, all
    /// others are nested.
    pub fn note(&mut self, ids: Vec<i64>) {
        let mut ids = ids.into_iter();
        if self.depth == 0 && self.top.is_none() {
            self.top = ids.next();
        }
        self.children.extend(ids);
    }

    /// Links the nested revisions to the top-level one (nothing when the top-level collection
    /// keeps no revisions) and starts over. Errors: database errors.
    pub async fn link(&mut self, conn: &mut PgConnection) -> Result<(), ApiError> {
        let children = std::mem::take(&mut self.children);
        if let (Some(top), false) = (self.top.take(), children.is_empty()) {
            sqlx::query("UPDATE cdapi.revisions SET parent = $1 WHERE id = ANY($2)")
                .bind(top)
                .bind(children)
                .execute(&mut *conn)
                .await
                .map_err(crate::db::map_write_error)?;
        }
        Ok(())
    }
}

/// Whether writes to `collection` may be recorded at all (activity and revisions themselves
/// are never recorded; `meta.accountability` decides the rest, in the statement).
pub fn recordable(collection: &Collection) -> bool {
    collection.name != ACTIVITY && collection.name != REVISIONS
}
