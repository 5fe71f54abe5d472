//! `GET /server/specs/oas`: the OpenAPI 3.0 document of the REST API as the caller's role sees
//! it (docs/directus-compatibility.md "The OpenAPI document"; Directus serves the same path). Built from the core's schema snapshot for the
//! caller (`GetSchema`), so it changes when the database or the permissions change.
//!
//! What it promises, and the test suite holds it to (Schemathesis, `tests/tests/openapi.rs`):
//! - one path pair per readable user collection (`/items/<c>`, `/items/<c>/{id}`; a singleton
//!   has only the first) and the system collections the role may read (`/users`, `/users/me`,
//!   `/users/{id}`, `/roles`..., `/permissions`...), with `get`, and `post`/`patch`/`delete`
//!   unless the collection is read-only;
//! - an item schema per collection (`Items<Name>`): each field typed as the API writes it
//!   (bigint, numeric, dates and times as strings; relational fields either a key or a nested
//!   object, so untyped), every property optional (`fields` picks them), other keys allowed
//!   (function results such as `published_at_year`, aliases);
//! - the query parameters the operations take (`fields`, `filter`, `search`, `sort`, `limit`,
//!   `offset`, `page`, `meta`; `version` on one item);
//! - `200`/`204` as the operation answers them, and every error as the `default` response in
//!   Directus's error body (`{"errors": [{"message", "extensions": {"code"}}]}`).

use cdapi_proto::v1::{Collection, Field, FieldType, SchemaSnapshot};
use serde_json::{Map, Value, json};

/// The system collections served on their own paths, and those paths.
const SYSTEM_PATHS: &[(&str, &str)] = &[
    ("directus_users", "/users"),
    ("directus_roles", "/roles"),
    ("directus_permissions", "/permissions"),
    ("directus_policies", "/policies"),
    ("directus_files", "/files"),
    ("directus_folders", "/folders"),
    ("directus_activity", "/activity"),
    ("directus_revisions", "/revisions"),
    ("directus_comments", "/comments"),
    ("directus_notifications", "/notifications"),
    ("directus_shares", "/shares"),
];

/// The document for `snapshot` (the caller's view); `server` is the public base URL, if known.
pub fn document(snapshot: &SchemaSnapshot, server: Option<&str>) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    paths.insert(
        "/server/ping".into(),
        json!({"get": {"operationId": "ping", "summary": "Ping", "tags": ["Server"], "security": [],
        "responses": {"200": {"description": "pong", "content": {"text/html": {"schema": {"type": "string"}}}}, "default": error_ref()}}}),
    );
    paths.insert(
        "/server/info".into(),
        json!({"get": {"operationId": "serverInfo", "summary": "Server information", "tags": ["Server"],
        "responses": {"200": data_response(json!({"type": "object"})), "default": error_ref()}}}),
    );
    for c in &snapshot.collections {
        let schema_name = schema_name(&c.name);
        schemas.insert(schema_name.clone(), item_schema(c));
        let item = json!({"$ref": format!("#/components/schemas/{schema_name}")});
        let (list_path, system) = match SYSTEM_PATHS.iter().find(|(n, _)| *n == c.name) {
            Some((_, path)) => ((*path).to_owned(), true),
            None if c.name.starts_with("directus_") => continue,
            None => (format!("/items/{}", c.name), false),
        };
        let tag = schema_name.clone();
        paths.insert(list_path.clone(), list_operations(c, &item, &tag));
        if c.singleton || c.primary_key.is_empty() {
            continue;
        }
        paths.insert(format!("{list_path}/{{id}}"), item_operations(c, &item, &tag, !system));
        if c.name == "directus_users" {
            let mut me = item_operations(c, &item, &tag, false);
            if let Some(ops) = me.as_object_mut() {
                ops.remove("delete");
                for op in ops.values_mut() {
                    if let Some(o) = op.as_object_mut() {
                        o.remove("parameters");
                        o.insert("parameters".into(), json!([{"$ref": "#/components/parameters/Fields"}]));
                        let id = o.get("operationId").and_then(Value::as_str).unwrap_or_default().to_owned();
                        o.insert("operationId".into(), json!(format!("{id}Me")));
                    }
                }
            }
            paths.insert("/users/me".into(), me);
        }
    }
    schema_management(&mut paths, &mut schemas);
    schemas.insert("Error".into(), error_schema());
    schemas.insert("Meta".into(), json!({"type": "object", "properties": {"total_count": {"type": "integer"}, "filter_count": {"type": "integer"}}}));
    let servers = server.map(|url| json!([{"url": url}])).unwrap_or_else(|| json!([{"url": "/"}]));
    json!({
        "openapi": "3.0.1",
        "info": {
            "title": "Dynamic API Specification",
            "description": "The REST API generated from this database's structure, as the caller's role sees it.",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "servers": servers,
        "security": [{"Auth": []}, {"KeyAuth": []}, {"Session": []}, {}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "parameters": parameters(),
            "responses": {"Error": {"description": "An error, in Directus's error body", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}},
            "securitySchemes": {
                "Auth": {"type": "http", "scheme": "bearer", "description": "An access token, session token or static token."},
                "KeyAuth": {"type": "apiKey", "in": "query", "name": "access_token"},
                "Session": {"type": "apiKey", "in": "cookie", "name": "directus_session_token"},
            },
        },
    })
}

