//! Activity and revisions (Directus's `directus_activity`, `directus_revisions`; docs/history.md "Activity
//! and revisions"): every statement that creates, updates or deletes items records them with
//! ONE more statement in the same transaction (a create of like items, in its own statement:
//! [`recorded_create`]), so a rolled-back write leaves no record and a
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

/// The values one recording statement binds once: the collection's name, the action, the user
/// and the client, as SQL expressions (parameters or typed NULLs).
struct Bound {
    name: String,
    action: String,
    user: String,
    ip: String,
    agent: String,
    origin: String,
}

impl Bound {
    fn new(sql: &mut Sql, collection: &str, change: Change, user: Option<&str>, client: &Client) -> Self {
        let name = sql.param(Param::Text(collection.to_owned()));
        let action = sql.param(Param::Text(change.action().to_owned()));
        let user = match user {
            Some(u) => format!("{}::uuid", sql.param(Param::Text(u.to_owned()))),
            None => "NULL::uuid".to_owned(),
        };
        let mut text = |v: &Option<String>| match v {
            Some(v) => sql.param(Param::Text(v.clone())),
            None => "NULL::text".to_owned(),
        };
        let (ip, agent, origin) = (text(&client.ip), text(&client.user_agent), text(&client.origin));
        Bound { name, action, user, ip, agent, origin }
    }

    /// The CTE `acc(a)`: the collection's `meta.accountability`, read from `cdapi.collections`
    /// by the statement itself (`all` without meta or without the key).
    fn accountability(&self) -> String {
        let system = crate::schema::introspect::SYSTEM_SCHEMA;
        format!(
            "acc(a) AS ((SELECT CASE WHEN c.meta IS NOT NULL AND c.meta ? 'accountability' THEN c.meta->>'accountability' ELSE 'all' END \
             FROM (SELECT 1) one LEFT JOIN {system}.collections c ON c.collection = {}))",
            self.name
        )
    }

    /// The INSERT of one activity row per row of the CTE `input` (columns `item` and `n`, the
    /// item's place), in item order, returning `id, item`; nothing unless `acc` says so.
    fn activity(&self) -> String {
        let system = crate::schema::introspect::SYSTEM_SCHEMA;
        let Bound { name, action, user, ip, agent, origin } = self;
        format!(
            "INSERT INTO {system}.activity (action, \"user\", ip, user_agent, collection, item, origin) \
             SELECT {action}, {user}, {ip}, {agent}, {name}, i.item, {origin} FROM input i WHERE (SELECT a FROM acc) IN ('all', 'activity') \
             ORDER BY i.n RETURNING id, item"
        )
    }
}

/// How a revision records field `field` of row `t0` (a column of `collection`): as stored,
/// concealed fields masked, as Directus records them.
fn recorded_column(collection: &Collection, field: &str) -> String {
    let column = format!("t0.{}", ident(field));
    match collection.cast(field) {
        Some(crate::schema::ValueCast::Conceal) => crate::query::values::concealed(&column),
        _ => column,
    }
}

/// Whether writes to `collection` may be recorded at all (activity and revisions themselves
/// are never recorded; `meta.accountability` decides the rest, in the statement).
pub fn recordable(collection: &Collection) -> bool {
    collection.name != ACTIVITY && collection.name != REVISIONS
}

