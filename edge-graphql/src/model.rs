//! The part of the core's schema snapshot that the GraphQL API is generated from, with the
//! naming rule applied: what can be exposed, under which names.
//!
//! Naming rule (docs/graphql.md: invalid names are skipped, never fatal):
//! - A GraphQL name matches `[_A-Za-z][_0-9A-Za-z]*` and does not start with `__`. A collection
//!   or field whose name does not is left out of the GraphQL API (REST still serves it).
//! - A collection is also left out when one of the names generated for it (its types
//!   `<c>`, `<c>_filter`, `<c>_aggregated`..., its root fields `<c>_by_id`...) is already taken
//!   by a built-in type or by a collection earlier in name order.
//! - A relation to a collection that is left out is served as its plain key (M2O) or not at all
//!   (O2M); a Many-to-Any lists only the collections that are exposed.
//! - A field `<f>_func` is generated for date, time, JSON, array and O2M fields unless the
//!   collection has a real field of that name.
//! - Enum labels (e.g. Pagila's `PG-13`) are values of `String` fields, so any label works.

use cdapi_proto::v1::field::Relation;
use cdapi_proto::v1::{FieldType, SchemaSnapshot};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The GraphQL view of one snapshot.
#[derive(Debug, Default)]
pub struct Model {
    /// The snapshot's version.
    pub version: u64,
    /// Exposed collections by name (name order).
    pub collections: BTreeMap<String, Collection>,
    /// Collections left out, with why (logged at build).
    pub skipped: Vec<(String, String)>,
}

/// One exposed collection.
#[derive(Debug)]
pub struct Collection {
    /// Collection name = its GraphQL object type name.
    pub name: String,
    /// A system collection (`directus_users`...): its root fields are on `/graphql/system`,
    /// named without the prefix (`users`, `users_by_id`...); user collections' are on
    /// `/graphql`. Both endpoints have every type, so relations cross between them.
    pub system: bool,
    /// Primary key fields (empty: no `_by_id`, no updates or deletes by id).
    pub primary_key: Vec<String>,
    /// One item only.
    pub singleton: bool,
    /// A view: no mutations.
    pub read_only: bool,
    /// Exposed fields in snapshot order.
    pub fields: Vec<Field>,
    index: HashMap<String, usize>,
}

impl Collection {
    /// A field by name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.index.get(name).map(|&i| &self.fields[i])
    }

    /// The single primary key field, if the key has exactly one field.
    pub fn single_key(&self) -> Option<&Field> {
        match self.primary_key.as_slice() {
            [k] => self.field(k),
            _ => None,
        }
    }

    /// The base of its root-field names: the name, without `directus_` for a system
    /// collection (`users_by_id`, `create_users_item`, as Directus names them).
    pub fn root_name(&self) -> &str {
        if self.system { self.name.strip_prefix(SYSTEM_PREFIX).unwrap_or(&self.name) } else { &self.name }
    }

    /// Whether the collection has a field `<name>_func` generated for `name`.
    pub fn function_base<'a>(&'a self, key: &str) -> Option<&'a Field> {
        let base = key.strip_suffix("_func")?;
        if self.field(key).is_some() {
            return None;
        }
        self.field(base).filter(|f| f.functions().is_some())
    }
}

/// One exposed field.
#[derive(Debug, Clone)]
pub struct Field {
    /// Field name (valid GraphQL name).
    pub name: String,
    /// What it holds.
    pub kind: FieldKind,
    /// Part of the primary key.
    pub primary_key: bool,
}

/// What a field holds, as GraphQL sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// A column value.
    Scalar(Scalar),
    /// Many-to-One: the related item of `related` (an object).
    M2O {
        /// The related collection.
        related: String,
    },
    /// One-to-Many (M2M through its junction): a list of items of `related`.
    O2M {
        /// The related collection.
        related: String,
    },
    /// Many-to-Any: an item of one of `allowed`, named by the row's `collection_field`.
    M2A {
        /// The column naming the item's collection.
        collection_field: String,
        /// Exposed collections the item may belong to (at least one).
        allowed: Vec<String>,
    },
}

/// Scalar kinds, mapped from the core's field types (docs/graphql.md; Directus docs "GraphQL").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    /// integer → `Int`.
    Int,
    /// bigInteger → `GraphQLBigInt` (a string, as JavaScript numbers cannot hold it).
    BigInt,
    /// float, decimal → `Float`.
    Float,
    /// string, text, time, binary → `String`.
    String,
    /// boolean → `Boolean`.
    Boolean,
    /// json, and types the core cannot name → `JSON`.
    Json,
    /// A single-field primary key → `ID`.
    Id,
    /// date → `Date` (ISO string).
    Date,
    /// dateTime, timestamp → `Date` (ISO string).
    DateTime,
    /// time → `String`.
    Time,
    /// hash → `Hash`.
    Hash,
    /// Arrays of text → `[String]`.
    StringList,
    /// Arrays of whole numbers → `[Int]`.
    IntList,
}