/// `ItemsArticles` for `articles`, `Users` for `directus_users` (Directus's names).
fn schema_name(collection: &str) -> String {
    let (prefix, rest) = match collection.strip_prefix("directus_") {
        Some(rest) => ("", rest),
        None => ("Items", collection),
    };
    let camel: String = rest
        .split(['_', '-', ' '])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut chars = p.chars();
            chars.next().map(|f| f.to_uppercase().chain(chars).collect::<String>()).unwrap_or_default()
        })
        .collect();
    format!("{prefix}{camel}")
}

/// The schema of one item: fields typed as the API writes them, all optional, more allowed.
fn item_schema(c: &Collection) -> Value {
    let mut props = Map::new();
    for f in &c.fields {
        let schema = if f.relation.is_some() || f.r#type() == FieldType::Alias {
            // A key, a list of keys, or nested objects, as `fields` asks.
            json!({"nullable": true})
        } else {
            field_schema(f)
        };
        props.insert(f.name.clone(), schema);
    }
    json!({"type": "object", "properties": props, "additionalProperties": true, "x-collection": c.name})
}

/// A column's value as the API writes it (see `core-service/src/query/values.rs`).
fn field_schema(f: &Field) -> Value {
    let mut s = match f.r#type() {
        FieldType::Integer => json!({"type": "integer"}),
        FieldType::Float => json!({"type": "number"}),
        FieldType::Boolean => json!({"type": "boolean"}),
        FieldType::BigInteger
        | FieldType::Decimal
        | FieldType::String
        | FieldType::Text
        | FieldType::Uuid
        | FieldType::Hash
        | FieldType::Date
        | FieldType::DateTime
        | FieldType::Timestamp
        | FieldType::Time
        | FieldType::Binary => json!({"type": "string"}),
        FieldType::Csv => json!({"type": "array"}),
        // json and types the API cannot name: any JSON value.
        FieldType::Json | FieldType::Alias | FieldType::Unknown => json!({}),
    };
    if let Some(o) = s.as_object_mut() {
        o.insert("nullable".into(), json!(true));
        if !f.enum_values.is_empty() {
            o.insert("x-enum".into(), json!(f.enum_values));
        }
    }
    s
}

