//! Content versions (Directus docs "Content Versioning"; docs/what-works.md), stored in
//! `cdapi.versions`: a version holds a `delta` (a partial item, relational shapes allowed) made
//! against the main item's state `hash` (a keyed hash of its row: see [`Versions::item_hash`]).
//!
//! Permissions (docs/security.md "Content versions"): the caller's permission rows on
//! `directus_versions` apply to every version as to any item. Listing and reading see the
//! version rows their read rows let them see, only versions of items they can read, with the
//! `delta` cut to the fields they may read ([`crate::query::version_rows`], shared with GraphQL
//! and `?version=` reads); renaming, saving into and promoting a version need it visible and
//! within their update rows (renaming: for the fields written), deleting within their delete
//! rows. Creating a version needs the collection's `meta.versioning` on. Creating a version,
//! and saving into one, need the item readable and updatable by the
//! caller, and what a save adds must be a write the caller's rows allow on the item, nested
//! relational data included (checked by writing it as theirs, then undoing it); promoting is an
//! update under them too. Promotion applies the delta for real and deletes the version; it
//! refuses (UNPROCESSABLE_CONTENT) when the main item changed since the version was made,
//! unless the caller passes the current hash or `force`. Reading an item in a version:
//! [`preview`].

mod preview;

pub(crate) use preview::ROW_HASH_SQL;

use crate::permissions::Access;
use crate::query::version_rows::VERSIONS;
use crate::query::{Limits, Planner, Variables};
use crate::schema::{Collection, Schema};
use crate::sql::{Param, Sql};
use crate::write::Writer;
use cdapi_proto::v1::Query;
use cdapi_proto::{ApiError, ErrorCode};
use serde_json::{Map, Value, json};
use sqlx::{PgConnection, Row};

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
    pub accounts: &'a crate::write::users::Accounts,
    /// Where the request came from (recorded with the activity of a promotion).
    pub client: &'a crate::activity::Client,
}

/// A stored version, whole.
struct Stored {
    collection: String,
    item: String,
    hash: String,
    delta: Map<String, Value>,
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().enumerate().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() })
}

/// A version key already used for the item (the unique key of `cdapi.versions`) as Directus
/// answers it: UNPROCESSABLE_CONTENT naming the key, item and collection; other errors as they
/// are.
fn taken(e: ApiError, key: &str, collection: &str, item: &str) -> ApiError {
    if e.code != ErrorCode::RecordNotUnique {
        return e;
    }
    ApiError::unprocessable(format!("Version \"{key}\" already exists for item \"{item}\" in collection \"{collection}\""))
}