/// Turns `sql`, an `INSERT INTO <table> AS t0 (...) VALUES ...` without RETURNING whose items
/// all set the fields `fields` (as the payloads name them), into one statement that creates
/// the items and records them as [`record`] would a [`Change::Create`]: an activity row each
/// and a revision whose `data` and `delta` hold the set fields as stored, read from the
/// INSERT's own RETURNING (no second statement, no second read of the items). Its rows are
/// `(key text, revision int8 or NULL)`, one per item in payload order (the order of
/// `INSERT ... RETURNING`, which the single-statement create relies on already); NULL where
/// `meta.accountability` keeps no revision. Field names are bound as parameters.
pub fn recorded_create(sql: &mut Sql, collection: &Collection, fields: &[&str], user: Option<&str>, client: &Client) {
    let insert = std::mem::take(&mut sql.text);
    let mut pairs = Vec::new();
    for f in fields.iter().filter(|f| collection.has_column(f)) {
        pairs.push(format!("{}::text, {}", sql.param(Param::Text((*f).to_owned())), recorded_column(collection, f)));
    }
    // jsonb_build_object takes at most 100 arguments: 50 fields an object, joined.
    let delta = if pairs.is_empty() {
        "'{}'::jsonb".to_owned()
    } else {
        pairs.chunks(50).map(|c| format!("jsonb_build_object({})", c.join(", "))).collect::<Vec<_>>().join(" || ")
    };
    let bound = Bound::new(sql, &collection.name, Change::Create, user, client);
    let system = crate::schema::introspect::SYSTEM_SCHEMA;
    sql.text = format!(
        "WITH {}, ins AS ({insert} RETURNING ({})::text AS item, {delta} AS delta), \
         input AS (SELECT ins.item, ins.delta, row_number() OVER () AS n FROM ins), \
         act AS ({}), \
         rev AS (INSERT INTO {system}.revisions (activity, collection, item, data, delta) \
           SELECT act.id, {}, act.item, i.delta, i.delta FROM act JOIN input i ON i.item = act.item \
           WHERE (SELECT a FROM acc) = 'all' ORDER BY i.n RETURNING id, item) \
         SELECT i.item, rev.id FROM input i LEFT JOIN rev ON rev.item = i.item ORDER BY i.n",
        bound.accountability(),
        pk_expr(collection, "t0"),
        bound.activity(),
        bound.name,
    );
}

/// Records `change` of the items `keys` (text form; duplicates recorded once) of `collection`,
/// each of which set the fields `fields[i]` (or all of `fields[0]` when it holds one list for
/// all), for the user of `planner`'s variables and `client`, in one statement on `conn` (the
/// write's transaction); returns the ids of the revisions written, in item order. `planner`
/// (fresh, over the whole snapshot) writes the statement; an update's `data` lists the item's
/// to-many keys with it ([`Planner::key_lists`]). Creates whose items all set the same fields
/// are recorded by their INSERT instead ([`recorded_create`]). Errors: database errors.
pub async fn record(
    conn: &mut PgConnection,
    mut planner: Planner<'_>,
    collection: &Collection,
    change: Change,
    keys: &[String],
    fields: &[Vec<&str>],
    client: &Client,
) -> Result<Vec<i64>, ApiError> {
    if keys.is_empty() || !recordable(collection) {
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
    let input = format!("{}::jsonb", sql.param(Param::Text(Value::Array(items).to_string())));
    let bound = Bound::new(&mut sql, &collection.name, change, user, client);
    let (accountability, activity) = (bound.accountability(), bound.activity());
    let input = format!("input AS (SELECT * FROM ROWS FROM (jsonb_to_recordset({input}) AS (item text, fields jsonb)) WITH ORDINALITY AS i(item, fields, n))");
    sql.text = if change == Change::Delete {
        format!("WITH {accountability}, {input} {activity}")
    } else {
        let system = crate::schema::introspect::SYSTEM_SCHEMA;
        let data = if change == Change::Create { "dl.delta" } else { "r.data" };
        let mut columns: Vec<String> =
            collection.fields.iter().filter(|f| !f.is_alias()).map(|f| format!("{} AS {}", recorded_column(collection, &f.name), ident(&f.name))).collect();
        columns.extend(lists);
        // The item is read by a scalar subquery, so each is one primary-key lookup (a join
        // would be planned as a scan of the whole table); `r` is materialised so it runs once.
        format!(
            "WITH {accountability}, {input}, act AS ({activity}), \
             r AS MATERIALIZED (SELECT act.id, act.item, i.fields, i.n, \
               (SELECT to_jsonb(x) FROM (SELECT {} FROM {} t0 WHERE {}) x) AS data FROM act JOIN input i ON i.item = act.item) \
             INSERT INTO {system}.revisions (activity, collection, item, data, delta) \
             SELECT r.id, {}, r.item, {data}, dl.delta FROM r \
             CROSS JOIN LATERAL (SELECT coalesce((SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(r.data) e WHERE r.fields ? e.key), '{{}}'::jsonb) AS delta) dl \
             WHERE (SELECT a FROM acc) = 'all' AND ({create} OR dl.delta <> '{{}}'::jsonb) ORDER BY r.n RETURNING id",
            columns.join(", "),
            collection.table,
            key_matches(collection),
            bound.name,
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
