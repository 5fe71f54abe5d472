//! Relational writes (docs/what-works.md; Directus's write shapes), at any depth, inside the
//! request's transaction:
//! - M2O: an object without the related key creates the related item and stores its key; with
//!   the key of an existing item it updates that item (when it has other fields) and stores the
//!   key; with a key no item has yet it creates the item with that key (Directus: plain
//!   `integer` and natural keys); `null` clears.
//! - M2A: the same, in the collection the row's collection field names.
//! - O2M (and so M2M through the junction, and M2A junctions): the basic form is an array mixing
//!   keys (assign), objects without key (create) and objects with key (assign and update, or
//!   create with that key when no item has it);
//!   related items left out are removed from the relation. The detailed form is
//!   `{"create": [...], "update": [...], "delete": [keys]}`. Removal follows the relation's
//!   deselect action ([`Deselect`]): set the foreign key NULL, or delete the item.
//!
//! Items with nested data are saved one by one (their keys feed the next statement); payloads
//! without nested data keep the set-based path of [`super::Writer::create`].

use super::Writer;
use crate::permissions::Action;
use crate::query::Planner;
use crate::schema::{Collection, Deselect, FieldRelation};
use crate::sql::{Sql, column, ident};
use cdapi_proto::ApiError;
use serde_json::{Map, Value};
use sqlx::Row;
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
        self.save_with(collection, obj, key, depth, &[])
    }

    /// [`Self::save`], where the caller must also be granted the fields `extra` on the item
    /// (write-only values another statement stores).
    pub fn save_with<'b>(
        &'b mut self,
        collection: &'b Collection,
        obj: &'b Map<String, Value>,
        key: Option<String>,
        depth: usize,
        extra: &'b [&'b str],
    ) -> Saved<'b>
    where
        'w: 'b,
    {
        Box::pin(async move {
            if depth > self.limits.max_depth {
                return Err(ApiError::invalid_payload("Max relational depth exceeded"));
            }
            if depth == 0 {
                self.nesting = crate::activity::Nesting::default();
            }
            let outer = std::mem::replace(&mut self.nesting.depth, depth);
            let saved = self.save_here(collection, obj, key, depth, extra).await;
            self.nesting.depth = outer;
            if depth == 0 && saved.is_ok() {
                self.nesting.link(&mut *self.conn).await?;
            }
            saved
        })
    }

    /// [`Self::save_with`] of one item at `depth`, its nested items recorded as such. Not
    /// boxed: its recursion goes through `save_with`.
    async fn save_here(
        &mut self,
        collection: &Collection,
        obj: &Map<String, Value>,
        key: Option<String>,
        depth: usize,
        extra: &[&str],
    ) -> Result<String, ApiError> {
        let schema = self.schema;
        let mut own = Map::new();
        let mut to_many = Vec::new();
        for (name, value) in obj {
            let relation = collection.field(name).and_then(|f| f.relation.as_ref());
            match (relation, value) {
                (Some(FieldRelation::M2O { related, related_field, .. }), Value::Object(sub)) => {
                    let rel = schema
                        .collection(related)
                        .ok_or_else(|| ApiError::internal_because(format!("the related collection \"{related}\" is not in the snapshot")))?;
                    let k = self.save_related(rel, sub, depth).await?;
                    let fk = self.column_value(rel, &k, related_field).await?;
                    own.insert(name.clone(), Value::String(fk));
                }
                (Some(FieldRelation::M2A { collection_field, allowed }), Value::Object(sub)) => {
                    let target = obj
                        .get(collection_field)
                        .and_then(Value::as_str)
                        .ok_or_else(|| ApiError::invalid_payload(format!("\"{name}\" needs \"{collection_field}\" to name the item's collection")))?;
                    if !allowed.iter().any(|c| c == target) {
                        return Err(ApiError::invalid_payload(format!("\"{target}\" is not a collection \"{name}\" can hold")));
                    }
                    let rel = schema
                        .collection(target)
                        .ok_or_else(|| ApiError::internal_because(format!("the related collection \"{target}\" is not in the snapshot")))?;
                    let k = self.save_related(rel, sub, depth).await?;
                    own.insert(name.clone(), Value::String(k));
                }
                (Some(FieldRelation::O2M { .. }), _) => to_many.push((name, value)),
                _ => {
                    own.insert(name.clone(), value.clone());
                }
            }
        }
        // Relational fields are granted like the columns, by the same permission rows.
        let names: Vec<&str> = to_many.iter().map(|(n, _)| n.as_str()).chain(extra.iter().copied()).collect();
        // An update whose lists change is recorded after them (crate::activity::Nesting::hold).
        let hold = key.is_some() && !to_many.is_empty();
        self.nesting.hold = hold;
        self.nesting.held.clear();
        let key = self.save_own(collection, own, key, depth, &names).await;
        self.nesting.hold = false;
        // Taken now: the items nested in the lists are saved through here too.
        let held = std::mem::take(&mut self.nesting.held);
        let key = key?;
        // What follows (the to-many lists, items removed from them) is nested in this item.
        self.nesting.depth = depth + 1;
        for (name, value) in &to_many {
            let Some(FieldRelation::O2M { related, related_field, local_field, on_deselect, .. }) = collection.field(name).and_then(|f| f.relation.as_ref())
            else {
                continue;
            };
            let rel =
                schema.collection(related).ok_or_else(|| ApiError::internal_because(format!("the related collection \"{related}\" is not in the snapshot")))?;
            let local = self.column_value(collection, &key, local_field).await?;
            self.save_to_many(rel, related_field, &local, *on_deselect, name, value, depth).await?;
        }
        if hold {
            self.nesting.depth = depth;
            let mut fields = held;
            fields.extend(to_many.iter().map(|(n, _)| (*n).clone()));
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            self.record(collection, crate::activity::Change::Update, std::slice::from_ref(&key), &[fields]).await?;
        }
        Ok(key)
    }

    /// Creates (`key` None) or updates the item's own fields `own` (its M2O keys in place);
    /// returns its key. `names`: the relational and write-only fields granted with them.
    async fn save_own(
        &mut self,
        collection: &Collection,
        own: Map<String, Value>,
        key: Option<String>,
        depth: usize,
        names: &[&str],
    ) -> Result<String, ApiError> {
        let key = if depth > 0 && collection.name == crate::write::users::USERS {
            // A user nested in another item's payload keeps every user rule (password and
            // token stored hashed, sessions ended; docs/security.md "Sessions"). At depth 0
            // the request's own user write (crate::users) has applied them already.
            let done = match key {
                Some(k) => crate::write::users::update_keys_with(self, collection, std::slice::from_ref(&k), Value::Object(own), names).await?,
                None => crate::write::users::create_with(self, collection, Value::Object(own), names).await?,
            };
            done.into_iter().next().ok_or_else(|| ApiError::internal_because("a user write returned no key"))?
        } else {
            match key {
                // Lists alone (`own` empty, `names` not): `update_keys_with` checks the item
                // for them, and writes it only for its automatic update values.
                Some(k) => self.update_keys_with(collection, std::slice::from_ref(&k), &Value::Object(own), names).await?.remove(0),
                None => {
                    let mut keys = self.create_with(collection, &Value::Object(own), names).await?;
                    keys.pop().ok_or_else(|| ApiError::internal_because("a create returned no key"))?
                }
            }
        };
        Ok(key)
    }

    /// An M2O/M2A object: update (when it has a key of an existing item and more) or create
    /// (no key, or a key no item has yet: Directus creates the item with that key); returns the
    /// key.
    async fn save_related(&mut self, rel: &Collection, sub: &Map<String, Value>, depth: usize) -> Result<String, ApiError> {
        let key = match own_key(rel, sub) {
            Some(k) if !self.exists(rel, &k).await? => None,
            key => key,
        };
        match key {
            Some(k) if sub.len() == 1 => {
                self.require(rel, &k).await?;
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
    async fn save_to_many(
        &mut self,
        rel: &Collection,
        fk: &str,
        local: &str,
        deselect: Deselect,
        name: &str,
        value: &Value,
        depth: usize,
    ) -> Result<(), ApiError> {
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
                            let key = match own_key(rel, o) {
                                // A key no item has yet: created with that key (Directus).
                                Some(k) if !self.exists(rel, &k).await? => None,
                                key => key,
                            };
                            match key {
                                Some(k) => {
                                    let mut rest = m;
                                    rest.remove(&rel.primary_key[0]);
                                    self.save(rel, &rest, Some(k), depth + 1).await?
                                }
                                None => self.save(rel, &m, None, depth + 1).await?,
                            }
                        }
                        other => {
                            let k = key_text(other).ok_or_else(|| ApiError::invalid_payload(format!("\"{name}\" takes keys or objects")))?;
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
                                let k =
                                    own_key(rel, o).ok_or_else(|| ApiError::invalid_payload(format!("Items in \"{name}.update\" need their primary key")))?;
                                let mut rest = with_fk(o);
                                rest.remove(&rel.primary_key[0]);
                                self.save(rel, &rest, Some(k), depth + 1).await?;
                            }
                        }
                        "delete" => {
                            let keys = list
                                .iter()
                                .map(key_text)
                                .collect::<Option<Vec<_>>>()
                                .ok_or_else(|| ApiError::invalid_payload(format!("\"{name}.delete\" takes keys")))?;
                            if !keys.is_empty() {
                                self.deselect(rel, fk, local, deselect, &keys, true).await?;
                            }
                        }
                        other => {
                            return Err(ApiError::invalid_payload(format!("\"{name}\": unknown key \"{other}\" (use create, update, delete)")));
                        }
                    }
                }
                Ok(())
            }
            _ => Err(ApiError::invalid_payload(format!("\"{name}\" takes an array or {{\"create\", \"update\", \"delete\"}}"))),
        }
    }

    /// Removes items from the relation: those with `keys` (`only`), or all but `keys`.
    /// Removing deletes or updates the related items, so the caller's rows for that apply
    /// (docs/permissions.md): delete rows, or update rows granting the foreign key with a validation that
    /// accepts NULL. FORBIDDEN (nothing changed) when an item to remove is outside them.
    async fn deselect(&mut self, rel: &Collection, fk: &str, local: &str, action: Deselect, keys: &[String], only: bool) -> Result<(), ApiError> {
        let fk_field = rel.field(fk).ok_or_else(|| ApiError::internal_because(format!("the foreign key \"{fk}\" is not a field of \"{}\"", rel.name)))?;
        let scope = match action {
            Deselect::Delete => self.delete_scope(rel)?,
            Deselect::Nullify => {
                let payload = Map::from_iter([(fk.to_owned(), Value::Null)]);
                self.permitted(rel, Action::Update, &payload, &[]).await?.1
            }
        };
        // The items to remove, as a condition over `t0` in `planner`'s statement.
        let selection = |planner: &mut Planner<'_>| -> Result<String, ApiError> {
            let mut cond = format!("{} = {}", column("t0", fk), planner.sql.cast_param(local.to_owned(), &fk_field.db_type));
            if !keys.is_empty() {
                let set = planner.keys_condition(rel, "t0", keys)?;
                cond = if only { format!("{cond} AND {set}") } else { format!("{cond} AND NOT {set}") };
            }
            Ok(cond)
        };
        let target = &rel.table;
        if let Some(scope) = &scope {
            let mut planner = Planner::new(self.schema, self.limits, self.vars);
            let cond = selection(&mut planner)?;
            let allowed = planner.row_condition(rel, "t0", scope)?;
            let mut sql = planner.sql;
            sql.text = format!("SELECT count(*)::text FROM {target} t0 WHERE {cond} AND NOT coalesce({allowed}, FALSE)");
            let outside: String = sql.query().fetch_one(&mut *self.conn).await.map_err(crate::db::map_error)?.try_get(0).map_err(crate::db::map_error)?;
            if outside != "0" {
                return Err(ApiError::forbidden());
            }
        }
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let cond = selection(&mut planner)?;
        let mut sql: Sql = planner.sql;
        let returning = format!("RETURNING ({})::text", crate::query::keys::pk_expr(rel, "t0"));
        sql.text = match action {
            Deselect::Delete => format!("DELETE FROM {target} AS t0 WHERE {cond} {returning}"),
            Deselect::Nullify => format!("UPDATE {target} AS t0 SET {} = NULL WHERE {cond} {returning}", ident(fk)),
        };
        let removed = self.keys(&sql).await?;
        match action {
            Deselect::Delete => self.record(rel, crate::activity::Change::Delete, &removed, &[]).await,
            Deselect::Nullify => self.record(rel, crate::activity::Change::Update, &removed, &[vec![fk]]).await,
        }
    }

    /// FORBIDDEN unless the item with `key` exists and the caller's update rows let them write
    /// `obj` (validated) and the fields `extra` on it (any update row for neither), without
    /// writing anything. Errors also as [`Self::permitted`].
    pub async fn require_update(&mut self, collection: &Collection, key: &str, obj: &Map<String, Value>, extra: &[&str]) -> Result<(), ApiError> {
        let (_, scope) = self.permitted(collection, Action::Update, obj, extra).await?;
        let mut planner = Planner::new(self.schema, self.limits, self.vars);
        let expr = match &scope {
            Some(f) => format!("CASE WHEN {} THEN 1 END", planner.row_condition(collection, "t0", f)?),
            None => "1".into(),
        };
        super::item_text(&mut *self.conn, planner, collection, key, &expr).await?.map(|_| ()).ok_or_else(ApiError::forbidden)
    }

    /// FORBIDDEN unless item `key` of `collection`, just stored by a statement of its own from
    /// the client's values `obj` and values the server computed (a content version), is within
    /// the caller's create rows: their field list and validation on `obj`, their row filter on
    /// the stored item. Presets are not applied. The caller rolls back on the error.
    pub async fn require_created(&mut self, collection: &Collection, key: &str, obj: &Map<String, Value>) -> Result<(), ApiError> {
        match self.permitted(collection, Action::Create, obj, &[]).await? {
            (_, Some(cond)) => self.created_in_scope(collection, &[key.to_owned()], &cond).await,
            (_, None) => Ok(()),
        }
    }

    /// Whether an item with `key` exists, whoever may see it (as Directus decides between
    /// updating and creating a nested object that carries a key). A key that cannot be one of
    /// the collection's: FORBIDDEN.
    async fn exists(&mut self, collection: &Collection, key: &str) -> Result<bool, ApiError> {
        let planner = Planner::new(self.schema, self.limits, self.vars);
        Ok(super::item_value(&mut *self.conn, planner, collection, key, "1").await?.is_some())
    }

    /// FORBIDDEN unless the item with `key` exists.
    async fn require(&mut self, collection: &Collection, key: &str) -> Result<(), ApiError> {
        let planner = Planner::new(self.schema, self.limits, self.vars);
        super::item_text(&mut *self.conn, planner, collection, key, "1").await?.map(|_| ()).ok_or_else(ApiError::forbidden)
    }

    /// The text value of `field` of the item with `key`: FORBIDDEN when there is no such item,
    /// INVALID_PAYLOAD when the value is NULL (nothing can point at it).
    async fn column_value(&mut self, collection: &Collection, key: &str, field: &str) -> Result<String, ApiError> {
        let planner = Planner::new(self.schema, self.limits, self.vars);
        let value = super::item_text(&mut *self.conn, planner, collection, key, &column("t0", field)).await?;
        value.ok_or_else(|| ApiError::invalid_payload(format!("\"{field}\" of this item is empty; nothing can point at it")))
    }
}