/// `/collections`, `/fields`, `/relations` (docs/data-model.md) with Directus's operation ids; changes
/// need admin access (others get 403, as the `default` error response says). Also
/// `/schema/snapshot|diff|apply`, `/permissions/me` and `/policies/me/globals`.
fn schema_management(paths: &mut Map<String, Value>, schemas: &mut Map<String, Value>) {
    let object = |props: &[&str]| {
        let p: Map<String, Value> = props.iter().map(|n| ((*n).to_owned(), json!({"type": "object", "nullable": true}))).collect();
        p
    };
    let mut collection = object(&["meta", "schema"]);
    collection.insert("collection".into(), json!({"type": "string"}));
    let mut field = object(&["meta", "schema"]);
    field.extend([("collection".into(), json!({"type": "string"})), ("field".into(), json!({"type": "string"})), ("type".into(), json!({"type": "string"}))]);
    let mut relation = object(&["meta", "schema"]);
    relation.extend([
        ("collection".into(), json!({"type": "string"})),
        ("field".into(), json!({"type": "string"})),
        ("related_collection".into(), json!({"type": "string", "nullable": true})),
    ]);
    for (name, props) in [("Collections", collection), ("Fields", field), ("Relations", relation)] {
        schemas.insert(name.into(), json!({"type": "object", "properties": props}));
    }
    let op = |id: &str, summary: &str, tag: &str, path_params: &[&str], body: bool, reply: Option<Value>| {
        let mut o = json!({"operationId": id, "summary": summary, "tags": [tag], "responses": {"default": error_ref()}});
        let params: Vec<Value> = path_params.iter().map(|p| json!({"name": p, "in": "path", "required": true, "schema": {"type": "string"}})).collect();
        if !params.is_empty() {
            o["parameters"] = Value::Array(params);
        }
        if body {
            o["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{tag}")}}}});
        }
        match reply {
            Some(shape) => o["responses"]["200"] = data_response(shape),
            None => o["responses"]["204"] = no_content(),
        }
        o
    };
    let one = |tag: &str| json!({"$ref": format!("#/components/schemas/{tag}")});
    let many = |tag: &str| json!({"type": "array", "items": one(tag)});
    // Directus's batch updates take an array of changes and answer the array of changed objects.
    let batch = |id: &str, summary: &str, tag: &str, params: &[&str]| {
        let mut o = op(id, summary, tag, params, true, Some(many(tag)));
        o["requestBody"]["content"]["application/json"]["schema"] = many(tag);
        o
    };
    let (c, f, r) = ("Collections", "Fields", "Relations");
    paths.insert(
        "/collections".into(),
        json!({
            "get": op("readCollections", "List the collections", c, &[], false, Some(many(c))),
            "post": op("createCollection", "Create a collection (admin)", c, &[], true, Some(one(c))),
            "patch": batch("updateCollections", "Update several collections' meta at once (admin)", c, &[]),
        }),
    );
    paths.insert(
        "/collections/{id}".into(),
        json!({
            "get": op("readCollection", "Read a collection", c, &["id"], false, Some(one(c))),
            "patch": op("updateCollection", "Update a collection's meta (admin)", c, &["id"], true, Some(one(c))),
            "delete": op("deleteCollection", "Delete a collection and its table (admin)", c, &["id"], false, None),
        }),
    );
    paths.insert("/fields".into(), json!({"get": op("getFields", "List all fields", f, &[], false, Some(many(f)))}));
    paths.insert(
        "/fields/{collection}".into(),
        json!({
            "get": op("getCollectionFields", "List a collection's fields", f, &["collection"], false, Some(many(f))),
            "post": op("createField", "Add a field (admin)", f, &["collection"], true, Some(one(f))),
            "patch": batch("updateFields", "Change several fields at once (admin)", f, &["collection"]),
        }),
    );
    paths.insert(
        "/fields/{collection}/{field}".into(),
        json!({
            "get": op("getCollectionField", "Read a field", f, &["collection", "field"], false, Some(one(f))),
            "patch": op("updateField", "Change a field (admin)", f, &["collection", "field"], true, Some(one(f))),
            "delete": op("deleteField", "Delete a field (admin)", f, &["collection", "field"], false, None),
        }),
    );
    paths.insert(
        "/relations".into(),
        json!({
            "get": op("getRelations", "List the relations", r, &[], false, Some(many(r))),
            "post": op("createRelation", "Create a relation (admin)", r, &[], true, Some(one(r))),
        }),
    );
    paths.insert(
        "/relations/{collection}".into(),
        json!({"get": op("getCollectionRelations", "List a collection's relations", r, &["collection"], false, Some(many(r)))}),
    );
    paths.insert(
        "/relations/{collection}/{field}".into(),
        json!({
            "get": op("getRelation", "Read a relation", r, &["collection", "field"], false, Some(one(r))),
            "patch": op("updateRelation", "Change a relation (admin)", r, &["collection", "field"], true, Some(one(r))),
            "delete": op("deleteRelation", "Delete a relation (admin)", r, &["collection", "field"], false, None),
        }),
    );
    // Moving a schema between environments (admin).
    let object = json!({"type": "object"});
    let mut diff = op("schemaDiff", "The changes that turn this instance's schema into the given snapshot (admin)", "Schema", &[], false, Some(object.clone()));
    diff["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": object}}});
    diff["parameters"] = json!([{"name": "force", "in": "query", "required": false, "schema": {"type": "boolean"}}]);
    diff["responses"]["204"] = no_content();
    let mut apply = op("schemaApply", "Apply a diff made against the current schema (admin)", "Schema", &[], false, None);
    apply["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {"hash": {"type": "string"}, "diff": {"type": "object"}}}}}});
    paths.insert(
        "/schema/snapshot".into(),
        json!({"get": op("schemaSnapshot", "The user collections, fields and relations (admin)", "Schema", &[], false, Some(object.clone()))}),
    );
    paths.insert("/schema/diff".into(), json!({"post": diff}));
    paths.insert("/schema/apply".into(), json!({"post": apply}));
    // A file's bytes.
    let mut asset = op("getAsset", "A file's bytes (one `Range`; `If-None-Match`)", "Assets", &["id"], false, None);
    asset["responses"] = json!({
        "200": {"description": "The file", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
        "206": {"description": "A range of the file", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
        "304": {"description": "Not modified"},
        "default": error_ref(),
    });
    let mut named = asset.clone();
    named["operationId"] = json!("getAssetNamed");
    named["summary"] = json!("A file's bytes under a name of the caller's choosing (the name is ignored)");
    named["parameters"] = json!([
        {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
        {"name": "filename", "in": "path", "required": true, "schema": {"type": "string"}},
    ]);
    paths.insert("/assets/{id}".into(), json!({"get": asset}));
    paths.insert("/assets/{id}/{filename}".into(), json!({"get": named}));
    // A file fetched by the server, for callers who see files.
    if schemas.contains_key("Files") {
        let mut import =
            op("importFile", "Import a file from a URL (fetched by the server, never from a private address)", "Files", &[], false, Some(one("Files")));
        let body = json!({"type": "object", "required": ["url"], "properties": {"url": {"type": "string"}, "data": {"type": "object"}}});
        import["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": body}}});
        paths.insert("/files/import".into(), json!({"post": import}));
        // Uploads (Directus docs "Files"): multipart, the file's fields as text parts before
        // the `file` part; PATCH with a file replaces the bytes.
        let upload = json!({"type": "object", "required": ["file"], "properties": {"file": {"type": "string", "format": "binary"}}});
        for (path, method) in [("/files", "post"), ("/files/{id}", "patch")] {
            let content = paths.get_mut(path).and_then(|p| p.get_mut(method)).and_then(|o| o.get_mut("requestBody")).and_then(|b| b.get_mut("content"));
            if let Some(Value::Object(content)) = content {
                content.insert("multipart/form-data".into(), json!({"schema": upload}));
            }
        }
    }
    // What the caller has (Directus 11's access model).
    let access = json!({"type": "object", "additionalProperties": {"type": "object"}});
    paths.insert(
        "/permissions/me".into(),
        json!({"get": op("readUserPermissions", "What the caller may do per collection and action", "Permissions", &[], false, Some(access))}),
    );
    let flag = json!({"type": "boolean"});
    let globals = json!({"type": "object", "properties": {"app_access": flag, "admin_access": flag, "enforce_tfa": flag}});
    paths.insert(
        "/policies/me/globals".into(),
        json!({"get": op("readPolicyGlobals", "The caller's app access, admin access and two-factor rule", "Policies", &[], false, Some(globals))}),
    );
}

