//! Schema management on `/graphql/system` (Directus's names; docs/data-model.md "Modeling content through the API"): the same SchemaService
//! calls as REST's `/collections`, `/fields`, `/relations`, with Directus's GraphQL shapes.
//!
//! Query: `collections`, `collections_by_name(name)`, `fields`, `fields_in_collection(collection)`,
//! `fields_by_name(collection, field)`, `relations`, `relations_in_collection(collection)`,
//! `relations_by_name(collection, field)` → `directus_collections` / `directus_fields` /
//! `directus_relations` objects (each with typed `meta` and `schema` objects). Reads show what the
//! caller's role may read (the core decides, as for REST).
//!
//! Mutation: `create_collections_item(data)`, `update_collections_item(collection, data)`,
//! `delete_collections_item(collection)` → `delete_collection {collection}`;
//! `create_fields_item(collection, data)`, `update_fields_item(collection, field, data)`,
//! `delete_fields_item(collection, field)` → `delete_field {collection, field}`;
//! `create_relations_item(data)`, `update_relations_item(collection, field, data)`,
//! `delete_relations_item(collection, field)` → `delete_relation {collection, field}`. Changes
//! answer the `write_directus_*` objects; inputs are `write_directus_*_input`. Directus shows
//! the mutations to admins only; here every caller's schema has them and the core refuses
//! non-admins (FORBIDDEN), as for REST (docs/directus-compatibility.md).

use crate::model::Scalar;
use crate::root::request_env;
use crate::types::{items_value, parent_json, scalar_field, scalar_type};
use crate::values::{field_result, value_to_json};
use async_graphql::dynamic::{Field, FieldFuture, FieldValue, InputObject, InputValue, Object, ResolverContext, Type, TypeRef};
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{SchemaChange, SchemaTarget};
use edge_http::schema_calls::{self, Change, Resource};
use serde_json::Value as Json;

/// The typed keys of a collection's `meta` (Directus 11's `directus_collections` columns).
const COLLECTION_META: &[(&str, Scalar)] = &[
    ("collection", Scalar::String),
    ("icon", Scalar::String),
    ("note", Scalar::String),
    ("display_template", Scalar::String),
    ("hidden", Scalar::Boolean),
    ("singleton", Scalar::Boolean),
    ("translations", Scalar::Json),
    ("archive_field", Scalar::String),
    ("archive_app_filter", Scalar::Boolean),
    ("archive_value", Scalar::String),
    ("unarchive_value", Scalar::String),
    ("sort_field", Scalar::String),
    ("accountability", Scalar::String),
    ("color", Scalar::String),
    ("item_duplication_fields", Scalar::Json),
    ("sort", Scalar::Int),
    ("group", Scalar::String),
    ("collapse", Scalar::String),
    ("preview_url", Scalar::String),
    ("versioning", Scalar::Boolean),
];

/// A collection's `schema` (Directus: the table's name and comment).
const COLLECTION_SCHEMA: &[(&str, Scalar)] = &[("name", Scalar::String), ("comment", Scalar::String)];

/// The typed keys of a field's `meta` (`directus_fields` columns).
const FIELD_META: &[(&str, Scalar)] = &[
    ("id", Scalar::Int),
    ("collection", Scalar::String),
    ("field", Scalar::String),
    ("special", Scalar::StringList),
    ("interface", Scalar::String),
    ("options", Scalar::Json),
    ("display", Scalar::String),
    ("display_options", Scalar::Json),
    ("readonly", Scalar::Boolean),
    ("hidden", Scalar::Boolean),
    ("sort", Scalar::Int),
    ("width", Scalar::String),
    ("translations", Scalar::Json),
    ("note", Scalar::String),
    ("conditions", Scalar::Json),
    ("required", Scalar::Boolean),
    ("group", Scalar::String),
    ("validation", Scalar::Json),
    ("validation_message", Scalar::String),
];

