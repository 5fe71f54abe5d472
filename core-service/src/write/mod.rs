//! Writes (Directus docs "Items"; docs/what-works.md): create one or many, update one, many (by
//! keys or by query) or the singleton, delete one or many. Each request runs in ONE
//! transaction, its reply (the written items read back with the request's `fields`) included,
//! so a failure leaves the database exactly as before. Batches are set-based: a create of 1,000
//! items is one INSERT with 1,000 rows.
//!
//! Layout: [`payload`] (validation and values), [`relational`] (nested relational data),
//! [`keys`] (write keys: a write sent to two replicas is applied once), [`server_owned`]
//! (fields no client writes), [`auto_values`] (fields the server fills), [`sort`] (manual
//! order), [`import`] (upserts of imported items), [`users`] (user accounts: secrets, `me`),
//! [`comments`] (comments and their mentions), this module
//! (statements and their order).
//! Database constraint errors map to API codes in [`crate::db::map_write_error`].

pub mod access;
pub mod auto_values;
pub mod comments;
pub mod import;
pub mod keys;
pub mod payload;
pub mod relational;
pub mod server_owned;
pub mod shares;
pub mod sort;
pub mod users;

use crate::activity::Change;
use crate::permissions::{Access, Action, Grant, scope, validate};
use crate::query::keys::pk_expr;
use crate::query::{Planner, Variables};
use crate::schema::{Collection, Schema};
use crate::sql::{Param, Sql, ident};
use crate::validation_rule::ValidationRule;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{FieldCondition, Filter, Operator, Query, Value as PbValue, filter, value};
use payload::{ColumnValue, Mode};
use serde_json::{Map, Value};
use sqlx::{PgConnection, Row};
use std::sync::Arc;

/// What the writes of one request need.
pub struct Writer<'a> {
    /// The whole schema snapshot (writes address every field; permissions are checked here).
    pub schema: &'a Schema,
    /// The schema the caller reads through (the written items are read back with it).
    pub read: &'a Schema,
    /// Who is writing: admin access, or a role whose grants apply (docs/permissions.md).
    pub access: &'a Access,
    /// The transaction's connection.
    pub conn: &'a mut PgConnection,
    /// `limit` rules for reading the results back.
    pub limits: crate::query::Limits,
    /// Dynamic variables (for `query` selectors and read-back).
    pub vars: &'a Variables,
    /// What user writes need (sessions to end, password policy and hasher).
    pub accounts: &'a users::Accounts,
    /// Where the request came from: recorded with the activity of each write
    /// ([`crate::activity`]).
    pub client: &'a crate::activity::Client,
    /// Where the write stands in a nested write (the `parent` of nested items' revisions).
    pub nesting: crate::activity::Nesting,
}

fn writable(collection: &Collection) -> Result<(), ApiError> {
    if collection.read_only {
        return Err(ApiError::forbidden());
    }
    if collection.primary_key.is_empty() {
        return Err(ApiError::invalid_payload(format!("Collection \"{}\" has no primary key; it cannot be written", collection.name)));
    }
    Ok(())
}

/// The caller's view of `collection` (query selectors of writes are read conditions: they may
/// only name what the caller can read). FORBIDDEN when the caller cannot read it at all.
fn readable(read: &Schema, collection: &Collection) -> Result<std::sync::Arc<Collection>, ApiError> {
    read.collection(&collection.name).cloned().ok_or_else(ApiError::forbidden)
}

fn objects(data: &Value) -> Result<Vec<&Map<String, Value>>, ApiError> {
    match data {
        Value::Array(items) => items.iter().map(|i| i.as_object().ok_or_else(|| ApiError::invalid_payload("Every item must be an object"))).collect(),
        Value::Object(o) => Ok(vec![o]),
        _ => Err(ApiError::invalid_payload("The payload must be an object or an array of objects")),
    }
}