impl Scalar {
    fn from_core(f: &cdapi_proto::v1::Field, single_key: bool) -> Self {
        if single_key {
            return Self::Id;
        }
        match f.r#type() {
            FieldType::Integer => Self::Int,
            FieldType::BigInteger => Self::BigInt,
            FieldType::Float | FieldType::Decimal => Self::Float,
            FieldType::String | FieldType::Text | FieldType::Binary | FieldType::Uuid => Self::String,
            FieldType::Boolean => Self::Boolean,
            FieldType::Date => Self::Date,
            FieldType::DateTime | FieldType::Timestamp => Self::DateTime,
            FieldType::Time => Self::Time,
            FieldType::Hash => Self::Hash,
            FieldType::Csv => match f.item_type() {
                FieldType::String | FieldType::Text => Self::StringList,
                FieldType::Integer => Self::IntList,
                _ => Self::Json,
            },
            FieldType::Json | FieldType::Alias | FieldType::Unknown => Self::Json,
        }
    }

    /// Numeric: offered to `sum`, `avg`, `min`, `max` of `<c>_aggregated`.
    pub fn is_numeric(self) -> bool {
        matches!(self, Self::Int | Self::BigInt | Self::Float)
    }
}

/// Which `<f>_func` object a field gets (and which functions it offers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Functions {
    /// `date_functions`: year month week day weekday.
    Date,
    /// `datetime_functions`: those and hour minute second.
    DateTime,
    /// `time_functions`: hour minute second.
    Time,
    /// `count_functions`: count (JSON arrays, arrays, O2M).
    Count,
}

impl Functions {
    /// The function names, in output order.
    pub fn names(self) -> &'static [&'static str] {
        match self {
            Self::Date => &["year", "month", "week", "day", "weekday"],
            Self::DateTime => &["year", "month", "week", "day", "weekday", "hour", "minute", "second"],
            Self::Time => &["hour", "minute", "second"],
            Self::Count => &["count"],
        }
    }

    /// The output type's name.
    pub fn type_name(self) -> &'static str {
        match self {
            Self::Date => "date_functions",
            Self::DateTime => "datetime_functions",
            Self::Time => "time_functions",
            Self::Count => "count_functions",
        }
    }

    /// The filter input's name.
    pub fn filter_type_name(self) -> &'static str {
        match self {
            Self::Date => "date_function_filter_operators",
            Self::DateTime => "datetime_function_filter_operators",
            Self::Time => "time_function_filter_operators",
            Self::Count => "count_function_filter_operators",
        }
    }
}

impl Field {
    /// The functions `<name>_func` offers, if any.
    pub fn functions(&self) -> Option<Functions> {
        match &self.kind {
            FieldKind::Scalar(Scalar::Date) => Some(Functions::Date),
            FieldKind::Scalar(Scalar::DateTime) => Some(Functions::DateTime),
            FieldKind::Scalar(Scalar::Time) => Some(Functions::Time),
            FieldKind::Scalar(Scalar::Json | Scalar::StringList | Scalar::IntList) | FieldKind::O2M { .. } => Some(Functions::Count),
            _ => None,
        }
    }
}

/// Whether `name` is a valid GraphQL name that is not reserved for introspection.
pub fn is_graphql_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    first_ok && chars.all(|c| c == '_' || c.is_ascii_alphanumeric()) && !name.starts_with("__")
}

/// Type names every schema defines itself (scalars, operator inputs, shared objects).
pub const BUILT_IN_TYPES: &[&str] = &[
    "Query",
    "Mutation",
    "Subscription",
    "String",
    "Int",
    "Float",
    "Boolean",
    "ID",
    "JSON",
    "Date",
    "Hash",
    "GraphQLBigInt",
    "GraphQLStringOrFloat",
    "delete_one",
    "delete_many",
    "string_filter_operators",
    "number_filter_operators",
    "big_int_filter_operators",
    "date_filter_operators",
    "boolean_filter_operators",
    "id_filter_operators",
    "hash_filter_operators",
    "date_functions",
    "datetime_functions",
    "time_functions",
    "count_functions",
    "date_function_filter_operators",
    "datetime_function_filter_operators",
    "time_function_filter_operators",
    "count_function_filter_operators",
    "auth_tokens",
    "auth_mode",
    "server_info",
];