/// A field's `schema` (the column as Directus describes it).
const FIELD_SCHEMA: &[(&str, Scalar)] = &[
    ("name", Scalar::String),
    ("table", Scalar::String),
    ("data_type", Scalar::String),
    ("default_value", Scalar::Json),
    ("max_length", Scalar::Int),
    ("numeric_precision", Scalar::Int),
    ("numeric_scale", Scalar::Int),
    ("is_generated", Scalar::Boolean),
    ("generation_expression", Scalar::String),
    ("is_indexed", Scalar::Boolean),
    ("is_nullable", Scalar::Boolean),
    ("is_unique", Scalar::Boolean),
    ("is_primary_key", Scalar::Boolean),
    ("has_auto_increment", Scalar::Boolean),
    ("foreign_key_column", Scalar::String),
    ("foreign_key_table", Scalar::String),
    ("comment", Scalar::String),
];

/// The typed keys of a relation's `meta` (`directus_relations` columns).
const RELATION_META: &[(&str, Scalar)] = &[
    ("id", Scalar::Int),
    ("many_collection", Scalar::String),
    ("many_field", Scalar::String),
    ("one_collection", Scalar::String),
    ("one_field", Scalar::String),
    ("one_collection_field", Scalar::String),
    ("one_allowed_collections", Scalar::StringList),
    ("junction_field", Scalar::String),
    ("sort_field", Scalar::String),
    ("one_deselect_action", Scalar::String),
];

/// A relation's `schema` (its foreign key).
const RELATION_SCHEMA: &[(&str, Scalar)] = &[
    ("table", Scalar::String),
    ("column", Scalar::String),
    ("foreign_key_table", Scalar::String),
    ("foreign_key_column", Scalar::String),
    ("constraint_name", Scalar::String),
    ("on_update", Scalar::String),
    ("on_delete", Scalar::String),
];

/// The three resources.
const ALL: [Resource; 3] = [Resource::Collections, Resource::Fields, Resource::Relations];

/// The GraphQL names and shapes of a resource.
trait Shapes: Copy {
    fn plural(self) -> &'static str;
    fn keys(self) -> &'static [&'static str];
    fn meta(self) -> &'static [(&'static str, Scalar)];
    fn schema(self) -> &'static [(&'static str, Scalar)];
    fn type_name(self, write: bool) -> String;
    fn deleted_type(self) -> &'static str;
}

impl Shapes for Resource {
    /// `collections`, `fields`, `relations`.
    fn plural(self) -> &'static str {
        match self {
            Self::Collections => "collections",
            Self::Fields => "fields",
            Self::Relations => "relations",
        }
    }

    /// Its own top-level keys besides `meta` and `schema`.
    fn keys(self) -> &'static [&'static str] {
        match self {
            Self::Collections => &["collection"],
            Self::Fields => &["collection", "field", "type"],
            Self::Relations => &["collection", "field", "related_collection"],
        }
    }

    fn meta(self) -> &'static [(&'static str, Scalar)] {
        match self {
            Self::Collections => COLLECTION_META,
            Self::Fields => FIELD_META,
            Self::Relations => RELATION_META,
        }
    }

    fn schema(self) -> &'static [(&'static str, Scalar)] {
        match self {
            Self::Collections => COLLECTION_SCHEMA,
            Self::Fields => FIELD_SCHEMA,
            Self::Relations => RELATION_SCHEMA,
        }
    }

    /// The object's type name: `directus_<plural>`, `write_` before it for mutations' answers.
    fn type_name(self, write: bool) -> String {
        format!("{}directus_{}", if write { "write_" } else { "" }, self.plural())
    }

    /// The name of the deletion answer's type (`delete_collection`...).
    fn deleted_type(self) -> &'static str {
        match self {
            Self::Collections => "delete_collection",
            Self::Fields => "delete_field",
            Self::Relations => "delete_relation",
        }
    }
}

