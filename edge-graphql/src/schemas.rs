//! The two executable schemas (`/graphql`: user collections; `/graphql/system`: the `auth_*`
//! mutations), built from one type graph per snapshot version and swapped in atomically, so a
//! request never waits for a build and a build happens once per schema change, not per request.
//! Which build a request uses, and when builds happen: [`crate::cache`].

use crate::direct::Validated;
use crate::fast::FastRoots;
use crate::model::Model;
use crate::types::Types;
use crate::{Backend, root, schema_management, system};
use async_graphql::dynamic::{Object, Schema, SchemaError};
use std::sync::Arc;

/// Query limits applied to both schemas.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Deepest nesting of selections.
    pub depth: usize,
    /// Most fields in one operation.
    pub complexity: usize,
    /// Whether introspection is answered.
    pub introspection: bool,
    /// Whether item reads take the fast path ([`crate::fast`]).
    pub fast_path: bool,
}

impl From<&crate::config::Settings> for Limits {
    fn from(s: &crate::config::Settings) -> Self {
        Self { depth: s.depth_limit, complexity: s.complexity_limit, introspection: s.introspection, fast_path: s.fast_path }
    }
}

/// Both schemas of one snapshot version.
pub struct Built {
    /// The snapshot version they were built from.
    pub version: u64,
    /// A hash of the snapshot's content (version left out): what decides whether a snapshot
    /// needs a new build. Versions alone cannot, as they restart with each core process and
    /// differ between core replicas.
    pub fingerprint: u64,
    /// The model (also schema data, for resolvers).
    pub model: Arc<Model>,
    /// `/graphql`.
    pub user: Schema,
    /// `/graphql/system`.
    pub system: Schema,
    /// The root fields `/graphql` answers by the fast path (`None` when it is off).
    pub fast: Option<Arc<FastRoots>>,
    /// The requests `/graphql` has validated against this build ([`crate::direct`]).
    pub validated: Validated,
}

/// Which endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/graphql`.
    User,
    /// `/graphql/system`.
    System,
}

/// Builds the schema of `endpoint` for `model`, with the fast path over `fast` on `/graphql`
/// when given. Errors: a type graph async-graphql refuses
/// (a bug in the generator: names are checked beforehand).
pub fn build_one(model: &Arc<Model>, backend: &Arc<Backend>, limits: Limits, endpoint: Endpoint, fast: Option<&Arc<FastRoots>>) -> Result<Schema, SchemaError> {
    let types = Types::build(model, endpoint == Endpoint::System);
    let (query, mutation) = match endpoint {
        Endpoint::User => {
            let mut query = root::query_fields(model, false, Object::new("Query"));
            if !model.collections.values().any(|c| !c.system) {
                // A Query type needs a field; an empty database still gets a valid schema.
                query = system::ping_field(query);
            }
            let (mutation, any) = root::mutation_fields(model, false, Object::new("Mutation"));
            (query, any.then_some(mutation))
        }
        Endpoint::System => {
            let query = root::query_fields(model, true, schema_management::query_fields(system::query_fields(Object::new("Query"))));
            // The auth_* mutations and the schema changes are always there.
            let mutation = schema_management::mutation_fields(system::mutation_fields(Object::new("Mutation")));
            let (mutation, _) = root::mutation_fields(model, true, mutation);
            (query, Some(mutation))
        }
    };
    // Subscriptions on the user endpoint, as Directus (its system scope has none).
    let subscription = if endpoint == Endpoint::User { crate::subscriptions::subscription_type(model) } else { None };
    let mut builder =
        Schema::build("Query", mutation.as_ref().map(|_| "Mutation"), subscription.as_ref().map(|(s, _)| s.type_name().to_owned()).as_deref()).register(query);
    if let Some(m) = mutation {
        builder = builder.register(m);
    }
    if let Some((root, types)) = subscription {
        builder = builder.register(root);
        for t in types {
            builder = builder.register(t);
        }
    }
    for t in types.all {
        builder = builder.register(t);
    }
    if endpoint == Endpoint::System {
        for t in schema_management::types() {
            builder = builder.register(t);
        }
    }
    builder = builder.data(model.clone()).data(backend.clone()).limit_depth(limits.depth).limit_complexity(limits.complexity);
    if !limits.introspection {
        builder = builder.disable_introspection();
    }
    if let Some(roots) = fast.filter(|_| endpoint == Endpoint::User) {
        builder = builder.extension(crate::fast::FastReads::new(roots.clone()));
    }
    builder.finish()
}

/// Builds both schemas for `model`. Errors: as [`build_one`].
pub fn build(model: Model, fingerprint: u64, backend: &Arc<Backend>, limits: Limits) -> Result<Built, SchemaError> {
    let model = Arc::new(model);
    let fast = limits.fast_path.then(|| Arc::new(FastRoots::new(&model)));
    Ok(Built {
        version: model.version,
        fingerprint,
        user: build_one(&model, backend, limits, Endpoint::User, fast.as_ref())?,
        system: build_one(&model, backend, limits, Endpoint::System, None)?,
        model,
        fast,
        validated: Validated::default(),
    })
}

