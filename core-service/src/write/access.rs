//! Whether the caller may change one item (Directus 11's `GET /permissions/me/:collection/:key`,
//! `PermissionsService.getItemPermissions`): the Studio enables its save and delete buttons by
//! it. Writes are decided by the writes themselves; this only reports.

use super::Writer;
use crate::permissions::{Access, Action, Fields};
use crate::query::Planner;
use crate::schema::Collection;
use cdapi_proto::ApiError;
use serde_json::{Map, Value, json};
use sqlx::Row;

impl Writer<'_> {
    /// Whether some `action` row of the caller's reaches the item `key` of `collection` (any
    /// item when `key` is `None`): false without such a row, for a key that does not exist or is
    /// not of the key's type. Errors: database errors.
    pub async fn may(&mut self, collection: &Collection, action: Action, key: Option<&str>) -> Result<bool, ApiError> {
        let cond = match self.access {
            Access::Admin => None,
            Access::Subject(_) => match self.grant(collection, action) {
                Ok(grant) => grant.row_filter(),
                Err(_) => return Ok(false),
            },
        };
        let Some(key) = key else { return Ok(true) };
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let Ok(selector) = planner.keys_condition(collection, "t0", &[key.to_owned()]) else { return Ok(false) };
        let selector = self.scoped(&mut planner, collection, cond.as_ref(), selector)?;
        let mut sql = planner.sql;
        sql.text = format!("SELECT EXISTS (SELECT 1 FROM {} t0 WHERE {selector})", collection.table);
        // A key PostgreSQL cannot cast (not a UUID, say) names no item: the savepoint keeps the
        // transaction usable for the next question.
        sqlx::query("SAVEPOINT item_access").execute(&mut *self.conn).await.map_err(crate::db::map_error)?;
        match sql.query().fetch_one(&mut *self.conn).await {
            Ok(row) => row.try_get::<bool, _>(0).map_err(crate::db::map_error),
            Err(e) => {
                let e = crate::db::map_error(e);
                sqlx::query("ROLLBACK TO SAVEPOINT item_access").execute(&mut *self.conn).await.map_err(crate::db::map_error)?;
                if e.code == cdapi_proto::ErrorCode::InvalidQuery { Ok(false) } else { Err(e) }
            }
        }
    }

    /// `{update: {access}, delete: {access}, share: {access}}` for the item `key` (or the
    /// collection), Directus's shape. A singleton's `update` is about its one item (`create`
    /// while it has none) and carries the `fields` and `presets` of those rows. `share` is
    /// whether a `share` row reaches the item (docs/shares.md).
    pub async fn item_access(&mut self, collection: &Collection, key: Option<&str>) -> Result<Value, ApiError> {
        if matches!(self.access, Access::Admin) {
            return Ok(json!({"update": {"access": true}, "delete": {"access": true}, "share": {"access": true}}));
        }
        let mut update_action = Action::Update;
        let mut key = key;
        if collection.singleton {
            // The table name comes from the introspected schema, quoted by `Collection::table`.
            let sql = sqlx::AssertSqlSafe(format!("SELECT EXISTS (SELECT 1 FROM {})", collection.table));
            let exists: bool = sqlx::query_scalar(sql).fetch_one(&mut *self.conn).await.map_err(crate::db::map_error)?;
            if !exists {
                update_action = Action::Create;
            }
            key = None;
        }
        let update = self.may(collection, update_action, key).await?;
        let delete = self.may(collection, Action::Delete, key).await?;
        let share = self.may(collection, Action::Share, key).await?;
        let mut out = json!({"update": {"access": update}, "delete": {"access": delete}, "share": {"access": share}});
        if collection.singleton && update {
            let grant = self.grant(collection, update_action)?;
            let mut fields: Vec<String> = Vec::new();
            let mut presets = Map::new();
            for row in &grant.rows {
                match &row.fields {
                    Fields::All | Fields::AllBut(_) => fields = vec!["*".to_owned()],
                    Fields::Only(names) if fields.first().is_none_or(|f| f != "*") => {
                        fields.extend(names.iter().filter(|n| !fields.contains(n)).cloned().collect::<Vec<_>>());
                    }
                    Fields::Only(_) => {}
                }
                presets.extend(row.presets.clone());
            }
            fields.sort();
            out["update"]["fields"] = json!(fields);
            out["update"]["presets"] = Value::Object(presets);
        }
        Ok(out)
    }
}