/// A field whose value is the object under `key` of the parent's JSON (`meta`, `schema`).
fn object_field(key: &'static str, ty: String) -> Field {
    Field::new(key, TypeRef::named(ty), move |ctx| {
        let v = parent_json(&ctx).and_then(|p| p.get(key)).filter(|v| v.is_object()).cloned().map(FieldValue::owned_any);
        FieldFuture::Value(v)
    })
}

/// Every type of this module.
pub fn types() -> Vec<Type> {
    let mut all: Vec<Type> = Vec::new();
    for r in ALL {
        for write in [false, true] {
            let name = r.type_name(write);
            let mut object = Object::new(&name);
            for key in r.keys() {
                object = object.field(scalar_field(key, TypeRef::named(TypeRef::STRING), Scalar::String));
            }
            for (part, keys) in [("meta", r.meta()), ("schema", r.schema())] {
                let part_name = format!("{name}_{part}");
                let typed = keys.iter().fold(Object::new(&part_name), |o, (k, s)| o.field(scalar_field(k, scalar_type(*s), *s)));
                all.push(typed.into());
                object = object.field(object_field(part, part_name));
            }
            all.push(object.into());
        }
        // Inputs: `write_directus_<plural>_input` with typed `meta` and `schema` inputs.
        let base = r.type_name(true);
        let mut input = InputObject::new(format!("{base}_input"));
        for key in r.keys() {
            input = input.field(InputValue::new(*key, TypeRef::named(TypeRef::STRING)));
        }
        for (part, keys) in [("meta", r.meta()), ("schema", r.schema())] {
            let part_name = format!("{base}_{part}_input");
            let typed = keys.iter().fold(InputObject::new(&part_name), |o, (k, s)| o.field(InputValue::new(*k, scalar_type(*s))));
            all.push(typed.into());
            input = input.field(InputValue::new(part, TypeRef::named(part_name)));
        }
        if r == Resource::Collections {
            // A collection is created with its fields (Directus's create input adds them).
            input = input.field(InputValue::new("fields", TypeRef::named_nn_list("write_directus_fields_input")));
        }
        all.push(input.into());
        let key_fields: &[&str] = if r == Resource::Collections { &["collection"] } else { &["collection", "field"] };
        let deleted = key_fields.iter().fold(Object::new(r.deleted_type()), |o, k| o.field(scalar_field(k, TypeRef::named(TypeRef::STRING), Scalar::String)));
        all.push(deleted.into());
    }
    all
}

/// What a root field does.
#[derive(Clone, Copy)]
enum Op {
    /// All (`collections`), or those of one collection (`fields_in_collection`).
    List(Resource),
    /// One by name.
    One(Resource),
    Create(Resource),
    Update(Resource),
    Delete(Resource),
}

/// A string argument (absent: empty).
fn text(ctx: &ResolverContext<'_>, name: &str) -> String {
    ctx.args.get(name).and_then(|v| v.string().ok().map(str::to_owned)).unwrap_or_default()
}

/// The `data` argument as JSON bytes. Errors: INVALID_PAYLOAD when absent.
fn data(ctx: &ResolverContext<'_>) -> Result<Bytes, ApiError> {
    match ctx.args.get("data") {
        Some(v) if !v.is_null() => Ok(Bytes::from(value_to_json(v.as_value()).to_string())),
        _ => Err(ApiError::invalid_payload("\"data\" is required")),
    }
}

/// The core's JSON answer. Errors: INTERNAL (not JSON: a bug, logged).
fn json(bytes: &[u8]) -> Result<Json, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::internal_because(format!("the core's schema reply is not JSON: {e}")))
}

