//! Reading an item in a content version, and what versions check on the live item.
//!
//! Reading an item in a version applies the delta with the writer inside a transaction that is
//! then rolled back, and reads the item with the caller's query in between: nested relational
//! deltas therefore read exactly as they would after promotion. (Such a read is a few
//! statements, not one.) It needs the version row readable by the caller (their read rows on
//! `directus_versions`, as Directus reads version saves with the caller's rights), and the item
//! readable by them as it is live AND as it is in the version (a delta can never make an item
//! they cannot read readable); the preview itself is applied with full rights and rolled back,
//! so read-only preview tokens work (Directus's live preview).

use super::Versions;
use crate::permissions::Access;
use crate::query::Planner;
use crate::schema::Collection;
use crate::sql::{Param, Sql};
use crate::write::Writer;
use cdapi_proto::ApiError;
use cdapi_proto::v1::Query;
use serde_json::{Map, Value};
use sqlx::Row;

/// The SQL of an item's state hash ([`Versions::item_hash`]): an expression over the item's row
/// `t0` and the row `k` of `cdapi.version_hash_key`. The import computes imported versions'
/// hashes with it too (`crate::directus_import::version_hashes`), so they compare equal here.
pub(crate) const ROW_HASH_SQL: &str = "encode(sha256(k.opad || sha256(k.ipad || convert_to(row_to_json(t0)::text, 'UTF8'))), 'hex')";

impl Versions<'_> {
    /// The main item's state, as a version's `hash` and compare's `mainHash`: HMAC-SHA-256
    /// (hex) of its row as JSON under the database's version hash key (migration
    /// `0012_version_hash_key.sql`), computed by Postgres. The same for every caller while the
    /// row is unchanged (Directus's compare and promote flow), and keyed so that nobody can test
    /// guesses of a field hidden from them against it. FORBIDDEN when the item does not exist.
    pub async fn item_hash(&mut self, collection: &Collection, key: &str) -> Result<String, ApiError> {
        let planner = Planner::new(self.schema, self.limits, self.vars);
        let expr = format!("(SELECT {ROW_HASH_SQL} FROM cdapi.version_hash_key k)");
        crate::write::item_text(&mut *self.conn, planner, collection, key, &expr)
            .await?
            .ok_or_else(|| ApiError::internal_because("an item checked to exist has no hash"))
    }

    /// FORBIDDEN unless the caller can read the item `key` of `c` as it is now (and, with
    /// `update`, some update row of theirs matches it). Admins pass.
    pub(super) async fn require_live(&mut self, c: &Collection, key: &str, update: bool) -> Result<(), ApiError> {
        if matches!(self.access, Access::Admin) {
            return Ok(());
        }
        let view = self.read.collection(&c.name).ok_or_else(ApiError::forbidden)?;
        let pk = Query { fields: c.primary_key.iter().map(|k| query_language::paths::of_fields([k.as_str()])).collect(), ..Default::default() };
        let st = Planner::new(self.read, self.limits, self.vars).read_one(view, key, &pk)?;
        let row = st.sql.query().fetch_one(&mut *self.conn).await.map_err(crate::db::map_error)?;
        row.try_get::<Option<String>, _>("data").map_err(crate::db::map_error)?.ok_or_else(ApiError::forbidden)?;
        if update {
            self.writer().require_update(c, key, &Map::new(), &[]).await?;
        }
        Ok(())
    }

    /// Applies `delta` to the item and reads it with `q` (fields, deep...). Leaves the change in
    /// the connection's transaction: callers roll it back or commit it. The item must be
    /// readable by the caller as it is now; the delta is applied with full rights (a preview,
    /// rolled back: it may hold fields the caller cannot read or write, saved by others); the
    /// item is then read with the caller's read permissions: FORBIDDEN when its state in the
    /// version is not readable to them.
    pub(super) async fn apply_and_read(&mut self, c: &Collection, item: &str, delta: &Map<String, Value>, q: &Query) -> Result<String, ApiError> {
        self.require_live(c, item, false).await?;
        if !delta.is_empty() {
            let whole = self.schema.collection(&c.name).ok_or_else(ApiError::forbidden)?;
            let (admin, accounts) = (Access::Admin, self.dry_run());
            let mut w = Writer { access: &admin, accounts: &accounts, ..self.writer() };
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
    /// FORBIDDEN for an unknown version and one whose `directus_versions` row the caller may
    /// not read.
    pub async fn read_item(&mut self, collection: &Collection, key: Option<&str>, version_key: &str, q: &Query) -> Result<String, ApiError> {
        let item = match key {
            Some(k) => k.to_owned(),
            None => self.singleton_key(collection).await?,
        };
        let (mut sql, visible): (Sql, String) = self.visible()?;
        let (c, i, k) = (sql.param(Param::Text(collection.name.clone())), sql.param(Param::Text(item.clone())), sql.param(Param::Text(version_key.into())));
        sql.text =
            format!("SELECT coalesce(w.delta, '{{}}')::text FROM cdapi.versions w WHERE w.collection = {c} AND w.item = {i} AND w.key = {k} AND {visible}");
        let delta: Map<String, Value> = serde_json::from_str(&self.one_json(sql).await?).map_err(ApiError::internal_because)?;
        self.apply_and_read(collection, &item, &delta, q).await
    }
}
