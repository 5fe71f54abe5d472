//! Moving a schema between environments (docs/data-model.md; Directus's `GET /schema/snapshot`,
//! `POST /schema/diff`, `POST /schema/apply`).
//!
//! - A **snapshot** is the user collections, their fields and their relations in Directus's
//!   shapes (`{version: 1, directus, vendor: "postgres", collections, fields, relations}`),
//!   without system collections (but with the fields a project added to them, and their
//!   relations, as Directus's snapshot has them: [`super::system_fields`]) and without the row
//!   ids of metadata (`meta.id`), so two environments with the same schema give the same
//!   snapshot.
//! - A **diff** compares this instance's snapshot (left) with a given one (right), per
//!   collection, field and relation, as a list of deep-diff changes (`kind` `N` new, `D`
//!   deleted, `E` edited, `A` array item; `path`, `lhs`, `rhs`), with the **hash** of the
//!   snapshot it was made against (SHA-256 of its JSON with sorted keys, [`hash`]).
//! - **Apply** refuses a diff whose hash is not the current one (the schema moved since), then
//!   runs the changes through the same code as `/collections`, `/fields` and `/relations`, in
//!   dependency order: new collections (with their new fields), edited collections, new and
//!   edited fields, new and edited relations, then deleted relations, fields and collections.
//!   All steps run in one transaction (one [`Change`], holding the schema-change lock from the
//!   hash check on, so no other change slips in between), each seeing the ones before it: a
//!   step Postgres or the model refuses rolls the whole apply back with its error, as Directus
//!   does.

use super::{Change, catalog, collections, fields, relations, sanitize};
use crate::AppState;
use crate::schema::Schema;
use cdapi_proto::ApiError;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashSet};

/// The Directus version whose snapshots these are (the API this project speaks; a snapshot of
/// another version needs `force`).
pub const DIRECTUS_VERSION: &str = "11.3.5";

/// Most changes one diff may carry (each is a DDL statement or a metadata write).
pub const MAX_CHANGES: usize = 10_000;

/// This instance's snapshot, from a fresh introspection. Errors: database errors.
pub async fn snapshot(state: &AppState) -> Result<Value, ApiError> {
    let mut conn = state.pool.acquire().await.map_err(crate::db::map_error)?;
    let schema = state.schema_seen_by(&mut conn).await?;
    snapshot_of(&mut conn, &schema).await
}

/// The snapshot of `schema` as `conn` sees the metadata (in a change: with its own writes).
/// Errors: database errors.
async fn snapshot_of(conn: &mut sqlx::PgConnection, schema: &Schema) -> Result<Value, ApiError> {
    let db = crate::db::map_error;
    // Where the table lives is this environment's business: the name is what moves.
    let custom: HashSet<(String, String)> = system_tables::metadata::custom_system_fields(&mut *conn).await.map_err(db)?.into_iter().collect();
    let none = HashSet::new();
    let collections = user_entries(catalog::collections(conn, schema, true, None).await.map_err(db)?, &none, |c| sanitize::collection(&c));
    let fields = user_entries(catalog::fields(conn, schema, None, None).await.map_err(db)?, &custom, |f| sanitize::field(&without_meta_id(f), false));
    let relations = user_entries(catalog::relations(conn, schema, None, None).await.map_err(db)?, &custom, |r| sanitize::relation(&without_meta_id(r)));
    Ok(json!({
        "version": 1,
        "directus": DIRECTUS_VERSION,
        "vendor": "postgres",
        "collections": collections,
        "fields": fields,
        "relations": relations,
    }))
}

/// The entries of user collections (not `directus_*`) and those of system collections whose
/// (collection, field) is in `custom` (fields a project added, as Directus's snapshot carries
/// them), each shaped by `shape`.
fn user_entries(list: Vec<Value>, custom: &HashSet<(String, String)>, shape: fn(Value) -> Value) -> Vec<Value> {
    let kept = |v: &Value| match v["collection"].as_str() {
        Some(c) if c.starts_with(crate::schema::SYSTEM_PREFIX) => custom.contains(&key(v)),
        Some(_) => true,
        None => false,
    };
    list.into_iter().filter(kept).map(shape).collect()
}

/// `v` without its metadata row id (`meta.id`), which differs between environments.
fn without_meta_id(mut v: Value) -> Value {
    if let Some(meta) = v.get_mut("meta").and_then(Value::as_object_mut) {
        meta.remove("id");
    }
    v
}

/// The hash of a snapshot: SHA-256 (hex) of its JSON with object keys sorted at every depth.
pub fn hash(snapshot: &Value) -> String {
    access_token::sha256_hex(&canonical(snapshot).to_string())
}