async fn resolve<'a>(ctx: &ResolverContext<'a>, op: Op) -> Result<Option<FieldValue<'a>>, ApiError> {
    let (backend, _, req) = request_env(ctx)?;
    let mut client = backend.schema.clone();
    let call = &req.caller;
    // The collection a call is about: `name` for `collections_by_name`, else `collection`.
    let collection = || {
        let n = text(ctx, "collection");
        if n.is_empty() { text(ctx, "name") } else { n }
    };
    let target = || SchemaTarget { collection: collection(), field: text(ctx, "field") };
    let reply = match op {
        Op::List(r) | Op::One(r) => schema_calls::read(&mut client, r, call.request(target())?).await?,
        Op::Create(r) | Op::Update(r) => {
            let t = target();
            let change = call.request(SchemaChange { collection: t.collection, field: t.field, data: data(ctx)? })?;
            let kind = if matches!(op, Op::Create(_)) { Change::Create } else { Change::Update };
            schema_calls::change(&mut client, r, kind, change).await?
        }
        Op::Delete(r) => {
            let t = target();
            let answer = if r == Resource::Collections {
                serde_json::json!({"collection": t.collection})
            } else {
                serde_json::json!({"collection": t.collection, "field": t.field})
            };
            schema_calls::delete(&mut client, r, call.request(t)?).await?;
            return Ok(Some(FieldValue::owned_any(answer)));
        }
    };
    Ok(items_value(json(&reply)?))
}

/// A root field doing `op`, with its arguments.
fn root(name: &str, ty: TypeRef, op: Op, args: &[(&str, TypeRef)]) -> Field {
    let nullable = !matches!(ty, TypeRef::NonNull(_));
    let field = Field::new(name, ty, move |ctx| {
        FieldFuture::new(async move {
            let result = resolve(&ctx, op).await;
            field_result(ctx.ctx, nullable, result)
        })
    });
    args.iter().fold(field, |f, (n, t)| f.argument(InputValue::new(*n, t.clone())))
}

/// Adds the reads to the system Query.
pub fn query_fields(mut query: Object) -> Object {
    let s = || TypeRef::named_nn(TypeRef::STRING);
    for r in ALL {
        let (p, ty) = (r.plural(), r.type_name(false));
        query = query.field(root(p, TypeRef::named_nn_list_nn(&ty), Op::List(r), &[]));
        query = match r {
            Resource::Collections => query.field(root("collections_by_name", TypeRef::named(&ty), Op::One(r), &[("name", s())])),
            _ => query.field(root(&format!("{p}_in_collection"), TypeRef::named_nn_list_nn(&ty), Op::List(r), &[("collection", s())])).field(root(
                &format!("{p}_by_name"),
                TypeRef::named(&ty),
                Op::One(r),
                &[("collection", s()), ("field", s())],
            )),
        };
    }
    query
}

/// An argument's name and type.
type Argument = (&'static str, TypeRef);

/// Adds the changes to the system Mutation.
pub fn mutation_fields(mut mutation: Object) -> Object {
    let s = || TypeRef::named_nn(TypeRef::STRING);
    for r in ALL {
        let (p, ty) = (r.plural(), r.type_name(true));
        let input = || TypeRef::named_nn(format!("{ty}_input"));
        let (create_args, keys): (Vec<Argument>, Vec<Argument>) = match r {
            Resource::Collections => (vec![("data", input())], vec![("collection", s())]),
            Resource::Fields => (vec![("collection", s()), ("data", input())], vec![("collection", s()), ("field", s())]),
            Resource::Relations => (vec![("data", input())], vec![("collection", s()), ("field", s())]),
        };
        let mut update_args = keys.clone();
        update_args.push(("data", input()));
        mutation = mutation
            .field(root(&format!("create_{p}_item"), TypeRef::named(&ty), Op::Create(r), &create_args))
            .field(root(&format!("update_{p}_item"), TypeRef::named(&ty), Op::Update(r), &update_args))
            .field(root(&format!("delete_{p}_item"), TypeRef::named(r.deleted_type()), Op::Delete(r), &keys));
    }
    mutation
}