impl<'w> Writer<'w> {
    /// The caller's grant for `action` on `collection`; FORBIDDEN without one.
    pub fn grant(&self, collection: &Collection, action: Action) -> Result<std::borrow::Cow<'_, Grant>, ApiError> {
        self.access.grant(self.schema, &collection.name, action)
    }

    /// Checks a payload object against the caller's permission rows for `action` (Create or
    /// Update; docs/permissions.md): every field (and every name in `extra`: write-only secrets, relational
    /// fields) must be granted by a row whose validation the payload passes (rules evaluated by
    /// Postgres on the typed values, [`validate`]); presets are applied under the payload on
    /// create. Returns the payload to write and the condition every item written must meet
    /// (`None` = any), for [`Self::scoped`]. Every payload a write stores passes here, so the
    /// fields only the server writes ([`server_owned::refuse`]) and text PostgreSQL cannot
    /// store ([`payload::refuse_nul`]) are refused here, for every caller, before any
    /// statement sees the payload. Errors: FORBIDDEN (a field no row grants, worded as
    /// Directus), FAILED_VALIDATION, INVALID_PAYLOAD (a server-owned field, a NUL character, a
    /// rule that cannot be evaluated).
    async fn permitted(
        &mut self,
        collection: &Collection,
        action: Action,
        obj: &Map<String, Value>,
        extra: &[&str],
    ) -> Result<(Map<String, Value>, Option<Arc<Filter>>), ApiError> {
        server_owned::refuse(&collection.name, obj)?;
        payload::refuse_nul(obj)?;
        if matches!(self.access, Access::Admin) {
            return Ok((obj.clone(), None));
        }
        let own_shares = if collection.name == shares::SHARES { shares::check(self, action, obj).await? } else { None };
        let grant = self.grant(collection, action)?.into_owned();
        let mut out = obj.clone();
        if action == Action::Create {
            for (k, v) in grant.presets() {
                if !out.contains_key(&k) {
                    out.insert(k, validate::resolve(&v, self.vars));
                }
            }
        }
        let fields: Vec<&str> = obj.keys().map(String::as_str).chain(extra.iter().copied()).collect();
        // Only rows that could grant one of the fields matter; their rules run in one statement.
        let ruled: Vec<(usize, &ValidationRule)> = grant
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| fields.iter().any(|f| r.writes(&collection.name, f)))
            .filter_map(|(i, r)| r.validation.as_deref().map(|v| (i, v)))
            .collect();
        let mut outcomes: Vec<Result<(), ApiError>> = vec![Ok(()); grant.rows.len()];
        if !ruled.is_empty() {
            let whole = self.schema.collection(&collection.name).cloned().ok_or_else(ApiError::forbidden)?;
            let planner = Planner::new(self.schema, self.limits, self.vars);
            let rules: Vec<&ValidationRule> = ruled.iter().map(|(_, v)| *v).collect();
            let results = validate::check(&mut *self.conn, planner, &whole, &rules, &out, action == Action::Update).await?;
            for ((i, _), r) in ruled.iter().zip(results) {
                outcomes[*i] = r;
            }
        }
        let cond = scope::write_condition(&grant, &collection.name, &fields, &outcomes)?;
        Ok((out, crate::permissions::all_of([cond, own_shares])))
    }

    /// The rows a delete may remove: those some delete row's filter matches. FORBIDDEN without
    /// a delete grant.
    fn delete_scope(&self, collection: &Collection) -> Result<Option<Arc<Filter>>, ApiError> {
        if matches!(self.access, Access::Admin) {
            return Ok(None);
        }
        Ok(self.grant(collection, Action::Delete)?.row_filter())
    }

    /// The keys (text form) of the items a write's `query` selects, in its order (docs/permissions.md,
    /// Directus's getKeysByQuery): its filter, search, sort, limit, offset and page, read
    /// under the caller's read permissions (it may only name what they can read; FORBIDDEN
    /// for a collection they cannot read). Without `limit`, the default limit (100), as Directus.
    pub(crate) async fn query_keys(&mut self, collection: &Collection, selector: &Query) -> Result<Vec<String>, ApiError> {
        let read: &'w Schema = self.read;
        let view = readable(read, collection)?;
        let limits = crate::query::Limits { max: None, ..self.limits };
        let sql = Planner::new(read, limits, self.vars).select_keys(&view, selector)?;
        self.keys(&sql).await
    }

    /// `selector AND cond` (a permission condition over `t0`) for statements that change rows.
    fn scoped(&self, planner: &mut Planner<'_>, collection: &Collection, cond: Option<&Arc<Filter>>, selector: String) -> Result<String, ApiError> {
        Ok(match cond {
            Some(f) => format!("({selector}) AND {}", planner.row_condition(collection, "t0", f)?),
            None => selector,
        })
    }

    async fn keys(&mut self, sql: &Sql) -> Result<Vec<String>, ApiError> {
        let rows = sql.query().fetch_all(&mut *self.conn).await.map_err(crate::db::map_write_error)?;
        rows.iter().map(|r| r.try_get::<String, _>(0).map_err(crate::db::map_error)).collect()
    }

    /// Creates the items of `data` (an object or an array of objects) with one INSERT and
    /// returns their keys (text form) in payload order.
    pub async fn create(&mut self, collection: &Collection, data: &Value) -> Result<Vec<String>, ApiError> {
        self.create_with(collection, data, &[]).await
    }

    /// [`Self::create`], where the caller must also be granted the fields `extra` (relational
    /// lists and write-only values written by other statements).
    pub async fn create_with(&mut self, collection: &Collection, data: &Value, extra: &[&str]) -> Result<Vec<String>, ApiError> {
        writable(collection)?;
        let items = objects(data)?;
        if items.is_empty() {
            return Ok(Vec::new());
        }
        if items.iter().any(|o| relational::has_nested(collection, o)) {
            let mut keys = Vec::with_capacity(items.len());
            for o in items {
                keys.push(self.save_with(collection, o, None, 0, extra).await?);
            }
            return Ok(keys);
        }
        let mut checked = Vec::with_capacity(items.len());
        for o in items {
            checked.push(self.permitted(collection, Action::Create, o, extra).await?);
        }
        let conds: Vec<Option<Arc<Filter>>> = checked.iter().map(|(_, c)| c.clone()).collect();
        let mut items: Vec<Map<String, Value>> = checked.into_iter().map(|(o, _)| o).collect();
        for o in &mut items {
            auto_values::apply(collection, true, self.vars, o);
        }
        let mut rows: Vec<Vec<ColumnValue<'_>>> = items.iter().map(|o| payload::columns(collection, o, Mode::Create)).collect::<Result<_, _>>()?;
        for row in &mut rows {
            self.hash_values(row).await?;
        }
        // One column list for all rows; a row without a column writes DEFAULT.
        let mut cols: Vec<&str> = Vec::new();
        for row in &rows {
            for (f, _) in row {
                if !cols.contains(&f.name.as_str()) {
                    cols.push(&f.name);
                }
            }
        }
        let mut sql = Sql::default();
        let target = &collection.table;
        if cols.is_empty() {
            let first = collection
                .fields
                .first()
                .map(|f| f.name.as_str())
                .ok_or_else(|| ApiError::internal_because(format!("\"{}\" has no field to insert defaults into", collection.name)))?;
            let values = vec!["(DEFAULT)"; rows.len()].join(", ");
            sql.text = format!("INSERT INTO {target} AS t0 ({}) VALUES {values}", ident(first));
        } else {
            let mut values = Vec::with_capacity(rows.len());
            for row in &rows {
                let mut cells = Vec::with_capacity(cols.len());
                for c in &cols {
                    cells.push(match row.iter().find(|(f, _)| f.name == *c) {
                        None => "DEFAULT".to_owned(),
                        Some((_, None)) => "NULL".to_owned(),
                        Some((f, Some(v))) => sql.cast_param(v.clone(), &f.db_type),
                    });
                }
                values.push(format!("({})", cells.join(", ")));
            }
            let names: Vec<String> = cols.iter().map(|c| ident(c)).collect();
            sql.text = format!("INSERT INTO {target} AS t0 ({}) VALUES {}", names.join(", "), values.join(", "));
        }
        let set: Vec<Vec<&str>> = items.iter().map(|o| o.keys().map(String::as_str).collect()).collect();
        let keys = if self.records_itself(collection) && set.iter().all(|f| same_fields(f, &set[0])) {
            // The common create (one item, or a batch of like items): the INSERT records itself.
            self.recorded(sql, collection, Change::Create, "t0", &set[0], &[]).await?
        } else {
            let keys = self.returned_keys(collection, "t0", sql).await?;
            self.record(collection, Change::Create, &keys, &set).await?;
            keys
        };
        self.follow_sequence(collection, &items).await?;
        // Items checked against the same condition are checked together.
        let mut groups: Vec<(Option<Arc<Filter>>, Vec<String>)> = Vec::new();
        for (k, c) in keys.iter().zip(conds) {
            match groups.iter_mut().find(|(g, _)| *g == c) {
                Some((_, ks)) => ks.push(k.clone()),
                None => groups.push((c, vec![k.clone()])),
            }
        }
        for (cond, ks) in groups {
            if let Some(cond) = cond {
                self.created_in_scope(collection, &ks, &cond).await?;
            }
        }
        Ok(keys)
    }

    /// After items were created with keys given for a whole-number key that a sequence fills
    /// (serial, identity by default), moves the sequence up to the largest key when it is
    /// behind it, so that later creates do not collide with them (Directus resets it the same
    /// way). It never moves back and takes no value from the sequence. Nothing for other keys.
    async fn follow_sequence(&mut self, collection: &Collection, items: &[Map<String, Value>]) -> Result<(), ApiError> {
        let [pk] = collection.primary_key.as_slice() else { return Ok(()) };
        let Some(field) = collection.field(pk) else { return Ok(()) };
        if !field.field_type.is_integer() || !field.has_default || !items.iter().any(|o| o.get(pk).is_some_and(|v| !v.is_null())) {
            return Ok(());
        }
        let mut sql = Sql::default();
        let table = sql.param(Param::Text(collection.table.clone()));
        let column = sql.param(Param::Text(pk.clone()));
        sql.text = format!(
            "SELECT setval(s, m) FROM (SELECT pg_get_serial_sequence({table}, {column}) AS s, (SELECT max({}) FROM {}) AS m) x \
             WHERE s IS NOT NULL AND m > coalesce(pg_sequence_last_value(s::regclass), 0)",
            ident(pk),
            collection.table
        );
        sql.query().fetch_all(&mut *self.conn).await.map_err(crate::db::map_write_error)?;
        Ok(())
    }

    /// FORBIDDEN (and so a rollback) unless every created item matches `cond`, the condition of
    /// the caller's create rows (e.g. `owner = $CURRENT_USER`).
    async fn created_in_scope(&mut self, collection: &Collection, keys: &[String], cond: &Filter) -> Result<(), ApiError> {
        if keys.is_empty() {
            return Ok(());
        }
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let cond = planner.row_condition(collection, "t0", cond)?;
        let selector = planner.keys_condition(collection, "t0", keys)?;
        let mut sql = planner.sql;
        sql.text = format!("SELECT count(*)::text FROM {} t0 WHERE {selector} AND {cond}", collection.table);
        let n: usize = self.keys(&sql).await?.pop().and_then(|n| n.parse().ok()).unwrap_or(0);
        if n != dedup_len(keys) {
            return Err(ApiError::forbidden());
        }
        Ok(())
    }

    /// Hash fields' values as they are stored: argon2 hashes of what was sent (Directus's `hash`
    /// fields; null stays null), through the bounded hasher shared with passwords
    /// (PASSWORD_HASH_CONCURRENCY; SERVICE_UNAVAILABLE with `retry_after` when it is busy).
    async fn hash_values(&self, cols: &mut [ColumnValue<'_>]) -> Result<(), ApiError> {
        for (field, value) in cols.iter_mut() {
            if field.field_type == crate::schema::FieldType::Hash
                && let Some(text) = value.take()
            {
                *value = Some(self.accounts.hasher.hash(text).await?);
            }
        }
        Ok(())
    }

    /// Applies `data` to the items matched by `selector` (a condition on `t0`) and returns their
    /// keys. Errors: FAILED_VALIDATION, INVALID_PAYLOAD (empty data).
    async fn update_where(
        &mut self,
        collection: &Collection,
        data: &Value,
        mut planner: Planner<'_>,
        selector: String,
        extra: &[&str],
    ) -> Result<Vec<String>, ApiError> {
        writable(collection)?;
        let obj = data.as_object().ok_or_else(|| ApiError::invalid_payload("\"data\" must be an object"))?;
        let (mut obj, cond) = self.permitted(collection, Action::Update, obj, extra).await?;
        auto_values::apply(collection, false, self.vars, &mut obj);
        let selector = self.scoped(&mut planner, collection, cond.as_ref(), selector)?;
        let mut cols = payload::columns(collection, &obj, Mode::Update)?;
        self.hash_values(&mut cols).await?;
        if cols.is_empty() {
            // Nothing left to set (only the key, or keys that are no field): nothing changes,
            // the items are still checked and answered, as Directus does.
            let mut sql = planner.sql;
            sql.text = format!("SELECT ({})::text FROM {} AS t0 WHERE {selector} ORDER BY 1 FOR UPDATE", pk_expr(collection, "t0"), collection.table);
            return self.keys(&sql).await;
        }
        let set: Vec<&str> = cols.iter().map(|(f, _)| f.name.as_str()).collect();
        // A nested write records this update after the item's lists (relational::save_here).
        let held = self.nesting.hold;
        if held {
            self.nesting.held = set.iter().map(|f| (*f).to_owned()).collect();
        }
        // The update records itself, its revisions listing the to-many keys, unless it may move
        // them, or the table's own triggers may rewrite the rows after its RETURNING.
        let records_itself =
            !held && self.records_itself(collection) && !collection.rewritten_after_update && crate::activity::statements::lists_outlive(collection, &set);
        let lists = if records_itself { crate::activity::revision_lists(&mut planner, collection, "u") } else { Vec::new() };
        let mut sql = planner.sql;
        let sets: Vec<String> = cols
            .iter()
            .map(|(f, v)| {
                let value = match v {
                    Some(v) => sql.cast_param(v.clone(), &f.db_type),
                    None => "NULL".into(),
                };
                format!("{} = {value}", ident(&f.name))
            })
            .collect();
        sql.text = locked_write(collection, &format!("UPDATE {} AS u SET {}", collection.table, sets.join(", ")), &selector);
        if records_itself {
            return self.recorded(sql, collection, Change::Update, "u", &set, &lists).await;
        }
        let keys = self.returned_keys(collection, "u", sql).await?;
        if !held {
            self.record(collection, Change::Update, &keys, &[set]).await?;
        }
        Ok(keys)
    }

    /// Whether a write of `collection` records itself in its own statement
    /// ([`crate::activity::recorded_write`]): always, but for tables with rules.
    fn records_itself(&self, collection: &Collection) -> bool {
        crate::activity::recordable(collection) && !collection.has_rules
    }

    /// Runs `sql`, a write of `collection` over rows `alias` without `RETURNING`, as a write
    /// that records itself ([`crate::activity::recorded_write`], for the request's user and
    /// client) and returns the keys it wrote, its revisions noted for nested writes.
    async fn recorded(
        &mut self,
        mut sql: Sql,
        collection: &Collection,
        change: Change,
        alias: &str,
        set: &[&str],
        lists: &[String],
    ) -> Result<Vec<String>, ApiError> {
        crate::activity::recorded_write(&mut sql, collection, change, alias, set, lists, self.vars.user.as_deref(), self.client);
        let rows = sql.query().fetch_all(&mut *self.conn).await.map_err(crate::db::map_write_error)?;
        let mut keys = Vec::with_capacity(rows.len());
        let mut revisions = Vec::with_capacity(rows.len());
        for r in &rows {
            keys.push(r.try_get::<String, _>(0).map_err(crate::db::map_error)?);
            revisions.extend(r.try_get::<Option<i64>, _>(1).map_err(crate::db::map_error)?);
        }
        self.nesting.note(revisions);
        Ok(keys)
    }

    /// Runs `sql`, a write of `collection` over rows `alias` without `RETURNING`, returning the
    /// keys of the rows it wrote.
    async fn returned_keys(&mut self, collection: &Collection, alias: &str, mut sql: Sql) -> Result<Vec<String>, ApiError> {
        sql.text.push_str(&format!(" RETURNING ({})::text", pk_expr(collection, alias)));
        self.keys(&sql).await
    }

    /// Records a change of `keys` in activity and revisions ([`crate::activity::record`]).
    pub(crate) async fn record(&mut self, collection: &Collection, change: Change, keys: &[String], set: &[Vec<&str>]) -> Result<(), ApiError> {
        let planner = Planner::new(self.schema, self.limits, self.vars);
        let ids = crate::activity::record(&mut *self.conn, planner, collection, change, keys, set, self.client).await?;
        self.nesting.note(ids);
        Ok(())
    }

    /// Updates the items with these keys; FORBIDDEN unless every key exists and the caller's
    /// update rows allow the payload on each (docs/permissions.md).
    pub async fn update_keys(&mut self, collection: &Collection, keys: &[String], data: &Value) -> Result<Vec<String>, ApiError> {
        self.update_keys_with(collection, keys, data, &[]).await
    }

    /// [`Self::update_keys`], where the caller must also be granted the fields `extra` (values
    /// written by another statement: a user's password or token).
    pub async fn update_keys_with(&mut self, collection: &Collection, keys: &[String], data: &Value, extra: &[&str]) -> Result<Vec<String>, ApiError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(obj) = data.as_object().filter(|o| relational::has_nested(collection, o)) {
            writable(collection)?;
            let mut done = Vec::with_capacity(keys.len());
            for k in keys {
                done.push(self.save_with(collection, obj, Some(k.clone()), 0, extra).await?);
            }
            return Ok(done);
        }
        if data.as_object().is_some_and(Map::is_empty) && !extra.is_empty() && !auto_values::on_update(collection) {
            // Only write-only or relational values (no automatic ones to set): the items must
            // exist and be writable for them.
            for k in keys {
                self.require_update(collection, k, &Map::new(), extra).await?;
            }
            return Ok(keys.to_vec());
        }
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let selector = planner.keys_condition(collection, "t0", keys)?;
        let done = self.update_where(collection, data, planner, selector, extra).await?;
        if done.len() != dedup_len(keys) {
            return Err(ApiError::forbidden());
        }
        Ok(done)
    }

    /// Updates a batch of items, each object carrying its own primary key (single-column keys).
    /// Each item is one update of [`users::update_keys`], so a batch of users keeps every
    /// rule of a single user update (password hashing and policy, token hashing, sessions ended,
    /// sensitive fields; docs/security.md "Sessions"). FORBIDDEN when a key does not exist;
    /// INVALID_PAYLOAD when an object has no key.
    pub async fn update_batch(&mut self, collection: &Collection, data: &Value) -> Result<Vec<String>, ApiError> {
        writable(collection)?;
        let [pk] = collection.primary_key.as_slice() else {
            return Err(ApiError::invalid_payload("Batch updates need a single-column primary key"));
        };
        let items = match data {
            Value::Array(_) => objects(data)?,
            _ => return Err(ApiError::invalid_payload("A batch update is an array of objects")),
        };
        let mut keys = Vec::with_capacity(items.len());
        for item in items {
            let key = match item.get(pk) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => return Err(ApiError::invalid_payload(format!("Every item of a batch update needs its \"{pk}\""))),
            };
            let mut rest = item.clone();
            rest.remove(pk);
            let done = users::update_keys(self, collection, std::slice::from_ref(&key), Value::Object(rest)).await?;
            keys.push(done.into_iter().next().ok_or_else(ApiError::forbidden)?);
        }
        Ok(keys)
    }

    /// Updates the singleton's row, creating it on the first write. The row is locked first;
    /// when it exists but is outside the caller's update rows the answer is FORBIDDEN (never a
    /// second row); concurrent first writes create one row (advisory lock).
    pub async fn update_singleton(&mut self, collection: &Collection, data: &Value) -> Result<(), ApiError> {
        writable(collection)?;
        let mut sql = Sql::default();
        let name = sql.param(crate::sql::Param::Text(collection.table.clone()));
        sql.text = format!("SELECT pg_advisory_xact_lock(hashtext({name}))::text");
        self.keys(&sql).await?;
        let mut sql = Sql::default();
        sql.text = format!("SELECT ({})::text FROM {} t0 ORDER BY 1 LIMIT 1 FOR UPDATE", pk_expr(collection, "t0"), collection.table);
        match self.keys(&sql).await?.pop() {
            Some(key) => {
                self.update_keys(collection, &[key], data).await?;
            }
            None => {
                self.create(collection, data).await?;
            }
        }
        Ok(())
    }

    /// Deletes the items with these keys; FORBIDDEN unless every key exists and is within the
    /// caller's delete rows.
    pub async fn delete_keys(&mut self, collection: &Collection, keys: &[String]) -> Result<(), ApiError> {
        writable(collection)?;
        if keys.is_empty() {
            return Ok(());
        }
        let cond = self.delete_scope(collection)?;
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let selector = planner.keys_condition(collection, "t0", keys)?;
        let selector = self.scoped(&mut planner, collection, cond.as_ref(), selector)?;
        let mut sql = planner.sql;
        sql.text = locked_write(collection, &format!("DELETE FROM {} AS u", collection.table), &selector);
        let records_itself = self.records_itself(collection);
        let deleted = if records_itself {
            self.recorded(sql, collection, Change::Delete, "u", &[], &[]).await?
        } else {
            self.returned_keys(collection, "u", sql).await?
        };
        // A failed check rolls the recording back with the delete.
        if deleted.len() != dedup_len(keys) {
            return Err(ApiError::forbidden());
        }
        if records_itself {
            return Ok(());
        }
        self.record(collection, Change::Delete, &deleted, &[]).await
    }

    /// Deletes exactly the items a query selects (as [`Self::update_query`]).
    pub async fn delete_query(&mut self, collection: &Collection, selector: &Query) -> Result<(), ApiError> {
        writable(collection)?;
        let keys = self.query_keys(collection, selector).await?;
        self.delete_keys(collection, &keys).await
    }

    /// Reads written items back with the request's query (fields, deep...), in `keys` order.
    /// Returns a JSON array; items the caller may not read are left out (Directus then answers
    /// without them), and when the caller may not read the collection at all, nothing (an
    /// empty string: the edges answer 204, as Directus does).
    pub async fn read_back(&mut self, collection: &Collection, keys: &[String], q: &Query) -> Result<String, ApiError> {
        let Some(collection) = self.read.collection(&collection.name).cloned() else { return Ok(String::new()) };
        let collection = collection.as_ref();
        let mut items = Vec::with_capacity(keys.len());
        if collection.primary_key.len() == 1 && keys.len() > 1 {
            // One statement for the batch: filter on the key, then order as written.
            let pk = &collection.primary_key[0];
            let mut read =
                Query { fields: q.fields.clone(), deep: q.deep.clone(), alias: q.alias.clone(), backlink: q.backlink, limit: Some(-1), ..Default::default() };
            read.filter = Some(Filter {
                node: Some(filter::Node::Condition(FieldCondition {
                    field: pk.clone(),
                    operator: Operator::In as i32,
                    value: Some(PbValue {
                        kind: Some(value::Kind::List(cdapi_proto::v1::ValueList {
                            values: keys.iter().map(|k| PbValue { kind: Some(value::Kind::String(k.clone())) }).collect(),
                        })),
                    }),
                    ..Default::default()
                })),
            });
            let limits = crate::query::Limits { max: None, ..self.limits };
            let st = Planner::new(self.read, limits, self.vars).read_many(collection, &read)?;
            let row = st.sql.query().fetch_one(&mut *self.conn).await.map_err(crate::db::map_error)?;
            let data: Option<String> = row.try_get("data").map_err(crate::db::map_error)?;
            let all: Vec<Value> = serde_json::from_str(&data.unwrap_or_else(|| "[]".into())).map_err(ApiError::internal_because)?;
            // Reorder by key when the key was selected; otherwise keep key order from SQL.
            let pos = |v: &Value| v.get(pk).map(|k| k.to_string().trim_matches('"').to_owned());
            let mut by_key: std::collections::HashMap<String, Value> = std::collections::HashMap::new();
            let mut unkeyed = Vec::new();
            for v in all {
                match pos(&v) {
                    Some(k) => {
                        by_key.insert(k, v);
                    }
                    None => unkeyed.push(v),
                }
            }
            if unkeyed.is_empty() {
                items.extend(keys.iter().filter_map(|k| by_key.remove(k)));
            } else {
                items = unkeyed;
            }
        } else {
            for k in keys {
                let read = Query { fields: q.fields.clone(), deep: q.deep.clone(), alias: q.alias.clone(), backlink: q.backlink, ..Default::default() };
                let st = Planner::new(self.read, self.limits, self.vars).read_one(collection, k, &read)?;
                let row = st.sql.query().fetch_one(&mut *self.conn).await.map_err(crate::db::map_error)?;
                if let Some(data) = row.try_get::<Option<String>, _>("data").map_err(crate::db::map_error)? {
                    items.push(serde_json::from_str(&data).map_err(ApiError::internal_because)?);
                }
            }
        }
        serde_json::to_string(&items).map_err(ApiError::internal_because)
    }
}

