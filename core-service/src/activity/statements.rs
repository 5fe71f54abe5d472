//! The statements that record writes (docs/history.md "Activity and revisions"): a write that
//! records itself ([`recorded_write`]: the INSERT, UPDATE or DELETE is the first part of one
//! statement that writes the activity rows and revisions from its `RETURNING`), and one
//! recording statement for the writes that cannot ([`record`]). Both draw each item's activity
//! id from the activity table's sequence before writing it, in item order, so the revisions
//! join their activity rows by id, never by the item's text form.

use super::{Change, Client, recordable};
use crate::query::Planner;
use crate::query::keys::pk_expr;
use crate::schema::Collection;
use crate::schema::introspect::SYSTEM_SCHEMA;
use crate::sql::{Param, Sql, ident};
use cdapi_proto::ApiError;
use serde_json::{Value, json};
use sqlx::PgConnection;

/// The condition that row `t0` is the item `i.item` (a key in text form): the key column
/// compared with the text cast to its type, so the primary key's index finds it; composite
/// keys compare their text form.
fn key_matches(collection: &Collection) -> String {
    match collection.primary_key.as_slice() {
        [pk] => match collection.field(pk) {
            Some(f) if !f.db_type.is_empty() => format!("t0.{} = CAST(i.item AS {})", ident(pk), f.db_type),
            _ => format!("({})::text = i.item", pk_expr(collection, "t0")),
        },
        _ => format!("({})::text = i.item", pk_expr(collection, "t0")),
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
        format!(
            "acc(a) AS ((SELECT CASE WHEN c.meta IS NOT NULL AND c.meta ? 'accountability' THEN c.meta->>'accountability' ELSE 'all' END \
             FROM (SELECT 1) one LEFT JOIN {SYSTEM_SCHEMA}.collections c ON c.collection = {}))",
            self.name
        )
    }

    /// The activity id of one item (a column of the CTE `input`): the activity table's next
    /// id when `acc` records activity, NULL otherwise (no id is drawn then).
    fn activity_id() -> String {
        format!("CASE WHEN (SELECT a FROM acc) IN ('all', 'activity') THEN nextval('{SYSTEM_SCHEMA}.activity_id_seq'::regclass) END")
    }

    /// The INSERT of one activity row per row of the CTE `input` (columns `id`, `item` and `n`,
    /// the item's place) that has an id, in item order.
    fn activity(&self) -> String {
        let Bound { name, action, user, ip, agent, origin } = self;
        format!(
            "INSERT INTO {SYSTEM_SCHEMA}.activity (id, action, \"user\", ip, user_agent, collection, item, origin) \
             SELECT i.id, {action}, {user}, {ip}, {agent}, {name}, i.item, {origin} FROM input i WHERE i.id IS NOT NULL ORDER BY i.n"
        )
    }
}

/// How a revision records field `field` of row `alias` (a column of `collection`): as stored,
/// concealed fields masked, as Directus records them.
fn recorded_column(collection: &Collection, alias: &str, field: &str) -> String {
    let column = crate::sql::column(alias, field);
    match collection.cast(field) {
        Some(crate::schema::ValueCast::Conceal) => crate::query::values::concealed(&column),
        _ => column,
    }
}

/// The jsonb object of the fields `fields` of row `alias` that are columns, as recorded
/// ([`recorded_column`]); field names are bound as parameters.
fn recorded_object(sql: &mut Sql, collection: &Collection, alias: &str, fields: &[&str]) -> String {
    let mut pairs = Vec::new();
    for f in fields.iter().filter(|f| collection.has_column(f)) {
        pairs.push(format!("{}::text, {}", sql.param(Param::Text((*f).to_owned())), recorded_column(collection, alias, f)));
    }
    if pairs.is_empty() {
        return "'{}'::jsonb".to_owned();
    }
    // jsonb_build_object takes at most 100 arguments: 50 fields an object, joined.
    pairs.chunks(50).map(|c| format!("jsonb_build_object({})", c.join(", "))).collect::<Vec<_>>().join(" || ")
}