fn error_ref() -> Value {
    json!({"$ref": "#/components/responses/Error"})
}

fn error_schema() -> Value {
    json!({
        "type": "object",
        "required": ["errors"],
        "properties": {"errors": {"type": "array", "items": {
            "type": "object",
            "required": ["message", "extensions"],
            "properties": {
                "message": {"type": "string"},
                "extensions": {"type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}},
            },
        }}},
    })
}

/// `{"data": <schema>}` (and `meta` beside it).
fn data_response(schema: Value) -> Value {
    json!({"description": "Successful request", "content": {"application/json": {"schema": {
        "type": "object",
        "properties": {"data": schema, "meta": {"$ref": "#/components/schemas/Meta"}},
    }}}})
}

fn no_content() -> Value {
    json!({"description": "Done; no body (a delete, or a write whose result the caller may not read)"})
}

fn params(names: &[&str]) -> Value {
    Value::Array(names.iter().map(|n| json!({"$ref": format!("#/components/parameters/{n}")})).collect())
}

/// `/items/<c>` (or a system collection's list path).
fn list_operations(c: &Collection, item: &Value, tag: &str) -> Value {
    let mut ops = Map::new();
    let many = json!({"type": "array", "items": item});
    let read_shape = if c.singleton { item.clone() } else { many.clone() };
    let read_params =
        if c.singleton { params(&["Fields", "Version"]) } else { params(&["Fields", "Filter", "Search", "Sort", "Limit", "Offset", "Page", "Meta"]) };
    ops.insert(
        "get".into(),
        json!({
            "operationId": format!("read{tag}"), "summary": format!("List the {} items", c.name), "tags": [tag],
            "parameters": read_params,
            "responses": {"200": data_response(read_shape), "default": error_ref()},
        }),
    );
    if c.read_only {
        return Value::Object(ops);
    }
    let body = |schema: Value| json!({"required": true, "content": {"application/json": {"schema": schema}}});
    if c.singleton {
        ops.insert(
            "patch".into(),
            json!({
                "operationId": format!("update{tag}"), "summary": format!("Update the {} singleton", c.name), "tags": [tag],
                "parameters": params(&["Fields"]), "requestBody": body(item.clone()),
                "responses": {"200": data_response(item.clone()), "204": no_content(), "default": error_ref()},
            }),
        );
        return Value::Object(ops);
    }
    ops.insert(
        "post".into(),
        json!({
            "operationId": format!("create{tag}"), "summary": format!("Create {} items", c.name), "tags": [tag],
            "parameters": params(&["Fields"]),
            "requestBody": body(json!({"oneOf": [item, many]})),
            "responses": {"200": data_response(json!({"oneOf": [item, many]})), "204": no_content(), "default": error_ref()},
        }),
    );
    let selector = json!({"type": "object", "properties": {
        "keys": {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
        "query": {"type": "object"},
        "data": item,
    }});
    ops.insert(
        "patch".into(),
        json!({
            "operationId": format!("update{tag}Many"), "summary": format!("Update many {} items", c.name), "tags": [tag],
            "parameters": params(&["Fields"]),
            "requestBody": body(json!({"oneOf": [selector, many]})),
            "responses": {"200": data_response(many.clone()), "204": no_content(), "default": error_ref()},
        }),
    );
    ops.insert(
        "delete".into(),
        json!({
            "operationId": format!("delete{tag}Many"), "summary": format!("Delete many {} items", c.name), "tags": [tag],
            "requestBody": body(json!({"oneOf": [
                {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
                {"type": "object", "properties": {"keys": {"type": "array"}, "query": {"type": "object"}}},
            ]})),
            "responses": {"204": no_content(), "default": error_ref()},
        }),
    );
    Value::Object(ops)
}

/// `/items/<c>/{id}`; `versions`: whether `?version=` applies.
fn item_operations(c: &Collection, item: &Value, tag: &str, versions: bool) -> Value {
    let id = json!({"name": "id", "in": "path", "required": true, "description": "The primary key (composite keys: the values joined by commas)", "schema": {"type": "string"}});
    let mut read_params = vec![id.clone(), json!({"$ref": "#/components/parameters/Fields"})];
    if versions {
        read_params.push(json!({"$ref": "#/components/parameters/Version"}));
    }
    let mut ops = Map::new();
    ops.insert(
        "get".into(),
        json!({
            "operationId": format!("read{tag}One"), "summary": format!("Read one {} item", c.name), "tags": [tag],
            "parameters": read_params,
            "responses": {"200": data_response(item.clone()), "default": error_ref()},
        }),
    );
    if !c.read_only {
        ops.insert(
            "patch".into(),
            json!({
                "operationId": format!("update{tag}One"), "summary": format!("Update one {} item", c.name), "tags": [tag],
                "parameters": [id, {"$ref": "#/components/parameters/Fields"}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": item}}},
                "responses": {"200": data_response(item.clone()), "204": no_content(), "default": error_ref()},
            }),
        );
        ops.insert(
            "delete".into(),
            json!({
                "operationId": format!("delete{tag}One"), "summary": format!("Delete one {} item", c.name), "tags": [tag],
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"204": no_content(), "default": error_ref()},
            }),
        );
    }
    Value::Object(ops)
}

/// The query parameters (Directus docs "Global Query Parameters").
fn parameters() -> Value {
    let filter_description = format!(
        "A filter object (JSON), e.g. {{\"status\":{{\"_eq\":\"published\"}}}}. Operators: {}",
        query_language::operators::names_in(query_language::operators::Scope::Everywhere)
    );
    let q =
        |name: &str, description: &str, schema: Value| json!({"name": name, "in": "query", "required": false, "description": description, "schema": schema});
    json!({
        "Fields": {"name": "fields", "in": "query", "required": false, "explode": false, "description": "Field paths to return (`*`, `author.name`, `year(published_at)`)",
                   "schema": {"type": "array", "items": {"type": "string"}}},
        "Filter": {"name": "filter", "in": "query", "required": false, "description": filter_description,
                   "content": {"application/json": {"schema": {"type": "object"}}}},
        "Search": q("search", "Substring search over the root item's text fields", json!({"type": "string"})),
        "Sort": {"name": "sort", "in": "query", "required": false, "explode": false, "description": "Field paths, `-` for descending",
                 "schema": {"type": "array", "items": {"type": "string"}}},
        "Limit": q("limit", "Most items to return (default 100; -1: the largest allowed)", json!({"type": "integer"})),
        "Offset": q("offset", "Items to skip", json!({"type": "integer"})),
        "Page": q("page", "1-indexed page of `limit` items", json!({"type": "integer"})),
        "Meta": q("meta", "`total_count`, `filter_count` or `*`", json!({"type": "string"})),
        "Version": q("version", "Key of a content version", json!({"type": "string"})),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdapi_proto::v1 as pb;

    #[test]
    fn names_and_shapes_follow_directus() {
        assert_eq!(schema_name("articles_tags"), "ItemsArticlesTags");
        assert_eq!(schema_name("directus_users"), "Users");
        let field = |name: &str, ty: pb::FieldType| pb::Field { name: name.into(), r#type: ty as i32, ..Default::default() };
        let author = pb::Field {
            relation: Some(pb::field::Relation::M2o(pb::ManyToOne { related_collection: "authors".into(), related_field: "id".into(), ..Default::default() })),
            ..field("author", pb::FieldType::Integer)
        };
        let snapshot = pb::SchemaSnapshot {
            version: 1,
            collections: vec![
                pb::Collection {
                    name: "articles".into(),
                    primary_key: vec!["id".into()],
                    fields: vec![field("id", pb::FieldType::Integer), field("views", pb::FieldType::BigInteger), author],
                    ..Default::default()
                },
                pb::Collection { name: "settings".into(), singleton: true, fields: vec![field("id", pb::FieldType::Integer)], ..Default::default() },
                pb::Collection { name: "directus_versions".into(), fields: vec![field("id", pb::FieldType::Uuid)], ..Default::default() },
            ],
            relations: vec![],
        };
        let doc = document(&snapshot, None);
        let paths = doc["paths"].as_object().map(|p| p.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
        assert!(paths.contains(&"/items/articles/{id}".to_owned()) && paths.contains(&"/items/settings".to_owned()), "{paths:?}");
        assert!(!paths.iter().any(|p| p.contains("versions") || p == "/items/settings/{id}"), "{paths:?}");
        for p in ["/collections/{id}", "/fields/{collection}/{field}", "/relations/{collection}/{field}"] {
            assert!(paths.contains(&p.to_owned()), "{p}: {paths:?}");
        }
        assert_eq!(doc["paths"]["/fields/{collection}"]["post"]["operationId"], "createField");
        let props = &doc["components"]["schemas"]["ItemsArticles"]["properties"];
        assert_eq!(props["views"]["type"], "string", "bigint is written as a string");
        assert!(props["author"].get("type").is_none(), "a relation is a key or an object");
    }
}