/// `v` with object keys in sorted order (serde_json may keep insertion order).
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            let sorted: BTreeMap<&String, Value> = o.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The key of a snapshot entry: collection, field (fields, relations).
fn key(v: &Value) -> (String, String) {
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
    (s("collection"), s("field"))
}

/// `POST /schema/diff`: the changes that make this instance's `current` snapshot into `target`,
/// `None` when there are none. Errors: INVALID_PAYLOAD (not a snapshot; another vendor or
/// Directus version without `force`).
pub fn diff(current: &Value, target: &Value, force: bool) -> Result<Option<Value>, ApiError> {
    let list = |v: &Value, k: &str| -> Result<Vec<Value>, ApiError> {
        match v.get(k) {
            Some(Value::Array(a)) => Ok(a.clone()),
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(_) => Err(ApiError::invalid_payload(format!("\"{k}\" of a snapshot must be an array"))),
        }
    };
    if !target.is_object() {
        return Err(ApiError::invalid_payload("A snapshot must be a JSON object"));
    }
    if !force {
        for (k, ours) in [("vendor", "postgres"), ("directus", DIRECTUS_VERSION)] {
            if target.get(k).and_then(Value::as_str).is_some_and(|v| v != ours) {
                return Err(ApiError::invalid_payload(format!(
                    "Provided snapshot's {k} \"{}\" does not match the current instance's \"{ours}\"; pass force=true to diff anyway",
                    target[k].as_str().unwrap_or_default()
                )));
            }
        }
    }
    let mut out = Map::new();
    let mut total = 0;
    for section in ["collections", "fields", "relations"] {
        let lhs_raw: BTreeMap<(String, String), Value> = list(current, section)?.into_iter().map(|v| (key(&v), v)).collect();
        let rhs_raw: BTreeMap<(String, String), Value> =
            list(target, section)?.into_iter().map(|v| if section == "collections" { v } else { without_meta_id(v) }).map(|v| (key(&v), v)).collect();
        // Both sides compared as Directus compares them; an auto-increment key without its column.
        let whole = |k: &(String, String)| section == "fields" && lhs_raw.get(k).is_some_and(sanitize::is_auto_increment_key);
        let lhs: BTreeMap<(String, String), Value> = lhs_raw.iter().map(|(k, v)| (k.clone(), sanitized(section, v, whole(k)))).collect();
        let rhs: BTreeMap<(String, String), Value> = rhs_raw.iter().map(|(k, v)| (k.clone(), sanitized(section, v, whole(k)))).collect();
        let mut entries = Vec::new();
        for k in lhs.keys().chain(rhs.keys().filter(|k| !lhs.contains_key(*k))) {
            let changes = match (lhs.get(k), rhs.get(k)) {
                (Some(l), None) => vec![json!({"kind": "D", "lhs": l})],
                (None, Some(r)) => vec![json!({"kind": "N", "rhs": r})],
                (Some(l), Some(r)) => {
                    let mut c = Vec::new();
                    deep(&mut Vec::new(), l, r, &mut c);
                    c
                }
                (None, None) => Vec::new(),
            };
            if changes.is_empty() {
                continue;
            }
            total += changes.len();
            let source = rhs.get(k).or_else(|| lhs.get(k)).cloned().unwrap_or(Value::Null);
            let mut entry = json!({"collection": k.0, "diff": changes});
            if section != "collections" {
                entry["field"] = json!(k.1);
            }
            if section == "relations" {
                entry["related_collection"] = source["related_collection"].clone();
            }
            entries.push(entry);
        }
        out.insert(section.to_owned(), Value::Array(entries));
    }
    if total > MAX_CHANGES {
        return Err(ApiError::invalid_payload(format!("The diff has {total} changes, more than {MAX_CHANGES}")));
    }
    Ok((total > 0).then_some(Value::Object(out)))
}

/// `v`, an entry of a snapshot's `section`, as Directus compares it (see [`sanitize`]).
fn sanitized(section: &str, v: &Value, whole_schema_out: bool) -> Value {
    match section {
        "collections" => sanitize::collection(v),
        "fields" => sanitize::field(v, whole_schema_out),
        _ => sanitize::relation(v),
    }
}