/// The text of the SQL expression `expr` (over the item's row, aliased `t0`) for the item of
/// `collection` with `key`. FORBIDDEN when there is no such item or the key cannot be one.
pub(crate) async fn item_text(
    conn: &mut PgConnection,
    planner: Planner<'_>,
    collection: &Collection,
    key: &str,
    expr: &str,
) -> Result<Option<String>, ApiError> {
    item_value(conn, planner, collection, key, expr).await?.ok_or_else(ApiError::forbidden)
}

/// [`item_text`], with `None` when there is no such item (a key that cannot be one is still
/// FORBIDDEN: the statement failed and the transaction with it).
pub(crate) async fn item_value(
    conn: &mut PgConnection,
    planner: Planner<'_>,
    collection: &Collection,
    key: &str,
    expr: &str,
) -> Result<Option<Option<String>>, ApiError> {
    let mut planner = planner;
    let cond = planner.keys_condition(collection, "t0", &[key.to_owned()])?;
    let mut sql = planner.sql;
    sql.text = format!("SELECT ({expr})::text FROM {} t0 WHERE {cond}", collection.table);
    let row =
        sql.query().fetch_optional(conn).await.map_err(|e| if crate::db::is_data_exception(&e) { ApiError::forbidden() } else { crate::db::map_error(e) })?;
    row.map(|r| r.try_get(0).map_err(crate::db::map_error)).transpose()
}

