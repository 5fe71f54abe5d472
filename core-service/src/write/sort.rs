//! Manual order (Directus's `POST /utils/sort/:collection` with `{item, to}`; docs/history.md "Manual
//! order"): moves `item` to the place of `to` in the collection's `meta.sort_field` order, and
//! shifts the items between them by one, in the request's transaction.
//!
//! As Directus (checked against 11.3.5): items without a sort value get one first (after the
//! highest, in key order); when two items share a value, all are numbered 1, 2, … in their
//! order; then `item` takes `to`'s value and the items between the two move by one towards
//! `item`'s old place. Unlike Directus, which only asks for some update permission
//! on the collection, every item whose value changes must be one the caller may update with the
//! sort field granted (else FORBIDDEN and nothing changes), and the change is recorded in the
//! activity and revisions like any update (field validation rules are not evaluated: the values
//! are positions the server computes). Concurrent sorts of one collection run one after another
//! (a transaction-scoped advisory lock).

use super::{Writer, writable};
use crate::activity::Change;
use crate::permissions::{Access, Action, scope};
use crate::query::Planner;
use crate::query::keys::pk_expr;
use crate::schema::{Collection, FieldType};
use crate::sql::{Param, column, ident};
use cdapi_proto::ApiError;
use cdapi_proto::v1::Filter;
use sqlx::Row;
use std::sync::Arc;