/// The select list of an update revision's `data`: every column of row `alias` as recorded,
/// then `lists` (the to-many fields, [`revision_lists`]).
fn whole_item(collection: &Collection, alias: &str, lists: &[String]) -> String {
    let mut columns: Vec<String> =
        collection.fields.iter().filter(|f| !f.is_alias()).map(|f| format!("{} AS {}", recorded_column(collection, alias, &f.name), ident(&f.name))).collect();
    columns.extend(lists.iter().cloned());
    columns.join(", ")
}

/// An update revision's to-many fields over rows `alias`, as lists of keys the way a read with
/// `fields=*` gives them ([`Planner::key_lists`], rendered into the planner's statement). None,
/// with a warning, when they cannot be planned: the write itself is sound, so it is recorded
/// without them rather than refused.
pub fn revision_lists(planner: &mut Planner<'_>, collection: &Collection, alias: &str) -> Vec<String> {
    let params = planner.sql.params.len();
    match planner.key_lists(collection, alias) {
        Ok(lists) => lists.iter().map(|l| l.render(&mut planner.sql)).collect(),
        Err(e) => {
            tracing::warn!(collection = %collection.name, error = %e.message, "a revision's to-many lists could not be planned");
            planner.sql.params.truncate(params);
            Vec::new()
        }
    }
}

/// Whether an update of `collection` setting the fields `set` leaves every to-many list of its
/// items as the update's own statement reads them ([`recorded_write`] reads them from the
/// snapshot the statement started with): not when it sets the key of a list of the same
/// collection (re-parenting items of it moves them between the lists of the items written) or
/// a field a list hangs on (a cascade moves the related items after the statement). Such
/// updates are recorded by [`record`], which reads the items after the write.
pub fn lists_outlive(collection: &Collection, set: &[&str]) -> bool {
    collection.fields.iter().all(|f| match &f.relation {
        Some(crate::schema::FieldRelation::O2M { related, related_field, local_field, .. }) => {
            let moves_own = *related == collection.name && set.contains(&related_field.as_str());
            !moves_own && !set.contains(&local_field.as_str())
        }
        _ => true,
    })
}

/// Turns `sql`, a write of items of `collection` over rows `alias` without `RETURNING` (as
/// `change` says: `INSERT INTO <table> AS <alias> (…) VALUES …`, `UPDATE <table> AS <alias>
/// SET … WHERE …` or `DELETE FROM <table> AS <alias> WHERE …`), into one statement that writes
/// the items and records them as [`record`] would, from the write's own `RETURNING`: no
/// second statement, no second read of the items. `fields`: the fields every item set (a
/// revision's `delta`, and a create's `data`); `lists`: an update's to-many fields
/// ([`revision_lists`] over `alias`), read as the statement's snapshot holds them, so the
/// write must not change them ([`lists_outlive`]). Its rows are `(key text, revision int8 or
/// NULL)`, one per item written, in the order of `RETURNING` (for an INSERT, the payload's);
/// NULL where no revision is kept (a delete, `meta.accountability`). Not for a collection with
/// rules ([`Collection::has_rules`]): PostgreSQL refuses a data-modifying `WITH` on its table.
#[allow(clippy::too_many_arguments)] // the write, what it wrote, and who wrote it
pub fn recorded_write(
    sql: &mut Sql,
    collection: &Collection,
    change: Change,
    alias: &str,
    fields: &[&str],
    lists: &[String],
    user: Option<&str>,
    client: &Client,
) {
    let write = std::mem::take(&mut sql.text);
    let key = format!("({})::text AS item", pk_expr(collection, alias));
    // What only a revision needs is built only when revisions are kept (RETURNING computes
    // every column it lists, read or not).
    let kept = |expr: String| format!("CASE WHEN (SELECT a FROM acc) = 'all' THEN {expr} END");
    let returning = match change {
        Change::Delete => key,
        Change::Create => format!("{key}, {} AS delta", kept(recorded_object(sql, collection, alias, fields))),
        Change::Update => format!(
            "{key}, {} AS delta, {} AS data",
            kept(recorded_object(sql, collection, alias, fields)),
            kept(format!("(SELECT to_jsonb(x) FROM (SELECT {}) x)", whole_item(collection, alias, lists)))
        ),
    };
    let bound = Bound::new(sql, &collection.name, change, user, client);
    let (revisions, revision) = match change {
        Change::Delete => (String::new(), "NULL::int8 FROM input i"),
        Change::Create | Change::Update => {
            let (data, set) = if change == Change::Create { ("i.delta", "") } else { ("i.data", " AND i.delta <> '{}'::jsonb") };
            (
                format!(
                    ", rev AS (INSERT INTO {SYSTEM_SCHEMA}.revisions (activity, collection, item, data, delta) \
                     SELECT i.id, {}, i.item, {data}, i.delta FROM input i WHERE i.id IS NOT NULL AND (SELECT a FROM acc) = 'all'{set} \
                     ORDER BY i.n RETURNING id, activity)",
                    bound.name
                ),
                "rev.id FROM input i LEFT JOIN rev ON rev.activity = i.id",
            )
        }
    };
    sql.text = format!(
        "WITH {}, w AS ({write} RETURNING {returning}), \
         input AS (SELECT w.*, row_number() OVER () AS n, {} AS id FROM w), act AS ({}){revisions} \
         SELECT i.item, {revision} ORDER BY i.n",
        bound.accountability(),
        Bound::activity_id(),
        bound.activity(),
    );
}

