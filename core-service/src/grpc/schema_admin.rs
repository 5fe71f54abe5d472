//! SchemaService's schema-management RPCs (`schema.proto`: ReadCollections ... DeleteRelation):
//! who may call them, and the translation to [`crate::schema_admin`]. Reads see the caller's view of
//! the snapshot; changes need admin access and answer with the changed object as read back
//! from the rebuilt snapshot.

use crate::AppState;
use crate::permissions::Access;
use crate::schema::Schema;
use crate::schema_admin::{self, Change, catalog};
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{ItemAccessRequest, SchemaChange, SchemaReply, SchemaTarget};
use serde_json::Value;
use std::sync::Arc;

/// Which kind of schema object a call is about.
#[derive(Clone, Copy)]
pub enum Kind {
    /// `/collections`.
    Collections,
    /// `/fields`.
    Fields,
    /// `/relations`.
    Relations,
}

/// A non-empty name, or `None`.
fn named(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

/// Lists or reads one object of `kind` in `view`. One object (`collection`, or `collection` and
/// `field`, given) answers as an object, FORBIDDEN when there is none; otherwise an array.
async fn read_in(state: &AppState, view: &Schema, admin: bool, kind: Kind, target: &SchemaTarget) -> Result<Value, ApiError> {
    let (collection, field) = (named(&target.collection), named(&target.field));
    if let Some(c) = collection
        && view.collection(c).is_none()
        && !(admin && matches!(kind, Kind::Collections))
    {
        return Err(ApiError::forbidden());
    }
    let mut conn = state.pool.acquire().await.map_err(crate::db::map_error)?;
    let found = match kind {
        Kind::Collections => catalog::collections(&mut conn, view, admin, collection).await,
        Kind::Fields => catalog::fields(&mut conn, view, collection, field).await,
        Kind::Relations => catalog::relations(&mut conn, view, collection, field).await,
    }
    .map_err(crate::db::map_error)?;
    let one = match kind {
        Kind::Collections => collection.is_some(),
        Kind::Fields | Kind::Relations => field.is_some(),
    };
    if one { found.into_iter().next().ok_or_else(ApiError::forbidden) } else { Ok(Value::Array(found)) }
}

fn reply(v: &Value) -> SchemaReply {
    SchemaReply { data: Bytes::from(v.to_string()) }
}

/// `Read*`: see [`read_in`]; the caller's view of the snapshot.
pub async fn read(state: &AppState, md: &tonic::metadata::MetadataMap, kind: Kind, target: &SchemaTarget) -> Result<SchemaReply, ApiError> {
    let caller = state.caller(md).await?;
    let admin = matches!(caller.access, Access::Admin);
    Ok(reply(&read_in(state, &caller.read, admin, kind, target).await?))
}

/// Admin access (a policy with it that admits the client's address), or FORBIDDEN (schema
/// changes, `ReloadSchema`).
pub async fn admin(state: &AppState, md: &tonic::metadata::MetadataMap) -> Result<crate::auth::Caller, ApiError> {
    let caller = state.caller(md).await?;
    if matches!(caller.access, Access::Admin) { Ok(caller) } else { Err(ApiError::forbidden()) }
}

/// Records a schema change in the activity ([`crate::activity::record_schema`]).
async fn record(
    change: &mut Change,
    caller: &crate::auth::Caller,
    kind: Kind,
    action: crate::activity::Change,
    collection: &str,
    field: &str,
) -> Result<(), ApiError> {
    let (system, field) = match kind {
        Kind::Collections => ("directus_collections", ""),
        Kind::Fields => ("directus_fields", field),
        Kind::Relations => ("directus_relations", field),
    };
    crate::activity::record_schema(&mut change.tx, system, action, (collection, field), caller.vars.user.as_deref(), &caller.client).await
}

/// `ReadCallerPermissions` (`GET /permissions/me`): see
/// [`crate::permissions::me::collection_access`]. Errors: as [`AppState::caller`].
pub async fn caller_permissions(state: &AppState, md: &tonic::metadata::MetadataMap) -> Result<SchemaReply, ApiError> {
    let caller = state.caller(md).await?;
    Ok(reply(&crate::permissions::me::collection_access(&caller.schema, &caller.access)))
}

/// `ReadCallerGlobals` (`GET /policies/me/globals`): `{app_access, admin_access, enforce_tfa}`
/// of the policies that apply to the request; `{app_access: false}` for the public, as
/// Directus answers it. Errors: as [`AppState::caller`].
pub async fn caller_globals(state: &AppState, md: &tonic::metadata::MetadataMap) -> Result<SchemaReply, ApiError> {
    let caller = state.caller(md).await?;
    if caller.vars.user.is_none() {
        // Directus 11.3.5 answers the public this way (the differential suite compares it).
        return Ok(reply(&serde_json::json!({"app_access": false})));
    }
    let globals = caller.schema.permissions.globals(&caller.vars.policies);
    Ok(reply(&serde_json::to_value(globals).map_err(ApiError::internal_because)?))
}

/// `ReadProjectInfo` (`/server/info`'s `project`): the settings singleton's public fields, for
/// anyone. Errors: database errors; INTERNAL when the settings row is missing.
pub async fn project_info(state: &AppState) -> Result<SchemaReply, ApiError> {
    let text = system_tables::settings::project_info(&state.pool)
        .await
        .map_err(crate::db::map_error)?
        .ok_or_else(|| ApiError::internal_because("the settings row is missing"))?;
    Ok(SchemaReply { data: Bytes::from(text) })
}

/// `ReadItemAccess` (`GET /permissions/me/:collection/:key?`): see
/// [`crate::write::Writer::item_access`]. A collection the caller cannot see answers every
/// action `false`, as Directus does. Errors: FORBIDDEN for the public; database errors.
pub async fn item_access(state: &AppState, md: &tonic::metadata::MetadataMap, req: &ItemAccessRequest) -> Result<SchemaReply, ApiError> {
    let caller = state.caller(md).await?;
    if caller.vars.user.is_none() {
        return Err(ApiError::forbidden());
    }
    let Some(collection) = caller.schema.collection(&req.collection).cloned() else {
        return Ok(reply(&serde_json::json!({"update": {"access": false}, "delete": {"access": false}, "share": {"access": false}})));
    };
    let mut tx = state.pool.begin().await.map_err(crate::db::map_error)?;
    let key = Some(req.key.as_str()).filter(|k| !k.is_empty());
    let access = caller.writer(&mut tx, state.limits).item_access(&collection, key).await?;
    tx.rollback().await.map_err(crate::db::map_error)?;
    Ok(reply(&access))
}

/// The changed object as read back from the new snapshot.
async fn read_back(state: &AppState, schema: &Arc<Schema>, kind: Kind, collection: &str, field: &str) -> Result<SchemaReply, ApiError> {
    let target = SchemaTarget { collection: collection.to_owned(), field: field.to_owned() };
    Ok(reply(&read_in(state, schema, true, kind, &target).await?))
}

/// `Create*`: admin only; the new object.
pub async fn create(state: &AppState, md: &tonic::metadata::MetadataMap, kind: Kind, change: &SchemaChange) -> Result<SchemaReply, ApiError> {
    let caller = &admin(state, md).await?;
    let data = &schema_admin::object(&change.data)?;
    let (tx, collection, field) = schema_admin::retried(move || async move {
        let mut tx = Change::begin(state).await?;
        let (collection, field) = match kind {
            Kind::Collections => {
                schema_admin::collections::create(&mut tx, data).await?;
                (schema_admin::required_str(data, "collection")?, "")
            }
            Kind::Fields => {
                schema_admin::fields::create(&mut tx, &change.collection, data).await?;
                (change.collection.as_str(), schema_admin::required_str(data, "field")?)
            }
            Kind::Relations => {
                schema_admin::relations::create(&mut tx, data).await?;
                (schema_admin::required_str(data, "collection")?, schema_admin::required_str(data, "field")?)
            }
        };
        record(&mut tx, caller, kind, crate::activity::Change::Create, collection, field).await?;
        Ok((tx, collection, field))
    })
    .await?;
    let schema = tx.commit(state).await?;
    read_back(state, &schema, kind, collection, field).await
}

/// `Update*`: admin only; the changed object. An array body with no object named in the path is
/// Directus's batch form (`PATCH /collections`, `PATCH /fields/:collection`): see [`update_batch`].
pub async fn update(state: &AppState, md: &tonic::metadata::MetadataMap, kind: Kind, change: &SchemaChange) -> Result<SchemaReply, ApiError> {
    let caller = admin(state, md).await?;
    let batch = match kind {
        Kind::Collections => change.collection.is_empty(),
        Kind::Fields => change.field.is_empty(),
        Kind::Relations => false,
    };
    if batch {
        return update_batch(state, &caller, kind, &change.collection, &change.data).await;
    }
    let (caller, data) = (&caller, &schema_admin::object(&change.data)?);
    let tx = schema_admin::retried(move || async move {
        let mut tx = Change::begin(state).await?;
        match kind {
            Kind::Collections => schema_admin::collections::update(&mut tx, &change.collection, data).await?,
            Kind::Fields => schema_admin::fields::update(&mut tx, &change.collection, &change.field, data).await?,
            Kind::Relations => schema_admin::relations::update(&mut tx, &change.collection, &change.field, data).await?,
        }
        record(&mut tx, caller, kind, crate::activity::Change::Update, &change.collection, &change.field).await?;
        Ok(tx)
    })
    .await?;
    let schema = tx.commit(state).await?;
    read_back(state, &schema, kind, &change.collection, &change.field).await
}

/// The batch updates of Directus's Data Model (reordering and grouping collections or fields):
/// `data` is an array of changes, each naming its object (`collection` for collections, `field`
/// for the fields of `collection`), each at most once. All are applied in one transaction, all
/// or nothing, each as its single update would be, and answered as the array of changed objects
/// in the order given. The batch is bounded by what exists: every element names a distinct
/// existing object. Errors: INVALID_PAYLOAD (not an array, an element that is not an object or
/// names nothing or names an object twice), and each update's errors (FORBIDDEN for an unknown
/// object); nothing is changed on any error.
async fn update_batch(state: &AppState, caller: &crate::auth::Caller, kind: Kind, collection: &str, data: &[u8]) -> Result<SchemaReply, ApiError> {
    let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(data) else {
        return Err(ApiError::invalid_payload("Submitted body has to be an array"));
    };
    let key = if matches!(kind, Kind::Collections) { "collection" } else { "field" };
    let mut changes = Vec::with_capacity(items.len());
    let mut seen = std::collections::HashSet::new();
    for item in items {
        let Value::Object(item) = item else {
            return Err(ApiError::invalid_payload("Each change must be an object"));
        };
        let name = schema_admin::required_str(&item, key)?.to_owned();
        if !seen.insert(name.clone()) {
            return Err(ApiError::invalid_payload(format!("\"{name}\" is changed more than once")));
        }
        changes.push((name, item));
    }
    let changes = &changes;
    let tx = schema_admin::retried(move || async move {
        let mut tx = Change::begin(state).await?;
        for (name, item) in changes {
            match kind {
                Kind::Collections => {
                    schema_admin::collections::update(&mut tx, name, item).await?;
                    record(&mut tx, caller, kind, crate::activity::Change::Update, name, "").await?;
                }
                _ => {
                    schema_admin::fields::update(&mut tx, collection, name, item).await?;
                    record(&mut tx, caller, kind, crate::activity::Change::Update, collection, name).await?;
                    // A column change is DDL: the next element must see it.
                    if item.get("schema").is_some_and(|s| !s.is_null()) || item.contains_key("type") {
                        tx.refresh(state).await?;
                    }
                }
            }
        }
        Ok(tx)
    })
    .await?;
    let schema = tx.commit(state).await?;
    let mut out = Vec::with_capacity(changes.len());
    for (name, _) in changes {
        let (c, f) = if matches!(kind, Kind::Collections) { (name.as_str(), "") } else { (collection, name.as_str()) };
        let target = SchemaTarget { collection: c.to_owned(), field: f.to_owned() };
        out.push(read_in(state, &schema, true, kind, &target).await?);
    }
    Ok(reply(&Value::Array(out)))
}

/// `Delete*`: admin only.
pub async fn delete(state: &AppState, md: &tonic::metadata::MetadataMap, kind: Kind, target: &SchemaTarget) -> Result<(), ApiError> {
    let caller = &admin(state, md).await?;
    let tx = schema_admin::retried(move || async move {
        let mut tx = Change::begin(state).await?;
        match kind {
            Kind::Collections => schema_admin::collections::delete(&mut tx, &target.collection).await?,
            Kind::Fields => schema_admin::fields::delete(&mut tx, &target.collection, &target.field).await?,
            Kind::Relations => schema_admin::relations::delete(&mut tx, &target.collection, &target.field).await?,
        }
        record(&mut tx, caller, kind, crate::activity::Change::Delete, &target.collection, &target.field).await?;
        Ok(tx)
    })
    .await?;
    tx.commit(state).await?;
    Ok(())
}

/// `ReadSnapshot` (`GET /schema/snapshot`): admin only. Errors: FORBIDDEN, database errors.
pub async fn read_snapshot(state: &AppState, md: &tonic::metadata::MetadataMap) -> Result<SchemaReply, ApiError> {
    admin(state, md).await?;
    Ok(reply(&schema_admin::snapshot::snapshot(state).await?))
}

/// `DiffSnapshot` (`POST /schema/diff`): admin only; `{hash, diff}` or `null`. Errors:
/// FORBIDDEN, INVALID_PAYLOAD (see [`schema_admin::snapshot::diff`]).
pub async fn diff_snapshot(state: &AppState, md: &tonic::metadata::MetadataMap, req: &cdapi_proto::v1::SnapshotDiffRequest) -> Result<SchemaReply, ApiError> {
    admin(state, md).await?;
    let target: Value = serde_json::from_slice(&req.snapshot).map_err(|e| ApiError::invalid_payload(format!("The snapshot is not JSON: {e}")))?;
    let current = schema_admin::snapshot::snapshot(state).await?;
    let out = match schema_admin::snapshot::diff(&current, &target, req.force)? {
        Some(diff) => serde_json::json!({"hash": schema_admin::snapshot::hash(&current), "diff": diff}),
        None => Value::Null,
    };
    Ok(reply(&out))
}

/// `ApplyDiff` (`POST /schema/apply`): admin only. Errors: see [`schema_admin::snapshot::apply`].
pub async fn apply_diff(state: &AppState, md: &tonic::metadata::MetadataMap, change: &SchemaChange) -> Result<(), ApiError> {
    let caller = admin(state, md).await?;
    schema_admin::snapshot::apply(state, &schema_admin::object(&change.data)?, &caller).await
}
