//! Relational writes (spec: "Relational field kinds and write shapes"), at any depth, inside the
//! request's transaction:
//! - M2O: an object without the related key creates the related item and stores its key; with
//!   the key it updates that item (when it has other fields) and stores the key; `null` clears.
//! - M2A: the same, in the collection the row's collection field names.
//! - O2M (and so M2M through the junction, and M2A junctions): the basic form is an array mixing
//!   keys (assign), objects without key (create) and objects with key (assign and update);
//!   related items left out are removed from the relation. The detailed form is
//!   `{"create": [...], "update": [...], "delete": [keys]}`. Removal follows the relation's
//!   deselect action ([`Deselect`]): set the foreign key NULL, or delete the item.
//!
//! Items with nested data are saved one by one (their keys feed the next statement); payloads
//! without nested data keep the set-based path of [`super::Writer::create`].

use super::Writer;
use crate::query::Planner;
use crate::permissions::{Access, Action};
use crate::query::sql::{Sql, column, ident};
use crate::schema::{Collection, Deselect, FieldRelation};
use cdapi_proto::ApiError;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;

type Saved<'b> = Pin<Box<dyn Future<Output = Result<String, ApiError>> + Send + 'b>>;

/// Whether a payload object holds nested relational data (and so needs [`Writer::save`]).
pub fn has_nested(collection: &Collection, obj: &Map<String, Value>) -> bool {
    obj.iter().any(|(name, v)| match collection.field(name).and_then(|f| f.relation.as_ref()) {
        Some(FieldRelation::O2M { .. }) => true,
        Some(FieldRelation::M2O { .. }) | Some(FieldRelation::M2A { .. }) => v.is_object(),
        None => false,
    })
}

/// A JSON key (number or string) in its text form.
fn key_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The related item's key when the payload object carries it (single-column keys only).
fn own_key(collection: &Collection, obj: &Map<String, Value>) -> Option<String> {
    match collection.primary_key.as_slice() {
        [pk] => obj.get(pk).and_then(key_text),
        _ => None,
    }
}