/// Deep-diff changes from `l` to `r` under `path` (objects key by key; anything else, arrays
/// included, as one edit).
fn deep(path: &mut Vec<Value>, l: &Value, r: &Value, out: &mut Vec<Value>) {
    match (l, r) {
        (Value::Object(lo), Value::Object(ro)) => {
            for (k, lv) in lo {
                path.push(json!(k));
                match ro.get(k) {
                    Some(rv) => deep(path, lv, rv, out),
                    None => out.push(json!({"kind": "D", "path": path.clone(), "lhs": lv})),
                }
                path.pop();
            }
            for (k, rv) in ro.iter().filter(|(k, _)| !lo.contains_key(*k)) {
                path.push(json!(k));
                out.push(json!({"kind": "N", "path": path.clone(), "rhs": rv}));
                path.pop();
            }
        }
        _ if l == r => {}
        _ => out.push(json!({"kind": "E", "path": path.clone(), "lhs": l, "rhs": r})),
    }
}

/// Applies deep-diff `changes` to `v` (as `deep-diff`'s `applyChange` does: `N`/`E` set the
/// path to `rhs`, `D` removes it, `A` applies `item` at `index` of the array at the path).
/// Errors: INVALID_PAYLOAD (a change that is not one of these, or a path through a
/// non-object).
fn apply_changes(v: &mut Value, changes: &[Value]) -> Result<(), ApiError> {
    let bad = || ApiError::invalid_payload("A diff change must be {kind: N|D|E|A, path, lhs, rhs}");
    for c in changes {
        let path: Vec<Value> = c.get("path").and_then(Value::as_array).cloned().unwrap_or_default();
        let kind = c.get("kind").and_then(Value::as_str).ok_or_else(bad)?;
        let (item, kind) = match kind {
            "A" => {
                let item = c.get("item").ok_or_else(bad)?;
                let mut p = path.clone();
                p.push(c.get("index").cloned().ok_or_else(bad)?);
                ((p, item.clone()), item.get("kind").and_then(Value::as_str).ok_or_else(bad)?)
            }
            k => ((path, c.clone()), k),
        };
        let (path, change) = item;
        let Some((last, parents)) = path.split_last() else {
            // The whole object.
            match kind {
                "N" | "E" => *v = change.get("rhs").cloned().unwrap_or(Value::Null),
                "D" => *v = Value::Null,
                _ => return Err(bad()),
            }
            continue;
        };
        let mut at = &mut *v;
        for p in parents {
            at = step(at, p, true).ok_or_else(bad)?;
        }
        match kind {
            "N" | "E" => {
                let rhs = change.get("rhs").cloned().unwrap_or(Value::Null);
                *step(at, last, true).ok_or_else(bad)? = rhs;
            }
            "D" => match (at, last) {
                (Value::Object(o), Value::String(k)) => {
                    o.remove(k);
                }
                (Value::Array(a), Value::Number(n)) => {
                    if let Some(i) = n.as_u64().map(|i| i as usize).filter(|i| *i < a.len()) {
                        a.remove(i);
                    }
                }
                _ => return Err(bad()),
            },
            _ => return Err(bad()),
        }
    }
    Ok(())
}

/// The value at `key` of `v` (an object key or an array index), made when `create`.
fn step<'a>(v: &'a mut Value, key: &Value, create: bool) -> Option<&'a mut Value> {
    if v.is_null() && create {
        *v = if key.is_number() { Value::Array(Vec::new()) } else { Value::Object(Map::new()) };
    }
    match (v, key) {
        (Value::Object(o), Value::String(k)) => Some(o.entry(k.clone()).or_insert(Value::Null)),
        (Value::Array(a), Value::Number(n)) => {
            let i = usize::try_from(n.as_u64()?).ok()?;
            if i >= a.len() && create && i <= a.len() + MAX_CHANGES {
                a.resize(i + 1, Value::Null);
            }
            a.get_mut(i)
        }
        _ => None,
    }
}

/// One entry of a diff section: its key and changes.
struct Entry {
    collection: String,
    field: String,
    changes: Vec<Value>,
}