/// A hash of a snapshot's content, its version left out.
pub fn fingerprint(snapshot: &cdapi_proto::v1::SchemaSnapshot) -> u64 {
    use std::hash::{Hash, Hasher};
    let content = cdapi_proto::v1::SchemaSnapshot { version: 0, ..snapshot.clone() };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    prost::Message::encode_to_vec(&content).hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdapi_proto::v1 as pb;

    fn field(name: &str, ty: pb::FieldType) -> pb::Field {
        pb::Field { name: name.into(), r#type: ty as i32, ..Default::default() }
    }

    fn related(f: pb::Field, relation: pb::field::Relation) -> pb::Field {
        pb::Field { relation: Some(relation), ..f }
    }

    /// A schema whose names collide with generated ones still builds; versions alone do not
    /// decide a rebuild.
    #[tokio::test]
    async fn awkward_names_never_fail_the_build() {
        let snapshot = pb::SchemaSnapshot {
            version: 1,
            collections: vec![
                pb::Collection {
                    name: "things".into(),
                    primary_key: vec!["id".into()],
                    fields: vec![
                        related(
                            field("id", pb::FieldType::Integer),
                            pb::field::Relation::M2o(pb::ManyToOne { related_collection: "parents".into(), related_field: "id".into(), ..Default::default() }),
                        ),
                        field("_and", pb::FieldType::String),
                        field("_some", pb::FieldType::String),
                        field("made", pb::FieldType::Date),
                        field("made_func", pb::FieldType::String),
                        field("item__headings", pb::FieldType::String),
                        related(
                            field("item", pb::FieldType::String),
                            pb::field::Relation::M2a(pb::ManyToAny { collection_field: "collection".into(), allowed_collections: vec!["headings".into()] }),
                        ),
                        field("collection", pb::FieldType::String),
                    ],
                    ..Default::default()
                },
                pb::Collection {
                    name: "headings".into(),
                    primary_key: vec!["id".into()],
                    fields: vec![field("id", pb::FieldType::Integer)],
                    ..Default::default()
                },
                pb::Collection {
                    name: "parents".into(),
                    primary_key: vec!["id".into()],
                    fields: vec![
                        field("id", pb::FieldType::Integer),
                        related(
                            field("things", pb::FieldType::Alias),
                            pb::field::Relation::O2m(pb::OneToMany { related_collection: "things".into(), related_field: "id".into(), ..Default::default() }),
                        ),
                    ],
                    ..Default::default()
                },
            ],
            relations: vec![
                pb::Relation {
                    kind: pb::RelationKind::M2a as i32,
                    many_collection: "things".into(),
                    many_field: "item".into(),
                    one_collection_field: "collection".into(),
                    one_allowed_collections: vec!["headings".into()],
                    ..Default::default()
                },
                pb::Relation {
                    kind: pb::RelationKind::M2o as i32,
                    many_collection: "things".into(),
                    many_field: "id".into(),
                    one_collection: "parents".into(),
                    one_field: "things".into(),
                    ..Default::default()
                },
            ],
        };
        let nowhere = edge_http::balance::Balanced::new("http://127.0.0.1:1", None, std::time::Duration::from_secs(60), Default::default()).expect("a channel");
        let backend = Arc::new(Backend {
            items: cdapi_proto::v1::items_service_client::ItemsServiceClient::new(nowhere.clone()),
            auth: cdapi_proto::v1::auth_service_client::AuthServiceClient::new(nowhere.clone()),
            schema: cdapi_proto::v1::schema_service_client::SchemaServiceClient::new(nowhere.clone()),
            files: cdapi_proto::v1::files_service_client::FilesServiceClient::new(nowhere.clone()),
            subscriptions: cdapi_proto::v1::items_service_client::ItemsServiceClient::new(nowhere.clone()),
            cookies: edge_http::cookies::CookieSettings::from_env().expect("cookie settings"),
        });
        let limits = Limits { depth: 20, complexity: 1000, introspection: true, fast_path: true };
        let built = build(Model::from_snapshot(&snapshot), fingerprint(&snapshot), &backend, limits).expect("the schema builds");
        let sdl = built.user.sdl();
        assert!(sdl.contains("input things_filter"), "{sdl}");
        assert!(sdl.contains("made_func: String"), "the real field wins over the generated one: {sdl}");
        let moved = pb::SchemaSnapshot { version: 7, ..snapshot.clone() };
        assert_eq!(fingerprint(&moved), fingerprint(&snapshot));
        let changed = pb::SchemaSnapshot { collections: snapshot.collections[1..].to_vec(), ..snapshot.clone() };
        assert_ne!(fingerprint(&changed), fingerprint(&moved));
        // GRAPHQL_INTROSPECTION=false: `__schema` is refused, the rest of the schema is not.
        let introspect = "{ __schema { queryType { name } } }";
        let open = built.user.execute(introspect).await;
        assert!(open.errors.is_empty(), "{:?}", open.errors);
        let closed = build(Model::from_snapshot(&snapshot), 0, &backend, Limits { introspection: false, ..limits }).expect("builds");
        let refused = closed.user.execute(introspect).await;
        assert!(!refused.data.to_string().contains("Query"), "{}", refused.data);
    }
}