impl<'w> Writer<'w> {
    /// Saves one item and everything nested in it; returns its key. `key`: update that item
    /// (FORBIDDEN when it does not exist), else create one. Errors as the flat writes, plus
    /// INVALID_PAYLOAD for malformed relational values and nesting deeper than 10.
    pub fn save<'b>(&'b mut self, collection: &'b Collection, obj: &'b Map<String, Value>, key: Option<String>, depth: usize) -> Saved<'b>
    where
        'w: 'b,
    {
        Box::pin(async move {
            if depth > crate::query::MAX_RELATIONAL_DEPTH {
                return Err(ApiError::invalid_payload("Max relational depth exceeded"));
            }
            let schema = self.schema;
            let mut own = Map::new();
            let mut to_many = Vec::new();
            for (name, value) in obj {
                let relation = collection.field(name).and_then(|f| f.relation.as_ref());
                match (relation, value) {
                    (Some(FieldRelation::M2O { related, related_field, .. }), Value::Object(sub)) => {
                        let rel = schema.collection(related).ok_or_else(ApiError::internal)?;
                        let k = self.save_related(rel, sub, depth).await?;
                        let fk = self.column_value(rel, &k, related_field).await?;
                        own.insert(name.clone(), Value::String(fk));
                    }
                    (Some(FieldRelation::M2A { collection_field, allowed }), Value::Object(sub)) => {
                        let target = obj.get(collection_field).and_then(Value::as_str).ok_or_else(|| {
                            ApiError::invalid_payload(format!("\"{name}\" needs \"{collection_field}\" to name the item's collection"))
                        })?;
                        if !allowed.iter().any(|c| c == target) {
                            return Err(ApiError::invalid_payload(format!("\"{target}\" is not a collection \"{name}\" can hold")));
                        }
                        let rel = schema.collection(target).ok_or_else(ApiError::internal)?;
                        let k = self.save_related(rel, sub, depth).await?;
                        own.insert(name.clone(), Value::String(k));
                    }
                    (Some(FieldRelation::O2M { .. }), _) => to_many.push((name, value)),
                    _ => {
                        own.insert(name.clone(), value.clone());
                    }
                }
            }
            // Relational fields are checked here (the flat writes see only the columns).
            let action = if key.is_some() { Action::Update } else { Action::Create };
            if !matches!(self.access, Access::Admin) {
                let grant = self.grant(collection, action)?;
                if let Some((name, _)) = to_many.iter().find(|(n, _)| !grant.fields.allows(n)) {
                    return Err(crate::query::forbidden_field(&collection.name, name));
                }
            }
            let key = match key {
                Some(k) if own.is_empty() => {
                    self.require(collection, &k, Some(Action::Update)).await?;
                    k
                }
                Some(k) => self.update_keys(collection, std::slice::from_ref(&k), &Value::Object(own)).await?.remove(0),
                None => {
                    let mut keys = self.create(collection, &Value::Object(own)).await?;
                    keys.pop().ok_or_else(ApiError::internal)?
                }
            };
            for (name, value) in to_many {
                let Some(FieldRelation::O2M { related, related_field, local_field, on_deselect, .. }) =
                    collection.field(name).and_then(|f| f.relation.as_ref())
                else {
                    continue;
                };
                let rel = schema.collection(related).ok_or_else(ApiError::internal)?;
                let local = self.column_value(collection, &key, local_field).await?;
                self.save_to_many(rel, related_field, &local, *on_deselect, name, value, depth).await?;
            }
            Ok(key)
        })
    }

    /// An M2O/M2A object: update (when it has a key and more) or create; returns the key.
    async fn save_related(&mut self, rel: &Collection, sub: &Map<String, Value>, depth: usize) -> Result<String, ApiError> {
        match own_key(rel, sub) {
            Some(k) if sub.len() == 1 => {
                self.require(rel, &k, None).await?;
                Ok(k)
            }
            Some(k) => {
                let mut rest = sub.clone();
                rest.remove(&rel.primary_key[0]);
                self.save(rel, &rest, Some(k), depth + 1).await
            }
            None => self.save(rel, sub, None, depth + 1).await,
        }
    }

    /// Applies an O2M value (basic array or detailed object) for the parent whose referenced
    /// column holds `local`.
    #[allow(clippy::too_many_arguments)]
    async fn save_to_many(&mut self, rel: &Collection, fk: &str, local: &str, deselect: Deselect, name: &str, value: &Value, depth: usize) -> Result<(), ApiError> {
        let with_fk = |item: &Map<String, Value>| {
            let mut m = item.clone();
            m.insert(fk.to_owned(), Value::String(local.to_owned()));
            m
        };
        match value {
            Value::Array(_) | Value::Null => {
                let empty = Vec::new();
                let items = if let Value::Array(items) = value { items } else { &empty };
                let mut keep = Vec::with_capacity(items.len());
                for item in items {
                    let k = match item {
                        Value::Object(o) => {
                            let m = with_fk(o);
                            match own_key(rel, o) {
                                Some(k) => {
                                    let mut rest = m;
                                    rest.remove(&rel.primary_key[0]);
                                    self.save(rel, &rest, Some(k), depth + 1).await?
                                }
                                None => self.save(rel, &m, None, depth + 1).await?,
                            }
                        }
                        other => {
                            let k = key_text(other).ok_or_else(|| {
                                ApiError::invalid_payload(format!("\"{name}\" takes keys or objects"))
                            })?;
                            let m = with_fk(&Map::new());
                            self.save(rel, &m, Some(k), depth + 1).await?
                        }
                    };
                    keep.push(k);
                }
                self.deselect(rel, fk, local, deselect, &keep, false).await
            }
            Value::Object(detail) => {
                for (op, list) in detail {
                    let Value::Array(list) = list else {
                        return Err(ApiError::invalid_payload(format!("\"{name}.{op}\" must be an array")));
                    };
                    match op.as_str() {
                        "create" => {
                            for item in list {
                                let o = item.as_object().ok_or_else(|| ApiError::invalid_payload(format!("\"{name}.create\" takes objects")))?;
                                self.save(rel, &with_fk(o), None, depth + 1).await?;
                            }
                        }
                        "update" => {
                            for item in list {
                                let o = item.as_object().ok_or_else(|| ApiError::invalid_payload(format!("\"{name}.update\" takes objects")))?;
                                let k = own_key(rel, o).ok_or_else(|| {
                                    ApiError::invalid_payload(format!("Items in \"{name}.update\" need their primary key"))
                                })?;
                                let mut rest = with_fk(o);
                                rest.remove(&rel.primary_key[0]);
                                self.save(rel, &rest, Some(k), depth + 1).await?;
                            }
                        }
                        "delete" => {
                            let keys = list.iter().map(key_text).collect::<Option<Vec<_>>>().ok_or_else(|| {
                                ApiError::invalid_payload(format!("\"{name}.delete\" takes keys"))
                            })?;
                            if !keys.is_empty() {
                                self.deselect(rel, fk, local, deselect, &keys, true).await?;
                            }
                        }
                        other => {
                            return Err(ApiError::invalid_payload(format!(
                                "\"{name}\": unknown key \"{other}\" (use create, update, delete)"
                            )));
                        }
                    }
                }
                Ok(())
            }
            _ => Err(ApiError::invalid_payload(format!("\"{name}\" takes an array or {{\"create\", \"update\", \"delete\"}}"))),
        }
    }

    /// Removes items from the relation: those with `keys` (`only`), or all but `keys`.
    async fn deselect(&mut self, rel: &Collection, fk: &str, local: &str, action: Deselect, keys: &[String], only: bool) -> Result<(), ApiError> {
        let fk_field = rel.field(fk).ok_or_else(ApiError::internal)?;
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let mut cond = format!("{} = {}", column("t0", fk), planner.sql.cast_param(local.to_owned(), &fk_field.db_type));
        if !keys.is_empty() {
            let set = planner.keys_condition(rel, "t0", keys)?;
            cond = if only { format!("{cond} AND {set}") } else { format!("{cond} AND NOT {set}") };
        }
        // Removing an item from the relation deletes or updates it: the caller's grant for that
        // applies (items outside it stay; a missing grant is FORBIDDEN).
        let change = if action == Deselect::Delete { Action::Delete } else { Action::Update };
        let cond = self.scoped(&mut planner, rel, change, cond)?;
        let mut sql: Sql = planner.sql;
        let target = &rel.table;
        sql.text = match action {
            Deselect::Delete => format!("DELETE FROM {target} AS t0 WHERE {cond}"),
            Deselect::Nullify => format!("UPDATE {target} AS t0 SET {} = NULL WHERE {cond}", ident(fk)),
        };
        sql.query().execute(&mut *self.conn).await.map_err(crate::db::map_write_error)?;
        Ok(())
    }

    /// FORBIDDEN unless every item of `keys` exists and is within the caller's update grant.
    pub async fn require_updatable(&mut self, collection: &Collection, keys: &[String]) -> Result<(), ApiError> {
        for k in keys {
            self.require(collection, k, Some(Action::Update)).await?;
        }
        Ok(())
    }

    /// FORBIDDEN unless the item with `key` exists (and, with `action`, is within the caller's
    /// grant for it).
    async fn require(&mut self, collection: &Collection, key: &str, action: Option<Action>) -> Result<(), ApiError> {
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let scope = match action {
            Some(a) => self.scope(&mut planner, collection, a)?,
            None => None,
        };
        let expr = match scope {
            Some(cond) => format!("CASE WHEN {cond} THEN 1 END"),
            None => "1".into(),
        };
        super::item_text(&mut *self.conn, planner, collection, key, &expr).await?.map(|_| ()).ok_or_else(ApiError::forbidden)
    }

    /// The text value of `field` of the item with `key`: FORBIDDEN when there is no such item,
    /// INVALID_PAYLOAD when the value is NULL (nothing can point at it).
    async fn column_value(&mut self, collection: &Collection, key: &str, field: &str) -> Result<String, ApiError> {
        let planner = Planner::new(self.schema, self.limits, self.vars);
        let value = super::item_text(&mut *self.conn, planner, collection, key, &column("t0", field)).await?;
        value.ok_or_else(|| ApiError::invalid_payload(format!("\"{field}\" of this item is empty; nothing can point at it")))
    }
}