fn entries(diff: &Value, section: &str) -> Result<Vec<Entry>, ApiError> {
    let bad = || ApiError::invalid_payload(format!("\"diff.{section}\" must be an array of {{collection, field?, diff: [...]}}"));
    match diff.get(section) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|e| {
                Ok(Entry {
                    collection: e.get("collection").and_then(Value::as_str).ok_or_else(bad)?.to_owned(),
                    field: e.get("field").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    changes: e.get("diff").and_then(Value::as_array).cloned().ok_or_else(bad)?,
                })
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

/// Whether an entry creates (`N` without a path) or deletes (`D` without a path) its object.
fn whole(e: &Entry, kind: &str) -> Option<Value> {
    match e.changes.as_slice() {
        [c] if c.get("path").is_none() && c["kind"] == kind => Some(c.get(if kind == "N" { "rhs" } else { "lhs" }).cloned().unwrap_or(Value::Null)),
        _ => None,
    }
}

fn object(v: Value) -> Result<Map<String, Value>, ApiError> {
    match v {
        Value::Object(o) => Ok(o),
        _ => Err(ApiError::invalid_payload("A diff's new object must be a JSON object")),
    }
}

/// `POST /schema/apply` `{hash, diff}` (see the module docs): all or nothing. Errors:
/// INVALID_PAYLOAD (no or another hash, a malformed diff, a step Postgres or the model
/// refuses), FORBIDDEN (a change to a collection, field or relation that does not exist),
/// SERVICE_UNAVAILABLE (a lock).
pub async fn apply(state: &AppState, body: &Map<String, Value>, caller: &crate::auth::Caller) -> Result<(), ApiError> {
    let change = super::retried(move || applied(state, body, caller)).await?;
    change.commit(state).await?;
    Ok(())
}

/// The steps of [`apply`], in a change left to commit.
async fn applied(state: &AppState, body: &Map<String, Value>, caller: &crate::auth::Caller) -> Result<Change, ApiError> {
    let given = body.get("hash").and_then(Value::as_str).ok_or_else(|| ApiError::invalid_payload("\"hash\" is required"))?;
    let diff = body.get("diff").filter(|d| d.is_object()).ok_or_else(|| ApiError::invalid_payload("\"diff\" must be an object"))?;
    let mut change = Change::begin(state).await?;
    let schema = change.schema.clone();
    let current = snapshot_of(&mut change.tx, &schema).await?;
    if given != hash(&current) {
        return Err(ApiError::invalid_payload(
            "Provided hash does not match the current instance's schema hash, indicating the schema has changed after this diff was generated. Please generate a new diff.",
        ));
    }
    let (cols, flds, rels) = (entries(diff, "collections")?, entries(diff, "fields")?, entries(diff, "relations")?);
    if cols.len() + flds.len() + rels.len() > MAX_CHANGES {
        return Err(ApiError::invalid_payload(format!("A diff may change at most {MAX_CHANGES} objects")));
    }
    let find = |section: &str, c: &str, f: &str| current[section].as_array().and_then(|a| a.iter().find(|v| key(v) == (c.to_owned(), f.to_owned())).cloned());
    // New collections, each with the new fields the diff gives it.
    let new_collections: Vec<&Entry> = cols.iter().filter(|e| whole(e, "N").is_some()).collect();
    for e in &new_collections {
        let mut data = object(whole(e, "N").unwrap_or_default())?;
        if data.get("schema").is_some_and(|s| !s.is_null()) {
            let own: Vec<Value> = flds.iter().filter(|f| f.collection == e.collection).filter_map(|f| whole(f, "N")).collect();
            data.insert("fields".into(), Value::Array(own));
        }
        collections::create(&mut change, &data).await?;
    }
    // Each phase reads the schema as the phases before it left it (inside the transaction);
    // the steps of one phase do not depend on each other.
    change.refresh(state).await?;
    let is_new = |c: &str| new_collections.iter().any(|e| e.collection == c);
    for e in cols.iter().filter(|e| whole(e, "N").is_none() && whole(e, "D").is_none()) {
        let mut now = find("collections", &e.collection, "").ok_or_else(ApiError::forbidden)?;
        apply_changes(&mut now, &e.changes)?;
        collections::update(&mut change, &e.collection, &object(json!({"meta": now["meta"]}))?).await?;
    }
    change.refresh(state).await?;
    for e in flds.iter().filter(|e| whole(e, "D").is_none()) {
        match whole(e, "N") {
            Some(_) if is_new(&e.collection) => {}
            Some(new) => {
                fields::create(&mut change, &e.collection, &object(new)?).await?;
            }
            None => {
                let mut now = find("fields", &e.collection, &e.field).ok_or_else(ApiError::forbidden)?;
                apply_changes(&mut now, &e.changes)?;
                // Only the parts the diff touches: a PATCH changes only what it sends.
                let mut data = Map::new();
                for part in ["type", "schema", "meta"] {
                    if e.changes.iter().any(|c| c.get("path").and_then(|p| p.get(0)).and_then(Value::as_str) == Some(part)) {
                        data.insert(part.to_owned(), now[part].clone());
                    }
                }
                fields::update(&mut change, &e.collection, &e.field, &data).await?;
            }
        }
    }
    change.refresh(state).await?;
    for e in rels.iter().filter(|e| whole(e, "D").is_none()) {
        match whole(e, "N") {
            Some(new) => {
                relations::create(&mut change, &object(new)?).await?;
            }
            None => {
                let mut now = find("relations", &e.collection, &e.field).ok_or_else(ApiError::forbidden)?;
                apply_changes(&mut now, &e.changes)?;
                let data = json!({"schema": now["schema"], "meta": now["meta"]});
                relations::update(&mut change, &e.collection, &e.field, &object(data)?).await?;
            }
        }
    }
    change.refresh(state).await?;
    for e in rels.iter().filter(|e| whole(e, "D").is_some()) {
        relations::delete(&mut change, &e.collection, &e.field).await?;
    }
    change.refresh(state).await?;
    let deleted_collection = |c: &str| cols.iter().any(|e| e.collection == c && whole(e, "D").is_some());
    for e in flds.iter().filter(|e| whole(e, "D").is_some() && !deleted_collection(&e.collection)) {
        fields::delete(&mut change, &e.collection, &e.field).await?;
    }
    change.refresh(state).await?;
    for e in cols.iter().filter(|e| whole(e, "D").is_some()) {
        collections::delete(&mut change, &e.collection).await?;
    }
    // Each object the diff changed is one activity row, as a change through its own endpoint.
    for (system, entries) in [("directus_collections", &cols), ("directus_fields", &flds), ("directus_relations", &rels)] {
        for e in entries.iter() {
            let action = match (whole(e, "N"), whole(e, "D")) {
                (Some(_), _) => crate::activity::Change::Create,
                (None, Some(_)) => crate::activity::Change::Delete,
                (None, None) => crate::activity::Change::Update,
            };
            let field = if system == "directus_collections" { "" } else { e.field.as_str() };
            crate::activity::record_schema(&mut change.tx, system, action, (&e.collection, field), caller.vars.user.as_deref(), &caller.client).await?;
        }
    }
    Ok(change)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_applied_to_the_left_gives_the_right() {
        let l = json!({"meta": {"note": "a", "hidden": false, "options": {"x": 1}}, "schema": {"max_length": 10}, "gone": 1});
        let r = json!({"meta": {"note": "b", "hidden": false, "options": {"x": 1, "y": [1, 2]}}, "schema": {"max_length": null}, "new": true});
        let mut changes = Vec::new();
        deep(&mut Vec::new(), &l, &r, &mut changes);
        assert_eq!(changes.len(), 5, "{changes:?}");
        let mut v = l.clone();
        apply_changes(&mut v, &changes).expect("applies");
        assert_eq!(v, r);
    }

    #[test]
    fn array_changes_as_deep_diff_writes_them_apply() {
        let mut v = json!({"meta": {"special": ["m2o"]}});
        let changes = [json!({"kind": "A", "path": ["meta", "special"], "index": 1, "item": {"kind": "N", "rhs": "cast-json"}})];
        apply_changes(&mut v, &changes).expect("applies");
        assert_eq!(v, json!({"meta": {"special": ["m2o", "cast-json"]}}));
        let changes = [json!({"kind": "A", "path": ["meta", "special"], "index": 0, "item": {"kind": "D", "lhs": "m2o"}})];
        apply_changes(&mut v, &changes).expect("applies");
        assert_eq!(v, json!({"meta": {"special": ["cast-json"]}}));
        assert!(apply_changes(&mut v, &[json!({"kind": "X"})]).is_err());
    }

    #[test]
    fn diffs_name_their_objects_and_refuse_other_vendors() {
        let current =
            json!({"collections": [{"collection": "a", "meta": null}], "fields": [{"collection": "a", "field": "id", "type": "integer"}], "relations": []});
        let target = json!({"vendor": "postgres", "collections": [{"collection": "b", "meta": null}], "fields": [{"collection": "a", "field": "id", "type": "bigInteger"}], "relations": []});
        let d = diff(&current, &target, false).expect("diff").expect("changes");
        assert_eq!(
            d["collections"],
            json!([
                {"collection": "a", "diff": [{"kind": "D", "lhs": {"collection": "a", "meta": null}}]},
                {"collection": "b", "diff": [{"kind": "N", "rhs": {"collection": "b", "meta": null}}]},
            ])
        );
        assert_eq!(d["fields"], json!([{"collection": "a", "field": "id", "diff": [{"kind": "E", "path": ["type"], "lhs": "integer", "rhs": "bigInteger"}]}]));
        assert!(diff(&current, &current, false).expect("diff").is_none());
        assert!(diff(&current, &json!({"vendor": "mysql"}), false).is_err());
        assert!(diff(&current, &json!({"vendor": "mysql"}), true).is_ok());
    }
}