impl Writer<'_> {
    /// Moves `item` to `to`'s place (both primary keys in text form) and returns the keys whose
    /// sort value changed. Errors: INVALID_PAYLOAD (no sort field, a sort field that is not an
    /// integer, a composite key), FORBIDDEN (either item missing or outside the caller's update
    /// rows, the sort field not granted, an item in between the caller may not update).
    pub async fn sort(&mut self, collection: &Collection, item: &str, to: &str) -> Result<Vec<String>, ApiError> {
        writable(collection)?;
        let Some(sort) = collection.sort_field.clone() else {
            return Err(ApiError::invalid_payload(format!("Collection \"{}\" doesn't have a sort field", collection.name)));
        };
        if collection.primary_key.len() != 1 {
            return Err(ApiError::invalid_payload("Sorting needs a single-column primary key"));
        }
        if !collection.field(&sort).is_some_and(|f| matches!(f.field_type, FieldType::Integer | FieldType::BigInteger)) {
            return Err(ApiError::invalid_payload(format!("The sort field \"{sort}\" must be an integer")));
        }
        let cond = self.sort_condition(collection, &sort)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))").bind(&collection.table).execute(&mut *self.conn).await.map_err(crate::db::map_write_error)?;
        let mut changed = self.number_unsorted(collection, &sort, cond.as_ref()).await?;
        changed.extend(self.renumber_duplicates(collection, &sort, cond.as_ref()).await?);
        let (Some(from), Some(target)) =
            (self.sort_value(collection, &sort, item, cond.as_ref()).await?, self.sort_value(collection, &sort, to, cond.as_ref()).await?)
        else {
            return Err(ApiError::forbidden());
        };
        if from != target {
            changed.extend(self.shift(collection, &sort, item, from, target, cond.as_ref()).await?);
        }
        changed.sort();
        changed.dedup();
        self.record(collection, Change::Update, &changed, &[vec![sort.as_str()]]).await?;
        Ok(changed)
    }

    /// The rows the caller may re-sort: those of its update rows granting the sort field (`None`:
    /// all). FORBIDDEN without an update grant of the field.
    fn sort_condition(&self, collection: &Collection, sort: &str) -> Result<Option<Arc<Filter>>, ApiError> {
        if matches!(self.access, Access::Admin) {
            return Ok(None);
        }
        let grant = self.grant(collection, Action::Update)?;
        scope::write_condition(&grant, &collection.name, &[sort], &[])
    }

    /// `cond` over row `t0` as SQL (`true` for none), in `planner`'s parameters.
    fn condition_sql(planner: &mut Planner<'_>, collection: &Collection, cond: Option<&Arc<Filter>>) -> Result<String, ApiError> {
        Ok(match cond {
            Some(f) => format!("coalesce(({}), false)", planner.row_condition(collection, "t0", f)?),
            None => "true".to_owned(),
        })
    }

    /// Gives the caller's items without a sort value one, after the highest, in key order;
    /// returns their keys.
    async fn number_unsorted(&mut self, collection: &Collection, sort: &str, cond: Option<&Arc<Filter>>) -> Result<Vec<String>, ApiError> {
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let allowed = Self::condition_sql(&mut planner, collection, cond)?;
        let (key, s, table) = (column("t0", &collection.primary_key[0]), column("t0", sort), &collection.table);
        let mut sql = planner.sql;
        sql.text = format!(
            "WITH l AS (SELECT {key} AS k FROM {table} t0 WHERE {s} IS NULL AND {allowed} FOR UPDATE), \
             n AS (SELECT k, row_number() OVER (ORDER BY k) AS i FROM l), \
             m AS (SELECT coalesce(max({s}), 0) AS v FROM {table} t0) \
             UPDATE {table} AS u SET {sort_col} = m.v + n.i FROM n, m WHERE {u_key} = n.k RETURNING ({u_pk})::text",
            sort_col = ident(sort),
            u_key = column("u", &collection.primary_key[0]),
            u_pk = pk_expr(collection, "u"),
        );
        self.keys(&sql).await
    }

    /// When two items share a sort value, numbers every item 1, 2, … in the current order (ties
    /// in key order), as Directus does; FORBIDDEN (before any change) when an item whose value
    /// would change is not the caller's to sort. Returns the keys changed.
    async fn renumber_duplicates(&mut self, collection: &Collection, sort: &str, cond: Option<&Arc<Filter>>) -> Result<Vec<String>, ApiError> {
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let allowed = Self::condition_sql(&mut planner, collection, cond)?;
        let (key, s, table) = (column("t0", &collection.primary_key[0]), column("t0", sort), &collection.table);
        let mut sql = planner.sql;
        let order = format!(
            "WITH o AS (SELECT {key} AS k, row_number() OVER (ORDER BY {s}, {key}) AS i FROM {table} t0 \
             WHERE {s} IS NOT NULL AND EXISTS (SELECT 1 FROM {table} t0 WHERE {s} IS NOT NULL GROUP BY {s} HAVING count(*) > 1))"
        );
        sql.text = format!("{order} SELECT count(*) FROM o JOIN {table} t0 ON {key} = o.k WHERE {s} <> o.i AND NOT {allowed}");
        let outside: i64 = sql.query().fetch_one(&mut *self.conn).await.and_then(|r| r.try_get(0)).map_err(crate::db::map_write_error)?;
        if outside > 0 {
            return Err(ApiError::forbidden());
        }
        sql.text = format!(
            "{order} UPDATE {table} AS u SET {col} = o.i FROM o, {table} t0 WHERE {u_key} = o.k AND {key} = o.k AND {s} <> o.i AND {allowed} RETURNING ({u_pk})::text",
            col = ident(sort),
            u_key = column("u", &collection.primary_key[0]),
            u_pk = pk_expr(collection, "u"),
        );
        self.keys(&sql).await
    }

    /// The sort value of item `key` when the caller may re-sort it (locked for the rest of the
    /// transaction); `None` when it does not exist or is not the caller's to sort.
    async fn sort_value(&mut self, collection: &Collection, sort: &str, key: &str, cond: Option<&Arc<Filter>>) -> Result<Option<i64>, ApiError> {
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let Ok(selector) = planner.keys_condition(collection, "t0", &[key.to_owned()]) else { return Ok(None) };
        let allowed = Self::condition_sql(&mut planner, collection, cond)?;
        let mut sql = planner.sql;
        sql.text = format!("SELECT ({})::bigint FROM {} t0 WHERE {selector} AND {allowed} FOR UPDATE", column("t0", sort), collection.table);
        let row = sql.query().fetch_optional(&mut *self.conn).await.map_err(crate::db::map_write_error)?;
        row.map(|r| r.try_get::<Option<i64>, _>(0).map_err(crate::db::map_error)).transpose().map(Option::flatten)
    }

    /// Sets `item`'s sort value to `target` and moves the items from `target` to `from` one
    /// place towards `from`; FORBIDDEN (before any change) when one of them is not the caller's
    /// to sort. Returns the keys changed.
    async fn shift(
        &mut self,
        collection: &Collection,
        sort: &str,
        item: &str,
        from: i64,
        target: i64,
        cond: Option<&Arc<Filter>>,
    ) -> Result<Vec<String>, ApiError> {
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let is_item = planner.keys_condition(collection, "t0", &[item.to_owned()])?;
        let allowed = Self::condition_sql(&mut planner, collection, cond)?;
        let mut sql = planner.sql;
        let (lo, hi) = (sql.param(Param::Text(from.min(target).to_string())), sql.param(Param::Text(from.max(target).to_string())));
        let s = column("t0", sort);
        let between = format!("{s} BETWEEN CAST({lo} AS bigint) AND CAST({hi} AS bigint) AND NOT ({is_item})");
        sql.text = format!("SELECT count(*) FROM {} t0 WHERE {between} AND NOT {allowed}", collection.table);
        let outside: i64 = sql.query().fetch_one(&mut *self.conn).await.and_then(|r| r.try_get(0)).map_err(crate::db::map_write_error)?;
        if outside > 0 {
            return Err(ApiError::forbidden());
        }
        let step = if from < target { "- 1" } else { "+ 1" };
        let target = sql.param(Param::Text(target.to_string()));
        sql.text = format!(
            "UPDATE {table} AS u SET {col} = CASE WHEN ({is_item}) THEN CAST({target} AS bigint) ELSE u.{col} {step} END \
             FROM {table} t0 WHERE {u_key} = {t_key} AND (({is_item}) OR ({between})) AND {allowed} RETURNING ({u_pk})::text",
            table = collection.table,
            col = ident(sort),
            u_key = column("u", &collection.primary_key[0]),
            t_key = column("t0", &collection.primary_key[0]),
            u_pk = pk_expr(collection, "u"),
        );
        self.keys(&sql).await
    }
}