/// Whether two items set the same fields (in any order).
fn same_fields(a: &[&str], b: &[&str]) -> bool {
    if a == b {
        return true;
    }
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort_unstable();
    b.sort_unstable();
    a == b
}

fn dedup_len(keys: &[String]) -> usize {
    keys.iter().collect::<std::collections::HashSet<_>>().len()
}

/// `{head} WHERE <the rows selector picks>` (no `RETURNING`: [`Writer::returned_keys`] or
/// [`crate::activity::recorded_write`] adds it), where `head` is `UPDATE <table> AS u SET …`
/// or `DELETE FROM <table> AS u` and `selector` is a condition over alias `t0`. The rows are locked first in primary-key order (`ORDER BY … FOR UPDATE` in a
/// subquery), so concurrent writes of overlapping rows wait for each other instead of
/// deadlocking (each would otherwise lock rows in its own scan order).
fn locked_write(collection: &Collection, head: &str, selector: &str) -> String {
    let cols = |alias: &str| collection.primary_key.iter().map(|k| crate::sql::column(alias, k)).collect::<Vec<_>>().join(", ");
    format!(
        "{head} WHERE ({outer}) IN (SELECT {inner} FROM {table} AS t0 WHERE {selector} ORDER BY {inner} FOR UPDATE)",
        table = collection.table,
        outer = cols("u"),
        inner = cols("t0"),
    )
}
