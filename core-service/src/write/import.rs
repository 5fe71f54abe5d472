//! Imports (Directus's `POST /utils/import/:collection`, core `ImportItems`; docs/history.md
//! "Utilities"): each item of each chunk is created, or updated when it carries the primary key
//! of an item that exists ("upsert", as Directus's `upsertOne`), through the same writes as any
//! request (permissions, validation, automatic values, users' secrets, comments' checks,
//! activity), all in the request's one transaction. Consecutive items without a key are
//! created by one statement.

use super::Writer;
use crate::permissions::{Access, Action};
use crate::query::Planner;
use crate::schema::Collection;
use cdapi_proto::ApiError;
use serde_json::Value;

impl Writer<'_> {
    /// Whether the caller may import into `collection`: admin access, or create and update
    /// rights on it and not a system collection (as Directus). Errors: FORBIDDEN.
    pub fn may_import(&self, collection: &Collection) -> Result<(), ApiError> {
        if matches!(self.access, Access::Admin) {
            return Ok(());
        }
        if collection.system {
            return Err(ApiError::forbidden());
        }
        self.grant(collection, Action::Create)?;
        self.grant(collection, Action::Update)?;
        Ok(())
    }

    /// Imports the items of `items` (a JSON array of objects). Errors: INVALID_PAYLOAD (not an
    /// array of objects), the writes' (FORBIDDEN, FAILED_VALIDATION...).
    pub async fn import(&mut self, collection: &Collection, items: &[u8]) -> Result<(), ApiError> {
        let items: Vec<Value> = serde_json::from_slice(items).map_err(|e| ApiError::invalid_payload(format!("An import chunk is not a JSON array: {e}")))?;
        let pk = match collection.primary_key.as_slice() {
            [pk] => Some(pk.clone()),
            _ => None,
        };
        let mut pending: Vec<Value> = Vec::new();
        for item in items {
            let Value::Object(mut obj) = item else { return Err(ApiError::invalid_payload("Every imported item must be an object")) };
            let key = pk.as_ref().and_then(|pk| match obj.get(pk) {
                Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                Some(Value::Number(n)) => Some(n.to_string()),
                _ => None,
            });
            let exists = match &key {
                Some(k) => {
                    let planner = Planner::new(self.schema, self.limits, self.vars);
                    super::item_value(&mut *self.conn, planner, collection, k, "1").await?.is_some()
                }
                None => false,
            };
            if !exists {
                pending.push(Value::Object(obj));
                continue;
            }
            self.flush(collection, &mut pending).await?;
            if let (Some(pk), Some(k)) = (&pk, key) {
                obj.remove(pk);
                crate::write::users::update_keys(self, collection, &[k], Value::Object(obj)).await?;
            }
        }
        self.flush(collection, &mut pending).await
    }

    /// Creates the gathered items, if any.
    async fn flush(&mut self, collection: &Collection, pending: &mut Vec<Value>) -> Result<(), ApiError> {
        if pending.is_empty() {
            return Ok(());
        }
        let data = Value::Array(std::mem::take(pending));
        crate::write::comments::create(self, collection, data).await.map(|_| ())
    }
}