/// INVALID_PAYLOAD unless `key` can name a version: letters, digits, `_` or `-`, not `main`.
fn check_key(key: &str) -> Result<(), ApiError> {
    if key.is_empty() || key == "main" || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(ApiError::invalid_payload("\"key\" must be letters, digits, _ or -, and not \"main\""));
    }
    Ok(())
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

    /// `directus_versions` of the whole snapshot (what the writer checks rules against).
    fn versions(&self) -> Result<&'a Collection, ApiError> {
        let schema: &'a Schema = self.schema;
        schema.collection(VERSIONS).map(|c| c.as_ref()).ok_or_else(|| ApiError::internal_because("directus_versions is not in the snapshot"))
    }

    /// The key of a singleton's row (FORBIDDEN when it has none yet).
    async fn singleton_key(&mut self, collection: &Collection) -> Result<String, ApiError> {
        let mut sql = Sql::default();
        sql.text = format!("SELECT ({})::text FROM {} t0 LIMIT 1", crate::query::keys::pk_expr(collection, "t0"), collection.table);
        let row = sql.query().fetch_optional(&mut *self.conn).await.map_err(crate::db::map_error)?.ok_or_else(ApiError::forbidden)?;
        row.try_get(0).map_err(crate::db::map_error)
    }

    async fn one_json(&mut self, sql: Sql) -> Result<String, ApiError> {
        let row = sql.query().fetch_optional(&mut *self.conn).await.map_err(crate::db::map_write_error)?.ok_or_else(ApiError::forbidden)?;
        row.try_get(0).map_err(crate::db::map_error)
    }

    /// Creates a version within the caller's create rows on `directus_versions` (field list,
    /// validation and row filter, on the given `key`, `name`, `collection` and `item`); returns
    /// it as the caller reads it (JSON), or an empty string when they may not read it. Errors:
    /// FORBIDDEN (no such item, outside those rows), INVALID_PAYLOAD (bad key),
    /// UNPROCESSABLE_CONTENT (the collection's `meta.versioning` is off, as for every system
    /// collection: Directus docs "Content Versioning"; or the key is taken for this item, as
    /// Directus answers it).
    pub async fn create(&mut self, key: &str, name: &str, collection: &str, item: &str) -> Result<String, ApiError> {
        check_key(key)?;
        let c = self.collection(collection)?;
        let item = if item.is_empty() && c.singleton { self.singleton_key(c).await? } else { item.to_owned() };
        self.require_live(c, &item, true).await?;
        // After the access check, as Directus orders them: who may not touch the item learns
        // nothing of the collection's settings.
        if !system_tables::metadata::versioning(&mut *self.conn, &c.name).await.map_err(crate::db::map_error)? {
            return Err(ApiError::unprocessable(format!("Content Versioning is not enabled for collection \"{collection}\"")));
        }
        let mut given = Map::new();
        given.insert("key".into(), key.into());
        if !name.is_empty() {
            given.insert("name".into(), name.into());
        }
        given.insert("collection".into(), collection.into());
        given.insert("item".into(), item.clone().into());
        let hash = self.item_hash(c, &item).await?;
        let mut sql = Sql::default();
        let (k, n, col, it, h) = (
            sql.param(Param::Text(key.into())),
            sql.param(Param::Text(name.into())),
            sql.param(Param::Text(collection.into())),
            sql.param(Param::Text(item.clone())),
            sql.param(Param::Text(hash)),
        );
        let user = match &self.vars.user {
            Some(u) => format!("CAST({} AS uuid)", sql.param(Param::Text(u.clone()))),
            None => "NULL".into(),
        };
        sql.text = format!(
            "INSERT INTO cdapi.versions (key, name, collection, item, hash, user_created) \
             VALUES ({k}, NULLIF({n}, ''), {col}, {it}, {h}, {user}) RETURNING id::text"
        );
        let id = self.one_json(sql).await.map_err(|e| taken(e, key, collection, &item))?;
        let versions = self.versions()?;
        self.writer().require_created(versions, &id, &given).await?;
        // Read back as the caller sees it (their fields of directus_versions); nothing when they
        // may not read it, as Directus answers a create it cannot read back (204).
        match self.read(&id).await {
            Err(e) if e.code == ErrorCode::Forbidden => Ok(String::new()),
            read => read,
        }
    }

    /// Versions the caller may see (JSON array), optionally of one collection and item, with the
    /// Directus query `query` (its `fields`, `filter`, `sort`, `limit`, ...; by default every
    /// field, oldest first, QUERY_LIMIT_DEFAULT of them as for any collection): read as any
    /// collection is, through their view of `directus_versions` (filtering on `collection` or
    /// `item` needs them readable, as any filter), within the same budgets (QUERY_LIMIT_MAX,
    /// RESPONSE_MAX_BYTES; docs/security.md "Budgets"). Errors: INVALID_QUERY, FORBIDDEN.
    pub async fn list(&mut self, collection: &str, item: &str, query: Map<String, Value>) -> Result<String, ApiError> {
        let mut query = query;
        // Oldest first where the caller may read the creation date (sorting on a field is
        // reading it).
        let readable = self.read.collection(VERSIONS).is_some_and(|v| v.field("date_created").is_some());
        let sort = if readable { json!(["date_created", "id"]) } else { json!(["id"]) };
        query.entry("fields").or_insert_with(|| json!(["*"]));
        query.entry("sort").or_insert(sort);
        let mut conditions: Vec<Value> =
            [("collection", collection), ("item", item)].into_iter().filter(|(_, v)| !v.is_empty()).map(|(f, v)| json!({ f: {"_eq": v} })).collect();
        if !conditions.is_empty() {
            conditions.extend(query.remove("filter"));
            query.insert("filter".into(), json!({"_and": conditions}));
        }
        self.read_versions(None, &Value::Object(query)).await
    }

    /// One version (JSON) as the caller reads it (see [`Self::list`]). FORBIDDEN when there is
    /// none they may see.
    pub async fn read(&mut self, id: &str) -> Result<String, ApiError> {
        if !uuid_like(id) {
            return Err(ApiError::forbidden());
        }
        self.read_versions(Some(id), &json!({"fields": ["*"]})).await
    }

    /// Reads `directus_versions` (one by key, else a list) with the query `query` (JSON) through
    /// the caller's view.
    async fn read_versions(&mut self, key: Option<&str>, query: &Value) -> Result<String, ApiError> {
        let view = self.read.collection(VERSIONS).ok_or_else(ApiError::forbidden)?;
        let q =
            query_language::query_json::query_from_json(query.as_object().ok_or_else(|| ApiError::internal_because("a versions query is not a JSON object"))?)?;
        let planner = Planner::new(self.read, self.limits, self.vars);
        let st = match key {
            Some(k) => planner.read_one(view, k, &q)?,
            None => planner.read_many(view, &q)?,
        };
        let row = st.sql.query().fetch_one(&mut *self.conn).await.map_err(crate::db::map_error)?;
        let data = row.try_get::<Option<String>, _>("data").map_err(crate::db::map_error)?.ok_or_else(ApiError::forbidden)?;
        self.limits.check_bytes(data.len())?;
        Ok(data)
    }

    /// The statement under construction and the condition over `cdapi.versions w` that the row
    /// is one the caller may see (their view of `directus_versions`, see [`Self::list`]).
    /// FORBIDDEN without read on `directus_versions`.
    fn visible(&self) -> Result<(Sql, String), ApiError> {
        let view = self.read.collection(VERSIONS).ok_or_else(ApiError::forbidden)?;
        let mut planner = Planner::new(self.read, self.limits, self.vars);
        let rows = planner.source_sql(view)?;
        Ok((planner.sql, format!("w.id IN (SELECT v.id FROM {rows} v)")))
    }

    /// Version `id`, whole (its delta uncut: saving into it and promoting it must not drop
    /// fields the caller cannot read), if the caller may see it; FORBIDDEN otherwise.
    async fn stored(&mut self, id: &str) -> Result<Stored, ApiError> {
        if !uuid_like(id) {
            return Err(ApiError::forbidden());
        }
        let (mut sql, visible) = self.visible()?;
        let p = sql.param(Param::Text(id.into()));
        sql.text = format!(
            "SELECT json_build_object('collection', w.collection, 'item', w.item, 'hash', w.hash, 'delta', w.delta)::text \
             FROM cdapi.versions w WHERE w.id = CAST({p} AS uuid) AND {visible}"
        );
        let v: Value = serde_json::from_str(&self.one_json(sql).await?).map_err(ApiError::internal_because)?;
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        Ok(Stored {
            collection: text("collection"),
            item: text("item"),
            hash: text("hash"),
            delta: v.get("delta").and_then(Value::as_object).cloned().unwrap_or_default(),
        })
    }

    /// FORBIDDEN unless version `id` is within the caller's update rows on `directus_versions`
    /// for writing `change` (validated) and the fields `extra`.
    async fn require_update(&mut self, id: &str, change: &Map<String, Value>, extra: &[&str]) -> Result<(), ApiError> {
        let versions = self.versions()?;
        self.writer().require_update(versions, id, change, extra).await
    }

    /// Renames a version the caller can see and update; returns it as they read it. Errors:
    /// FORBIDDEN, INVALID_PAYLOAD (bad key), UNPROCESSABLE_CONTENT (the key is taken for the
    /// item).
    pub async fn update(&mut self, id: &str, key: Option<&str>, name: Option<&str>) -> Result<String, ApiError> {
        let stored = self.stored(id).await?;
        let mut change = Map::new();
        if let Some(k) = key {
            check_key(k)?;
            change.insert("key".into(), k.into());
        }
        if let Some(n) = name {
            change.insert("name".into(), n.into());
        }
        self.require_update(id, &change, &[]).await?;
        let mut sql = Sql::default();
        let p = sql.param(Param::Text(id.into()));
        let mut sets = vec!["date_updated = now()".to_owned()];
        for (field, value) in &change {
            let v = sql.param(Param::Text(value.as_str().unwrap_or_default().to_owned()));
            sets.push(format!("{} = {v}", crate::sql::ident(field)));
        }
        sql.text = format!("UPDATE cdapi.versions SET {} WHERE id = CAST({p} AS uuid) RETURNING id::text", sets.join(", "));
        self.one_json(sql).await.map_err(|e| taken(e, key.unwrap_or_default(), &stored.collection, &stored.item))?;
        self.read(id).await
    }

    /// Deletes a version the caller can see, within their delete rows. FORBIDDEN otherwise.
    pub async fn delete(&mut self, id: &str) -> Result<(), ApiError> {
        self.stored(id).await?;
        let versions = self.versions()?;
        self.writer().delete_keys(versions, &[id.to_owned()]).await
    }

    /// Merges `data` into the version's delta (top-level keys replace); returns the item as it
    /// reads in the version (all fields).
    pub async fn save(&mut self, id: &str, data: &Map<String, Value>) -> Result<String, ApiError> {
        let v = self.stored(id).await?;
        self.require_update(id, &Map::new(), &["delta"]).await?;
        let c = self.collection(&v.collection)?;
        // Keys that are no field are left out, as item writes leave them out.
        let added: Map<String, Value> = data.iter().filter(|(k, _)| c.field(k).is_some()).map(|(k, v)| (k.clone(), v.clone())).collect();
        // What the caller adds must be a write their rows allow on the item.
        self.require_live(c, &v.item, false).await?;
        if !matches!(self.access, Access::Admin) {
            self.writer().require_update(c, &v.item, &added, &[]).await?;
            self.require_write(c, &v.item, &added).await?;
        }
        let mut delta = v.delta;
        delta.extend(added);
        // The merged delta must be a writable payload: checked by applying it on a savepoint,
        // then rolled back.
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

    /// The error the write of `data` to the item `key` of `c` by the caller would end in, if
    /// any: nested relational data is checked as in any item write (the related items' rows,
    /// e.g. junction rows moved to this item), by applying it on a savepoint, then undoing it.
    async fn require_write(&mut self, c: &Collection, key: &str, data: &Map<String, Value>) -> Result<(), ApiError> {
        sqlx::query("SAVEPOINT version_write").execute(&mut *self.conn).await.map_err(crate::db::map_error)?;
        let accounts = self.dry_run();
        let written = Writer { accounts: &accounts, ..self.writer() }.save(c, data, Some(key.to_owned()), 0).await.map(|_| ());
        sqlx::query("ROLLBACK TO SAVEPOINT version_write").execute(&mut *self.conn).await.map_err(crate::db::map_error)?;
        written
    }

    /// The caller's accounts for writes that are rolled back once checked or read: they end
    /// no sessions ([`crate::write::users::Accounts::dry_run`]).
    fn dry_run(&self) -> crate::write::users::Accounts {
        crate::write::users::Accounts { dry_run: true, ..self.accounts.clone() }
    }

    /// A writer acting for the caller on this connection.
    fn writer(&mut self) -> Writer<'_> {
        Writer {
            schema: self.schema,
            read: self.read,
            access: self.access,
            conn: &mut *self.conn,
            limits: self.limits,
            vars: self.vars,
            accounts: self.accounts,
            client: self.client,
            nesting: Default::default(),
        }
    }

    /// `{"outdated", "mainHash", "current", "main"}` (Directus's compare), `current` being the
    /// delta as the caller reads it.
    pub async fn compare(&mut self, id: &str) -> Result<String, ApiError> {
        let v = self.stored(id).await?;
        let current: Value = serde_json::from_str(&self.read(id).await?).map_err(ApiError::internal_because)?;
        let c = self.collection(&v.collection)?;
        let main_hash = self.item_hash(c, &v.item).await?;
        let view = self.read.collection(&c.name).ok_or_else(ApiError::forbidden)?;
        let st = Planner::new(self.read, self.limits, self.vars).read_one(view, &v.item, &Query::default())?;
        let row = st.sql.query().fetch_one(&mut *self.conn).await.map_err(crate::db::map_error)?;
        let main: Option<String> = row.try_get("data").map_err(crate::db::map_error)?;
        let main: Value = serde_json::from_str(&main.ok_or_else(ApiError::forbidden)?).map_err(ApiError::internal_because)?;
        let out = json!({"outdated": main_hash != v.hash, "mainHash": main_hash, "current": current["delta"], "main": main});
        Ok(out.to_string())
    }

    /// Applies the delta to the main item and deletes the version (one the caller can see and
    /// update); returns the item's key as JSON. UNPROCESSABLE_CONTENT when the main item changed
    /// since the version was made, unless `main_hash` equals its current hash or `force`.
    pub async fn promote(&mut self, id: &str, main_hash: Option<&str>, force: bool) -> Result<String, ApiError> {
        let v = self.stored(id).await?;
        self.require_update(id, &Map::new(), &[]).await?;
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
        let mut sql = Sql::default();
        let p = sql.param(Param::Text(id.into()));
        sql.text = format!("DELETE FROM cdapi.versions WHERE id = CAST({p} AS uuid) RETURNING id::text");
        self.one_json(sql).await?;
        Ok(Value::String(v.item).to_string())
    }
}
