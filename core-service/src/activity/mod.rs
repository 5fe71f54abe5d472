//! Activity and revisions (Directus's `directus_activity`, `directus_revisions`; docs/history.md "Activity
//! and revisions"): every statement that creates, updates or deletes items records them with
//! ONE more statement in the same transaction, so a rolled-back write leaves no record and a
//! committed write always has one, and a batch of 1,000 creates writes its 1,000 activity rows
//! and revisions at once.
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

use crate::query::Planner;
use crate::query::keys::pk_expr;
use crate::schema::Collection;
use crate::sql::{Param, Sql, ident};
use cdapi_proto::ApiError;
use serde_json::{Value, json};
use sqlx::PgConnection;

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

/// The condition that row `t0` is the item `act.item` (a key in text form): the key column
/// compared with the text cast to its type, so the primary key's index finds it; composite
/// keys compare their text form.
fn key_matches(collection: &Collection) -> String {
    match collection.primary_key.as_slice() {
        [pk] => match collection.field(pk) {
            Some(f) if !f.db_type.is_empty() => format!("t0.{} = CAST(act.item AS {})", ident(pk), f.db_type),
            _ => format!("({})::text = act.item", pk_expr(collection, "t0")),
        },
        _ => format!("({})::text = act.item", pk_expr(collection, "t0")),
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

/// Records `change` of the items `keys` (text form; duplicates recorded once) of `collection`,
/// each of which set the fields `fields[i]` (or all of `fields[0]` when it holds one list for
/// all), for the user of `planner`'s variables and `client`, in one statement on `conn` (the
/// write's transaction); returns the ids of the revisions written, in item order. `planner`
/// (fresh, over the whole snapshot) writes the statement; an update's `data` lists the item's
/// to-many keys with it ([`Planner::key_lists`]). Errors: database errors.
pub async fn record(
    conn: &mut PgConnection,
    mut planner: Planner<'_>,
    collection: &Collection,
    change: Change,
    keys: &[String],
    fields: &[Vec<&str>],
    client: &Client,
) -> Result<Vec<i64>, ApiError> {
    if keys.is_empty() || collection.name == ACTIVITY || collection.name == REVISIONS {
        return Ok(Vec::new());
    }
    let mut seen = std::collections::HashSet::new();
    let items: Vec<Value> = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| seen.insert(k.as_str()))
        .map(|(i, k)| json!({"item": k, "fields": fields.get(i).or(fields.first()).cloned().unwrap_or_default()}))
        .collect();
    // One item (after duplicates): see where the statement runs.
    let single = items.len() == 1;
    let lists = match change {
        Change::Update => match planner.key_lists(collection, "t0") {
            Ok(lists) => lists.iter().map(|l| l.render(&mut planner.sql)).collect(),
            Err(e) => {
                // The write itself is sound: it is recorded without the lists rather than refused.
                tracing::warn!(collection = %collection.name, error = %e.message, "a revision's to-many lists could not be planned");
                planner.sql = Sql::default();
                Vec::new()
            }
        },
        _ => Vec::new(),
    };
    let user = planner.vars.user.as_deref();
    let mut sql = std::mem::take(&mut planner.sql);
    let name = sql.param(Param::Text(collection.name.clone()));
    let action = sql.param(Param::Text(change.action().to_owned()));
    let input = format!("{}::jsonb", sql.param(Param::Text(Value::Array(items).to_string())));
    let user = match user {
        Some(u) => format!("{}::uuid", sql.param(Param::Text(u.to_owned()))),
        None => "NULL::uuid".to_owned(),
    };
    let text = |sql: &mut Sql, v: &Option<String>| match v {
        Some(v) => sql.param(Param::Text(v.clone())),
        None => "NULL::text".to_owned(),
    };
    let (ip, agent, origin) = (text(&mut sql, &client.ip), text(&mut sql, &client.user_agent), text(&mut sql, &client.origin));
    let system = crate::schema::introspect::SYSTEM_SCHEMA;
    let accountability = format!(
        "(SELECT CASE WHEN c.meta IS NOT NULL AND c.meta ? 'accountability' THEN c.meta->>'accountability' ELSE 'all' END \
         FROM (SELECT 1) one LEFT JOIN {system}.collections c ON c.collection = {name})"
    );
    let activity = format!(
        "INSERT INTO {system}.activity (action, \"user\", ip, user_agent, collection, item, origin) \
         SELECT {action}, {user}, {ip}, {agent}, {name}, i.item, {origin} FROM input i WHERE (SELECT a FROM acc) IN ('all', 'activity') \
         ORDER BY i.n RETURNING id, item"
    );
    sql.text = if change == Change::Delete {
        format!(
            "WITH acc(a) AS ({accountability}), input AS (SELECT * FROM ROWS FROM (jsonb_to_recordset({input}) AS (item text, fields jsonb)) WITH ORDINALITY AS i(item, fields, n)) {activity}"
        )
    } else {
        let data = if change == Change::Create { "dl.delta" } else { "r.data" };
        // Concealed fields are recorded masked, as Directus records them.
        let mut columns: Vec<String> = collection
            .fields
            .iter()
            .filter(|f| !f.is_alias())
            .map(|f| match collection.cast(&f.name) {
                Some(crate::schema::ValueCast::Conceal) => {
                    format!("{} AS {}", crate::query::values::concealed(&format!("t0.{}", ident(&f.name))), ident(&f.name))
                }
                _ => format!("t0.{}", ident(&f.name)),
            })
            .collect();
        columns.extend(lists);
        // The item is read by a scalar subquery, so each is one primary-key lookup (a join
        // would be planned as a scan of the whole table); `r` is materialised so it runs once.
        format!(
            "WITH acc(a) AS ({accountability}), \
             input AS (SELECT * FROM ROWS FROM (jsonb_to_recordset({input}) AS (item text, fields jsonb)) WITH ORDINALITY AS i(item, fields, n)), \
             act AS ({activity}), \
             r AS MATERIALIZED (SELECT act.id, act.item, i.fields, i.n, \
               (SELECT to_jsonb(x) FROM (SELECT {} FROM {} t0 WHERE {}) x) AS data FROM act JOIN input i ON i.item = act.item) \
             INSERT INTO {system}.revisions (activity, collection, item, data, delta) \
             SELECT r.id, {name}, r.item, {data}, dl.delta FROM r \
             CROSS JOIN LATERAL (SELECT coalesce((SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(r.data) e WHERE r.fields ? e.key), '{{}}'::jsonb) AS delta) dl \
             WHERE (SELECT a FROM acc) = 'all' AND ({create} OR dl.delta <> '{{}}'::jsonb) ORDER BY r.n RETURNING id",
            columns.join(", "),
            collection.table,
            key_matches(collection),
            create = change == Change::Create,
        )
    };
    // A batch is planned afresh each time, never from a connection's cached generic plan: that
    // plan is made for the table sizes of its first runs (a small table), and a later batch of
    // 1,000 items then read each one with a scan of the whole table (seen: a batch of creates
    // took seconds after many single creates). One item is the common write, and planning
    // this statement costs about as much as running it: its text is marked apart from a
    // batch's (the connection's statement cache is keyed by text) and kept prepared; its plan
    // is made anew when ANALYZE changes the table's statistics.
    if single {
        sql.text.insert_str(0, "/* one item */ ");
    }
    if change == Change::Delete {
        sql.query().persistent(single).execute(&mut *conn).await.map_err(crate::db::map_write_error)?;
        return Ok(Vec::new());
    }
    let rows = sql.query().persistent(single).fetch_all(&mut *conn).await.map_err(crate::db::map_write_error)?;
    rows.iter().map(|r| sqlx::Row::try_get::<i64, _>(r, 0).map_err(crate::db::map_error)).collect()
}