/// The users collection (Directus's name): `users_me` and `update_users_me` read and write the
/// caller's own row of it.
pub const USERS: &str = "directus_users";

/// Name prefix of the system collections.
const SYSTEM_PREFIX: &str = "directus_";

/// Root field names of `/graphql/system` that collections must not take.
const SYSTEM_ROOT_FIELDS: &[&str] = &[
    "users_me",
    "update_users_me",
    "server_ping",
    "server_health",
    "auth_login",
    "auth_refresh",
    "auth_logout",
    "auth_password_request",
    "auth_password_reset",
];

/// The type names (from `c`) and the root-field names (from `root`) generated for a collection.
fn generated_names(c: &str, root: &str) -> (Vec<String>, Vec<String>) {
    let types = ["", "_version", "_filter", "_quantifier_filter", "_aggregated", "_aggregated_count", "_aggregated_fields"]
        .iter()
        .map(|s| format!("{c}{s}"))
        .chain(["create_{}_input", "update_{}_input"].iter().map(|p| p.replace("{}", c)))
        .collect();
    let roots = [
        "{}",
        "{}_by_id",
        "{}_by_version",
        "{}_aggregated",
        "create_{}_item",
        "create_{}_items",
        "update_{}_item",
        "update_{}_items",
        "update_{}_batch",
        "delete_{}_item",
        "delete_{}_items",
    ]
    .iter()
    .map(|p| p.replace("{}", root))
    .collect();
    (types, roots)
}

/// The type names schema management ([`crate::schema_management`]) defines (no collection may
/// take them).
pub const SCHEMA_TYPE_NAMES: &[&str] = &[
    "directus_collections",
    "directus_collections_meta",
    "directus_collections_schema",
    "directus_fields",
    "directus_fields_meta",
    "directus_fields_schema",
    "directus_relations",
    "directus_relations_meta",
    "directus_relations_schema",
    "write_directus_collections",
    "write_directus_collections_meta",
    "write_directus_collections_schema",
    "write_directus_fields",
    "write_directus_fields_meta",
    "write_directus_fields_schema",
    "write_directus_relations",
    "write_directus_relations_meta",
    "write_directus_relations_schema",
    "write_directus_collections_input",
    "write_directus_collections_meta_input",
    "write_directus_collections_schema_input",
    "write_directus_fields_input",
    "write_directus_fields_meta_input",
    "write_directus_fields_schema_input",
    "write_directus_relations_input",
    "write_directus_relations_meta_input",
    "write_directus_relations_schema_input",
    "delete_collection",
    "delete_field",
    "delete_relation",
];

/// The root field names schema management adds to `/graphql/system` (no system collection may
/// take them).
pub const SCHEMA_ROOT_FIELDS: &[&str] = &[
    "collections",
    "collections_by_name",
    "fields",
    "fields_in_collection",
    "fields_by_name",
    "relations",
    "relations_in_collection",
    "relations_by_name",
    "create_collections_item",
    "update_collections_item",
    "delete_collections_item",
    "create_fields_item",
    "update_fields_item",
    "delete_fields_item",
    "create_relations_item",
    "update_relations_item",
    "delete_relations_item",
];

