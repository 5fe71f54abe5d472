//! Content versions (spec: "Versioning"; directus-facts.md "Content versions"), stored in
//! `cdapi.versions`: a version holds a `delta` (a partial item, relational shapes allowed) made
//! against the main item's state `hash` (SHA-256 of its row as JSON).
//!
//! Reading an item in a version applies the delta with the writer inside a transaction that is
//! then rolled back, and reads the item with the caller's query in between: nested relational
//! deltas therefore read exactly as they would after promotion. (Such a read is a few
//! statements, not one.) Permissions (issue 15): reading an item in a version needs it readable
//! by the caller as it is live AND as it is in the version (a delta can never make an item they
//! cannot read readable); the preview itself is applied with full rights and rolled back, so
//! read-only preview tokens work (Directus's live preview). Creating a version, and saving into
//! one, need the item readable and updatable by the caller, and what a save adds must be an update
//! the caller's rows allow on the item; promoting is an update under them too. Promotion applies the delta for real and deletes the version; it
//! refuses (UNPROCESSABLE_CONTENT) when the main item changed since the version was made,
//! unless the caller passes the current hash or `force`.

use crate::query::keys::pk_expr;
use crate::query::sql::{Param, Sql};
use crate::query::{Limits, Planner, Variables};
use crate::schema::{Collection, Schema};
use crate::permissions::Access;
use crate::write::Writer;
use cdapi_proto::v1::Query;
use cdapi_proto::{ApiError, ErrorCode};
use serde_json::{Map, Value};
use sqlx::{PgConnection, Row};

/// The columns of a version as one JSON object, with `delta` as the expression giving the delta
/// (dates as Directus writes them: see [`crate::query::values`]).
fn version_json(delta: &str) -> String {
    let date = |col: &str| crate::query::values::output(crate::schema::FieldType::Timestamp, format!("v.{col}"));
    format!(
        "json_build_object('id', v.id, 'key', v.key, 'name', v.name, 'collection', v.collection, 'item', v.item, 'hash', v.hash, \
         'delta', {delta}, 'date_created', {}, 'date_updated', {}, 'user_created', v.user_created)::text",
        date("date_created"),
        date("date_updated")
    )
}

/// Version operations over one connection (a transaction where they write).
pub struct Versions<'a> {
    /// The whole schema snapshot.
    pub schema: &'a Schema,
    /// The schema the caller reads through (items in a version are read with it).
    pub read: &'a Schema,
    /// Who is calling: promoting a version is an update of the item under their grant.
    pub access: &'a Access,
    /// The connection.
    pub conn: &'a mut PgConnection,
    /// `limit` rules.
    pub limits: Limits,
    /// Dynamic variables (`user` is recorded as `user_created`).
    pub vars: &'a Variables,
    /// For the writer (user writes end sessions, hash passwords).
    pub accounts: &'a crate::users::Accounts,
}

/// A stored version.
struct Stored {
    collection: String,
    item: String,
    hash: String,
    delta: Map<String, Value>,
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().enumerate().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() })
}