/// Records `change` of the items `keys` (text form; duplicates recorded once) of `collection`,
/// each of which set the fields `fields[i]` (or all of `fields[0]` when it holds one list for
/// all), for the user of `planner`'s variables and `client`, in one statement on `conn` (the
/// write's transaction); returns the ids of the revisions written, in item order. `planner`
/// (fresh, over the whole snapshot) writes the statement; an update's `data` lists the item's
/// to-many keys with it ([`revision_lists`]). Writes that can record themselves do
/// ([`recorded_write`]). Errors: database errors.
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
    let lists = if change == Change::Update { revision_lists(&mut planner, collection, "t0") } else { Vec::new() };
    let user = planner.vars.user.as_deref();
    let mut sql = std::mem::take(&mut planner.sql);
    let input = format!("{}::jsonb", sql.param(Param::Text(Value::Array(items).to_string())));
    let bound = Bound::new(&mut sql, &collection.name, change, user, client);
    let input = format!(
        "input AS (SELECT r.item, r.fields, r.n, {} AS id FROM ROWS FROM (jsonb_to_recordset({input}) AS (item text, fields jsonb)) WITH ORDINALITY AS r(item, fields, n))",
        Bound::activity_id()
    );
    let (accountability, activity) = (bound.accountability(), bound.activity());
    sql.text = if change == Change::Delete {
        format!("WITH {accountability}, {input} {activity}")
    } else {
        let data = if change == Change::Create { "dl.delta" } else { "r.data" };
        // The item is read by a scalar subquery, so each is one primary-key lookup (a join
        // would be planned as a scan of the whole table); `r` is materialised so it runs once.
        format!(
            "WITH {accountability}, {input}, act AS ({activity}), \
             r AS MATERIALIZED (SELECT i.id, i.item, i.fields, i.n, \
               (SELECT to_jsonb(x) FROM (SELECT {} FROM {} t0 WHERE {}) x) AS data FROM input i WHERE i.id IS NOT NULL AND (SELECT a FROM acc) = 'all') \
             INSERT INTO {SYSTEM_SCHEMA}.revisions (activity, collection, item, data, delta) \
             SELECT r.id, {}, r.item, {data}, dl.delta FROM r \
             CROSS JOIN LATERAL (SELECT coalesce((SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(r.data) e WHERE r.fields ? e.key), '{{}}'::jsonb) AS delta) dl \
             WHERE {create} OR dl.delta <> '{{}}'::jsonb ORDER BY r.n RETURNING id",
            whole_item(collection, "t0", &lists),
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