impl Model {
    /// Applies the naming rule (module docs) to a snapshot.
    pub fn from_snapshot(snapshot: &SchemaSnapshot) -> Self {
        // Type names are shared by both endpoints; root fields are per endpoint, and user
        // collections keep one set for both (as they always had).
        // Schema management's root fields are on `/graphql/system` only: user collections may
        // still be called `fields` or `relations`.
        let builtin = BUILT_IN_TYPES.iter().chain(SCHEMA_TYPE_NAMES);
        let mut taken: HashSet<String> = builtin.chain(SYSTEM_ROOT_FIELDS).map(|s| (*s).to_owned()).collect();
        let mut system_roots: HashSet<String> = SYSTEM_ROOT_FIELDS.iter().chain(SCHEMA_ROOT_FIELDS).map(|s| (*s).to_owned()).collect();
        let mut skipped = Vec::new();
        let mut exposed = HashSet::new();
        let mut sorted: Vec<_> = snapshot.collections.iter().collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        for c in &sorted {
            if !is_graphql_name(&c.name) {
                skipped.push((c.name.clone(), "not a valid GraphQL name".to_owned()));
                continue;
            }
            let system = c.name.starts_with(SYSTEM_PREFIX);
            let (types, roots) = generated_names(&c.name, c.name.strip_prefix(SYSTEM_PREFIX).unwrap_or(&c.name));
            let clash = types
                .iter()
                .find(|n| taken.contains(*n))
                .or_else(|| roots.iter().find(|n| if system { system_roots.contains(*n) } else { taken.contains(*n) }));
            if let Some(clash) = clash {
                skipped.push((c.name.clone(), format!("the generated name {clash:?} is already taken")));
                continue;
            }
            taken.extend(types);
            if system {
                system_roots.extend(roots)
            } else {
                taken.extend(roots)
            }
            exposed.insert(c.name.clone());
        }
        let mut collections = BTreeMap::new();
        for c in sorted.into_iter().filter(|c| exposed.contains(&c.name)) {
            let single_key = c.primary_key.len() == 1;
            let fields: Vec<Field> = c
                .fields
                .iter()
                .filter(|f| is_graphql_name(&f.name))
                .filter_map(|f| {
                    let scalar = || FieldKind::Scalar(Scalar::from_core(f, single_key && f.primary_key));
                    let kind = match &f.relation {
                        Some(Relation::M2o(r)) if exposed.contains(&r.related_collection) => FieldKind::M2O { related: r.related_collection.clone() },
                        Some(Relation::M2o(_)) => scalar(),
                        Some(Relation::O2m(r)) if exposed.contains(&r.related_collection) => FieldKind::O2M { related: r.related_collection.clone() },
                        Some(Relation::M2a(r)) => {
                            let allowed: Vec<String> = r.allowed_collections.iter().filter(|c| exposed.contains(*c)).cloned().collect();
                            if allowed.is_empty() { scalar() } else { FieldKind::M2A { collection_field: r.collection_field.clone(), allowed } }
                        }
                        _ if f.r#type() == FieldType::Alias => return None,
                        _ => scalar(),
                    };
                    Some(Field { name: f.name.clone(), kind, primary_key: f.primary_key })
                })
                .collect();
            if fields.is_empty() {
                skipped.push((c.name.clone(), "no field has a valid GraphQL name".to_owned()));
                continue;
            }
            let index = fields.iter().enumerate().map(|(i, f)| (f.name.clone(), i)).collect();
            collections.insert(
                c.name.clone(),
                Collection {
                    name: c.name.clone(),
                    system: c.name.starts_with(SYSTEM_PREFIX),
                    primary_key: c.primary_key.clone(),
                    singleton: c.singleton,
                    read_only: c.read_only,
                    fields,
                    index,
                },
            );
        }
        Self { version: snapshot.version, collections, skipped }
    }

    /// A collection by name.
    pub fn collection(&self, name: &str) -> Option<&Collection> {
        self.collections.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdapi_proto::v1 as pb;

    fn field(name: &str, ty: pb::FieldType, pk: bool) -> pb::Field {
        pb::Field { name: name.into(), r#type: ty as i32, primary_key: pk, ..Default::default() }
    }

    #[test]
    fn names_follow_the_graphql_grammar() {
        for ok in ["film", "_x", "a1_b"] {
            assert!(is_graphql_name(ok), "{ok}");
        }
        for bad in ["", "1a", "PG-13", "a b", "__typename", "ä"] {
            assert!(!is_graphql_name(bad), "{bad}");
        }
    }

    #[test]
    fn invalid_and_clashing_collections_are_skipped_not_fatal() {
        let snapshot = pb::SchemaSnapshot {
            version: 3,
            collections: vec![
                pb::Collection {
                    name: "a".into(),
                    primary_key: vec!["id".into()],
                    fields: vec![field("id", pb::FieldType::Integer, true), field("bad-name", pb::FieldType::String, false)],
                    ..Default::default()
                },
                pb::Collection { name: "a_by_id".into(), fields: vec![field("x", pb::FieldType::String, false)], ..Default::default() },
                pb::Collection { name: "my-table".into(), fields: vec![field("x", pb::FieldType::String, false)], ..Default::default() },
                pb::Collection { name: "JSON".into(), fields: vec![field("x", pb::FieldType::String, false)], ..Default::default() },
            ],
            relations: vec![],
        };
        let m = Model::from_snapshot(&snapshot);
        assert_eq!(m.collections.keys().collect::<Vec<_>>(), ["a"]);
        let a = &m.collections["a"];
        assert_eq!(a.fields.len(), 1);
        assert_eq!(a.fields[0].kind, FieldKind::Scalar(Scalar::Id));
        let skipped: Vec<&str> = m.skipped.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(skipped, ["JSON", "a_by_id", "my-table"]);
    }
}