impl<'a> Versions<'a> {
    fn collection(&self, name: &str) -> Result<&'a Collection, ApiError> {
        let schema: &'a Schema = self.schema;
        let c = schema.collection(name).ok_or_else(ApiError::forbidden)?;
        if c.read_only || c.primary_key.is_empty() {
            return Err(ApiError::invalid_payload(format!("Collection \"{name}\" cannot be versioned")));
        }
        Ok(c)
    }

    /// SHA-256 (hex) of the main item's row as JSON. FORBIDDEN when the item does not exist.
    pub async fn item_hash(&mut self, collection: &Collection, key: &str) -> Result<String, ApiError> {
        let planner = Planner::new(self.schema, self.limits, self.vars);
        let expr = "encode(sha256(convert_to(row_to_json(t0)::text, 'UTF8')), 'hex')";
        crate::write::item_text(&mut *self.conn, planner, collection, key, expr).await?.ok_or_else(ApiError::internal)
    }

    /// The key of a singleton's row (FORBIDDEN when it has none yet).
    async fn singleton_key(&mut self, collection: &Collection) -> Result<String, ApiError> {
        let mut sql = Sql::default();
        sql.text = format!("SELECT ({})::text FROM {} t0 LIMIT 1", pk_expr(collection, "t0"), collection.table);
        let row = sql.query().fetch_optional(&mut *self.conn).await.map_err(crate::db::map_error)?.ok_or_else(ApiError::forbidden)?;
        row.try_get(0).map_err(crate::db::map_error)
    }

    async fn one_json(&mut self, sql: Sql) -> Result<String, ApiError> {
        let row = sql.query().fetch_optional(&mut *self.conn).await.map_err(crate::db::map_write_error)?.ok_or_else(ApiError::forbidden)?;
        row.try_get(0).map_err(crate::db::map_error)
    }

    /// Creates a version (JSON of the version). Errors: FORBIDDEN (no such item),
    /// INVALID_PAYLOAD (bad key), RECORD_NOT_UNIQUE (key taken for this item).
    pub async fn create(&mut self, key: &str, name: &str, collection: &str, item: &str) -> Result<String, ApiError> {
        if key.is_empty() || key == "main" || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(ApiError::invalid_payload("\"key\" must be letters, digits, _ or -, and not \"main\""));
        }
        let c = self.collection(collection)?;
        let item = if item.is_empty() && c.singleton { self.singleton_key(c).await? } else { item.to_owned() };
        self.require_live(c, &item, true).await?;
        let hash = self.item_hash(c, &item).await?;
        let mut sql = Sql::default();
        let (k, n, col, it, h) = (
            sql.param(Param::Text(key.into())),
            sql.param(Param::Text(name.into())),
            sql.param(Param::Text(collection.into())),
            sql.param(Param::Text(item)),
            sql.param(Param::Text(hash)),
        );
        let user = match &self.vars.user {
            Some(u) => format!("CAST({} AS uuid)", sql.param(Param::Text(u.clone()))),
            None => "NULL".into(),
        };
        sql.text = format!(
            "WITH v AS (INSERT INTO cdapi.versions (key, name, collection, item, hash, user_created) \
             VALUES ({k}, NULLIF({n}, ''), {col}, {it}, {h}, {user}) RETURNING *) SELECT {} FROM v",
            version_json("v.delta")
        );
        self.one_json(sql).await
    }

    /// Versions (JSON array), optionally of one collection and item, oldest first.
    pub async fn list(&mut self, collection: &str, item: &str) -> Result<String, ApiError> {
        let mut planner = Planner::new(self.read, self.limits, self.vars);
        let (visible, delta) = self.visibility(&mut planner)?;
        let mut sql = planner.sql;
        let (c, i) = (sql.param(Param::Text(collection.into())), sql.param(Param::Text(item.into())));
        sql.text = format!(
            "SELECT coalesce(json_agg(x.j ORDER BY x.date_created, x.id), '[]')::text FROM \
             (SELECT {}::json AS j, v.date_created, v.id FROM cdapi.versions v \
              WHERE ({c} = '' OR v.collection = {c}) AND ({i} = '' OR v.item = {i}) AND {visible}) x",
            version_json(&delta)
        );
        self.one_json(sql).await
    }

    /// What of the versions the caller may see, as SQL over a `cdapi.versions v` row: the
    /// condition (the versioned item is one the caller can read: its collection is in their
    /// view and the item passes their item filter) and the `delta` expression (only the fields
    /// they can read). Admins see everything. Errors: a role's item filter that does not compile.
    fn visibility(&self, planner: &mut Planner) -> Result<(String, String), ApiError> {
        if matches!(self.access, Access::Admin) {
            return Ok(("TRUE".into(), "v.delta".into()));
        }
        let mut conditions = Vec::new();
        let mut deltas = Vec::new();
        for c in self.read.collections.values().filter(|c| !c.system && !c.primary_key.is_empty()) {
            let source = planner.source(c)?;
            let alias = planner.sql.next_alias('q');
            let name = planner.sql.param(Param::Text(c.name.clone()));
            let fields = planner.sql.param(Param::TextArray(c.fields.iter().map(|f| f.name.clone()).collect()));
            conditions.push(format!(
                "(v.collection = {name} AND EXISTS (SELECT 1 FROM {source} {alias} WHERE ({})::text = v.item))",
                pk_expr(c, &alias)
            ));
            deltas.push(format!(
                "WHEN {name} THEN (SELECT jsonb_object_agg(d.key, d.value) FROM jsonb_each(v.delta) d WHERE d.key = ANY({fields}))"
            ));
        }
        if conditions.is_empty() {
            return Ok(("FALSE".into(), "NULL".into()));
        }
        Ok((format!("({})", conditions.join(" OR ")), format!("CASE v.collection {} END", deltas.join(" "))))
    }

    /// One version (JSON), its `delta` cut to what the caller can read. FORBIDDEN when there is
    /// none or the caller cannot read its item.
    pub async fn read(&mut self, id: &str) -> Result<String, ApiError> {
        self.read_as(id, false).await
    }

    /// One version the caller can see; with `whole_delta`, its delta uncut (for saving into it
    /// and promoting it, which must not drop fields the caller cannot read).
    async fn read_as(&mut self, id: &str, whole_delta: bool) -> Result<String, ApiError> {
        let (mut sql, visible, delta) = self.visible_version(id)?;
        let delta = if whole_delta { "v.delta".to_owned() } else { delta };
        sql.text = format!("SELECT {} FROM cdapi.versions v WHERE {visible}", version_json(&delta));
        self.one_json(sql).await
    }

    /// The statement under construction for version `id` if the caller can see it: its
    /// condition over `cdapi.versions v` (this id, and [`Self::visibility`]) and the delta
    /// expression the caller may read. FORBIDDEN for an id that is not a UUID.
    fn visible_version(&self, id: &str) -> Result<(Sql, String, String), ApiError> {
        if !uuid_like(id) {
            return Err(ApiError::forbidden());
        }
        let mut planner = Planner::new(self.read, self.limits, self.vars);
        let (visible, delta) = self.visibility(&mut planner)?;
        let mut sql = planner.sql;
        let p = sql.param(Param::Text(id.into()));
        Ok((sql, format!("v.id = CAST({p} AS uuid) AND {visible}"), delta))
    }

    /// Renames a version (one the caller can see; FORBIDDEN otherwise, as a missing one).
    pub async fn update(&mut self, id: &str, key: Option<&str>, name: Option<&str>) -> Result<String, ApiError> {
        let (mut sql, visible, delta) = self.visible_version(id)?;
        if key.is_some_and(|k| k.is_empty() || k == "main" || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')) {
            return Err(ApiError::invalid_payload("\"key\" must be letters, digits, _ or -, and not \"main\""));
        }
        let k = key.map(|k| sql.param(Param::Text(k.into())));
        let n = name.map(|n| sql.param(Param::Text(n.into())));
        let mut sets = vec!["date_updated = now()".to_owned()];
        if let Some(k) = k {
            sets.push(format!("key = {k}"));
        }
        if let Some(n) = n {
            sets.push(format!("name = {n}"));
        }
        // Returned as the caller reads it (delta cut to their fields).
        sql.text = format!("UPDATE cdapi.versions v SET {} WHERE {visible} RETURNING {}", sets.join(", "), version_json(&delta));
        self.one_json(sql).await
    }

    /// Deletes a version (one the caller can see). FORBIDDEN when there is none.
    pub async fn delete(&mut self, id: &str) -> Result<(), ApiError> {
        let (mut sql, visible, _) = self.visible_version(id)?;
        sql.text = format!("DELETE FROM cdapi.versions v WHERE {visible} RETURNING v.id::text");
        self.one_json(sql).await.map(|_| ())
    }

    /// A version the caller can see, its delta whole or cut to the caller's fields.
    async fn stored(&mut self, id: &str, whole_delta: bool) -> Result<Stored, ApiError> {
        let v: Value = serde_json::from_str(&self.read_as(id, whole_delta).await?).map_err(|_| ApiError::internal())?;
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        Ok(Stored {
            collection: text("collection"),
            item: text("item"),
            hash: text("hash"),
            delta: v.get("delta").and_then(Value::as_object).cloned().unwrap_or_default(),
        })
    }

    /// Merges `data` into the version's delta (top-level keys replace); returns the item as it
    /// reads in the version (all fields).
    pub async fn save(&mut self, id: &str, data: &Map<String, Value>) -> Result<String, ApiError> {
        let v = self.stored(id, true).await?;
        let c = self.collection(&v.collection)?;
        // What the caller adds must be an update their rows allow on the item (issue 15).
        self.require_live(c, &v.item, false).await?;
        if !matches!(self.access, Access::Admin) {
            self.writer().require_update(c, &v.item, data, &[]).await?;
        }
        let mut delta = v.delta;
        // Keys that are no field are left out, as item writes leave them out (issue 16).
        delta.extend(data.iter().filter(|(k, _)| c.field(k).is_some()).map(|(k, v)| (k.clone(), v.clone())));
        // The merged delta must be a writable payload: checked by applying it (rolled back by
        // the caller's transaction only on failure; here on a savepoint).
        sqlx::query("SAVEPOINT version_check").execute(&mut *self.conn).await.map_err(crate::db::map_error)?;
        let read = self.apply_and_read(c, &v.item, &delta, &Query::default()).await;
        sqlx::query("ROLLBACK TO SAVEPOINT version_check").execute(&mut *self.conn).await.map_err(crate::db::map_error)?;
        let item = read?;
        let mut sql = Sql::default();
        let p = sql.param(Param::Text(id.into()));
        let d = sql.param(Param::Text(Value::Object(delta).to_string()));
        sql.text = format!("UPDATE cdapi.versions SET delta = CAST({d} AS jsonb), date_updated = now() WHERE id = CAST({p} AS uuid) RETURNING id::text");
        self.one_json(sql).await?;
        Ok(item)
    }

    /// FORBIDDEN unless the caller can read the item `key` of `c` as it is now (and, with
    /// `update`, some update row of theirs matches it). Admins pass.
    async fn require_live(&mut self, c: &Collection, key: &str, update: bool) -> Result<(), ApiError> {
        if matches!(self.access, Access::Admin) {
            return Ok(());
        }
        let view = self.read.collection(&c.name).ok_or_else(ApiError::forbidden)?;
        let pk = Query { fields: c.primary_key.iter().map(|k| cdapi_proto::paths::of_fields([k.as_str()])).collect(), ..Default::default() };
        let st = Planner::new(self.read, self.limits, self.vars).read_one(view, key, &pk)?;
        let row = st.sql.query().fetch_one(&mut *self.conn).await.map_err(crate::db::map_error)?;
        row.try_get::<Option<String>, _>("data").map_err(crate::db::map_error)?.ok_or_else(ApiError::forbidden)?;
        if update {
            self.writer().require_update(c, key, &Map::new(), &[]).await?;
        }
        Ok(())
    }

    /// A writer acting for the caller on this connection.
    fn writer(&mut self) -> Writer<'_> {
        Writer { schema: self.schema, read: self.read, access: self.access, conn: &mut *self.conn, limits: self.limits, vars: self.vars, accounts: self.accounts }
    }

    /// Applies `delta` to the item and reads it with `q` (fields, deep...). Leaves the change in
    /// the connection's transaction: callers roll it back or commit it. The item must be
    /// readable by the caller as it is now; the delta is applied with full rights (a preview,
    /// rolled back: it may hold fields the caller cannot read or write, saved by others); the
    /// item is then read with the caller's read permissions: FORBIDDEN when its state in the
    /// version is not readable to them.
    async fn apply_and_read(&mut self, c: &Collection, item: &str, delta: &Map<String, Value>, q: &Query) -> Result<String, ApiError> {
        self.require_live(c, item, false).await?;
        if !delta.is_empty() {
            let whole = self.schema.collection(&c.name).ok_or_else(ApiError::forbidden)?;
            let admin = Access::Admin;
            let mut w = Writer { access: &admin, ..self.writer() };
            w.save(whole, delta, Some(item.to_owned()), 0).await?;
        }
        let read = Query { version: None, ..q.clone() };
        let view = self.read.collection(&c.name).ok_or_else(ApiError::forbidden)?;
        let st = Planner::new(self.read, self.limits, self.vars).read_one(view, item, &read)?;
        let row = st.sql.query().fetch_one(&mut *self.conn).await.map_err(crate::db::map_error)?;
        let data: Option<String> = row.try_get("data").map_err(crate::db::map_error)?;
        data.ok_or_else(ApiError::forbidden)
    }

    /// The item `key` (or the singleton's row) of `collection` as it reads in version
    /// `version_key`, with the query `q`. Runs inside a transaction the caller rolls back.
    /// Unknown version: FORBIDDEN.
    pub async fn read_item(&mut self, collection: &Collection, key: Option<&str>, version_key: &str, q: &Query) -> Result<String, ApiError> {
        let item = match key {
            Some(k) => k.to_owned(),
            None => self.singleton_key(collection).await?,
        };
        let mut sql = Sql::default();
        let (c, i, k) = (
            sql.param(Param::Text(collection.name.clone())),
            sql.param(Param::Text(item.clone())),
            sql.param(Param::Text(version_key.into())),
        );
        sql.text = format!("SELECT coalesce(delta, '{{}}')::text FROM cdapi.versions WHERE collection = {c} AND item = {i} AND key = {k}");
        let delta: Map<String, Value> = serde_json::from_str(&self.one_json(sql).await?).map_err(|_| ApiError::internal())?;
        self.apply_and_read(collection, &item, &delta, q).await
    }

    /// `{"outdated", "mainHash", "current", "main"}` (Directus's compare).
    pub async fn compare(&mut self, id: &str) -> Result<String, ApiError> {
        // The delta as the caller may read it.
        let v = self.stored(id, false).await?;
        let c = self.collection(&v.collection)?;
        let main_hash = self.item_hash(c, &v.item).await?;
        let view = self.read.collection(&c.name).ok_or_else(ApiError::forbidden)?;
        let st = Planner::new(self.read, self.limits, self.vars).read_one(view, &v.item, &Query::default())?;
        let row = st.sql.query().fetch_one(&mut *self.conn).await.map_err(crate::db::map_error)?;
        let main: Option<String> = row.try_get("data").map_err(crate::db::map_error)?;
        let main: Value = serde_json::from_str(&main.ok_or_else(ApiError::forbidden)?).map_err(|_| ApiError::internal())?;
        let out = serde_json::json!({"outdated": main_hash != v.hash, "mainHash": main_hash, "current": v.delta, "main": main});
        Ok(out.to_string())
    }

    /// Applies the delta to the main item and deletes the version; returns the item's key as
    /// JSON. UNPROCESSABLE_CONTENT when the main item changed since the version was made,
    /// unless `main_hash` equals its current hash or `force`.
    pub async fn promote(&mut self, id: &str, main_hash: Option<&str>, force: bool) -> Result<String, ApiError> {
        let v = self.stored(id, true).await?;
        let c = self.collection(&v.collection)?;
        let current = self.item_hash(c, &v.item).await?;
        if current != v.hash && main_hash != Some(current.as_str()) && !force {
            let mut e = ApiError::new(
                ErrorCode::UnprocessableContent,
                "The main item has changed since this version was created; compare it, then promote with its current hash (mainHash) or force.",
            );
            e.extensions.insert("mainHash".into(), current.into());
            return Err(e);
        }
        if !v.delta.is_empty() {
            self.writer().save(c, &v.delta, Some(v.item.clone()), 0).await?;
        }
        self.delete(id).await?;
        Ok(Value::String(v.item).to_string())
    }
}
